"""A session cannot take what the kernel counts per user from a session that runs meanwhile.

The kernel counts some things per user, host-wide, whatever namespace the process is in:
epoll watches (``fs.epoll.max_user_watches``, 5,491,511 here: about 1 GiB of kernel memory,
within a session's 2 GiB memory limit, made by 24 processes of 480 descriptors in 3 s),
inotify instances (``fs.inotify.max_user_instances``, 128), keys (``kernel.keys.maxkeys``,
200), pipe buffer pages (``fs.pipe-user-pages-soft``, 16,384: 64 pipes grown to 1 MiB, no
memory needed) and POSIX message queue bytes (``RLIMIT_MSGQUEUE``, 819,200: ten queues;
charged to the user's count above the session's user namespace).

Two ``record`` runs at once (real bwrap, separate batches): the hog's stand-in takes each of
them and holds them until the test tells it to stop (a file the test writes into its
workspace, at most 30 s); the victim's, started while the hog holds them, tries one of each
and writes the answers to its workspace.

Rule (docs/session-reach.md "Identity and processes"): a session cannot take from a
concurrent session what it needs to run: each session of a root runner runs as a session
user of its own, leased from the host's pool (`sandbox.users._lease`), so the kernel's per-user
counts are per session (no per-session cap could be set for them: the sysctls are
host-wide). The victim gets every one.

Seen red with ``HW_WEAKEN=no-uid-pool`` (both sessions run as ``headwater-session``): the
victim's ``epoll_ctl`` fails ENOSPC (a node harness, whose event loop registers every
descriptor it uses, cannot run), its ``inotify_init1`` EMFILE, its ``add_key`` EDQUOT, its
``mq_open`` EMFILE, and its new pipe holds two pages (8 KiB) instead of 16.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from sandbox._scratch import sweep_killed_runners
from tests.integration import kit
from tests.integration.test_record_standins import (
    PROBE,
    SESSION,
    STANDIN_WORKSPACE,
    finals,
    make_corpus,
    record,
)

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

HOG = r'''#!/usr/bin/python3
"""The hog of tests/integration/test_shared_counts_attack.py (its docstring says what)."""
import ctypes, json, os, select, signal, sys, time
STREAM = b"STREAM_BYTES"
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (hog)"); sys.exit(0)
HOLD_MAX_S = 30.0
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def released(deadline):
    return os.path.exists("release") or time.monotonic() > deadline


def epoll_hog(w, deadline):
    signal.alarm(int(HOLD_MAX_S) + 10)
    r0, _ = os.pipe()
    fds = [os.dup(r0) for _ in range(480)]
    eps, n = [], 0
    try:
        for _ in range(500):
            ep = select.epoll()
            eps.append(ep)
            for fd in fds:
                ep.register(fd, select.EPOLLIN)
                n += 1
    except OSError:
        pass
    os.write(w, b"%d\n" % n)
    while not released(deadline):
        time.sleep(0.1)
    os._exit(0)


deadline = time.monotonic() + HOLD_MAX_S
held = {}
r, w = os.pipe()
kids = []
for _ in range(24):
    pid = os.fork()
    if pid == 0:
        epoll_hog(w, deadline)
    kids.append(pid)
lines = os.fdopen(r)
held["epoll_watches"] = sum(int(lines.readline()) for _ in kids)
inotify = []
while True:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    inotify.append(fd)
held["inotify_instances"] = len(inotify)
keys = []
while True:
    k = libc.syscall(ctypes.c_long(248), b"user", b"hog%d" % len(keys), b"x" * 10,
                     ctypes.c_size_t(10), ctypes.c_int(-2))  # add_key(..., process keyring)
    if k < 0:
        break
    keys.append(k)
held["keys"] = len(keys)
pipes = []
for _ in range(64):
    pr, pw = os.pipe()
    pipes += [pr, pw]
    try:
        import fcntl
        fcntl.fcntl(pr, 1031, 1 << 20)  # F_SETPIPE_SZ
    except OSError:
        break
for _ in range(32):  # past the soft limit with pipes of the default size
    pipes += os.pipe()
held["pipes"] = len(pipes) // 2
attr = (ctypes.c_long * 8)(0, 10, 8192, 0)
queues = 0
while libc.mq_open(b"/hog%d" % queues, os.O_CREAT | os.O_RDWR, 0o600, attr) >= 0:
    queues += 1
held["mqueues"] = queues
with open("holding.json", "w") as f:
    json.dump(held, f)
while not released(deadline):
    time.sleep(0.1)
for k in keys:
    libc.syscall(ctypes.c_long(250), ctypes.c_int(21), ctypes.c_long(k))  # KEYCTL_INVALIDATE
for q in range(queues):
    libc.mq_unlink(b"/hog%d" % q)
for k in kids:
    os.waitpid(k, 0)
view = memoryview(STREAM)
while view:
    view = view[os.write(1, view):]
'''

VICTIM = r'''#!/usr/bin/python3
"""The victim of tests/integration/test_shared_counts_attack.py: one of each, answers kept."""
import ctypes, fcntl, json, os, select, sys
STREAM = b"STREAM_BYTES"
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (victim)"); sys.exit(0)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
seen = {}
r, w = os.pipe()
try:
    select.epoll().register(r, select.EPOLLIN)
    seen["epoll_ctl"] = 0
except OSError as exc:
    seen["epoll_ctl"] = exc.errno
seen["inotify_init1"] = 0 if libc.inotify_init1(0) >= 0 else ctypes.get_errno()
k = libc.syscall(ctypes.c_long(248), b"user", b"victim", b"x", ctypes.c_size_t(1),
                 ctypes.c_int(-2))
seen["add_key"] = 0 if k >= 0 else ctypes.get_errno()
attr = (ctypes.c_long * 8)(0, 10, 8192, 0)
q = libc.mq_open(b"/victim", os.O_CREAT | os.O_RDWR, 0o600, attr)
seen["mq_open"] = 0 if q >= 0 else ctypes.get_errno()
seen["pipe_bytes"] = fcntl.fcntl(w, 1032)  # F_GETPIPE_SZ
with open("victim.json", "w") as f:
    json.dump(seen, f)
os.write(1, STREAM)
'''


def named(seen: dict[str, int]) -> dict[str, str | int]:
    return {k: errno.errorcode.get(v, v) if k != "pipe_bytes" else v for k, v in seen.items()}


def _harness(path: Path, text: str) -> Path:
    path.parent.mkdir()
    path.write_text(text.replace('b"STREAM_BYTES"', repr(SESSION)))
    path.chmod(0o755)
    return path


def test_a_session_cannot_starve_a_concurrent_one_of_per_user_counts(bwrap: str) -> None:
    # under /var/tmp: a pytest starting elsewhere chmods /tmp/pytest-of-root 0700, which masks
    # the session user's search ACL entry there (a concurrent session then cannot start)
    with kit.host_dir("hw-counts-") as tmp_path:
        _starve(tmp_path)


def _starve(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    hog = _harness(tmp_path / "hog" / "claude", HOG)
    victim = _harness(tmp_path / "victim" / "claude", VICTIM)
    env = {**os.environ, "HW_STANDIN_KEY": "sk-standin-not-a-secret"}
    hog_batch = tmp_path / "hb"
    hog_run = subprocess.Popen(
        [sys.executable, "-m", "campaign", "record", "--corpus", str(corpus), "--probe", PROBE,
         "--arm", "present", "--batch-dir", str(hog_batch), "--harness", str(hog),
         "--provider-url", "http://127.0.0.1:9", "--api-key-env", "HW_STANDIN_KEY",
         "--post-result-grace", "2", "--workspace-path", STANDIN_WORKSPACE],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        holding = kit.wait_for(
            lambda: next(hog_batch.glob(f"sessions/present/{PROBE}/*/workspace/holding.json"),
                         None), timeout_s=60, what="the hog holding")  # fmt: skip
        time.sleep(0.2)
        held = json.loads(holding.read_text())
        batch = tmp_path / "vb"
        run = record(corpus, batch, victim, "--post-result-grace", "2")
        (holding.parent / "release").write_text("")
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        workspace = batch / "sessions" / "present" / PROBE / final["session"] / "workspace"
        seen = json.loads((workspace / "victim.json").read_text())
        hog_out, _ = hog_run.communicate(timeout=60)
        assert hog_run.returncode == 0, hog_out
        # what the victim needs, whatever a concurrent session holds (the hog held: ``held``)
        assert seen == {"epoll_ctl": 0, "inotify_init1": 0, "add_key": 0, "mq_open": 0,
                        "pipe_bytes": 65536}, (named(seen), held)  # fmt: skip
    finally:
        for release in hog_batch.glob(f"sessions/present/{PROBE}/*/workspace"):
            (release / "release").write_text("")
        if hog_run.poll() is None:
            hog_run.terminate()
        hog_run.communicate(timeout=60)
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
        sweep_killed_runners()
