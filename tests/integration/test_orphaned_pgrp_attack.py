"""A session cannot have the kernel hang up its lifeline watcher (an orphaned process group).

The watcher is outside the session's Landlock domain, so the session cannot signal it
(EPERM, ABI 6+). But the watcher is a child of pid 2, which becomes the harness, and it
never executes anything (a forked ``sh`` running ``read`` and ``kill``, builtins), so the
harness may move it into another process group (``setpgid``: the kernel lets a parent move
a child that has not executed, and Landlock has no rule for it). The stand-in (through
``record``, real bwrap) then makes that group orphaned while one of its members is stopped:
it puts the watcher in a group D beside a stopped process, leaves its session
(``setsid``), and lets the group's last member whose parent is in another group of the
same session exit. The kernel then sends SIGHUP and SIGCONT to every member of D
(POSIX's orphaned process group rule), and SIGHUP ends the watcher; the harness, its
parent, reaps it (``waitpid``: killed by signal 1). Seen without the fix (`sandbox._init`
before it): ``setpgid`` succeeds and the watcher is a zombie, killed by SIGHUP.

Rule (docs/session-reach.md "Identity and processes"): the session cannot kill its own
watcher. The fix (`sandbox._init`): the watcher is forked by a subshell that exits at once,
so it is bwrap's pid 1's child, not the harness's (the ``setpgid`` is refused, ESRCH), and it
ignores SIGHUP.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from sandbox._scratch import sweep_killed_runners
from tests.integration import kit
from tests.integration.test_record_standins import PROBE, SESSION, finals, make_corpus, record

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

STANDIN = r'''#!/usr/bin/python3
"""Attack stand-in of tests/integration/test_orphaned_pgrp_attack.py (its docstring says what)."""
import json, os, signal, sys, time
STREAM = b"STREAM_BYTES"
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (orphaned process group)"); sys.exit(0)


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def state(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return [l.split()[1] for l in f if l.startswith("State")][0]
    except OSError:
        return "gone"


me = os.getpid()
watcher = [int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) not in (1, me)
           and b"headwater-init" in cmdline(int(e)) and b"read -r" in cmdline(int(e))][0]
report = {"watcher": watcher}
ready_r, ready_w = os.pipe()
group = os.fork()
if group == 0:  # D: a group of its own, with a stopped member
    os.setpgid(0, 0)
    if os.fork() == 0:
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    os.write(ready_w, b"x")
    while True:
        time.sleep(1)
os.read(ready_r, 1)
time.sleep(0.1)
try:
    os.setpgid(watcher, group)
    report["setpgid"] = 0
except OSError as exc:
    report["setpgid"] = exc.errno
tie = os.fork()  # stays in the session; its child joins D and is D's last tie to it
if tie == 0:
    if os.fork() == 0:
        try:
            os.setpgid(0, group)
        except OSError:
            pass
        time.sleep(0.5)
        os._exit(0)
    os.wait()
    os._exit(0)
time.sleep(0.1)
os.setsid()  # the harness (the watcher's parent) leaves the session: no tie of D through it
os.waitpid(tie, 0)
time.sleep(0.5)
report["watcher_state"] = state(watcher)
try:
    pid, status = os.waitpid(watcher, os.WNOHANG)
    report["watcher_reaped"] = [pid, os.WTERMSIG(status) if pid and os.WIFSIGNALED(status) else 0]
except OSError as exc:
    report["watcher_reaped"] = exc.errno
os.killpg(group, signal.SIGKILL)
with open("attack.json", "w") as f:
    json.dump(report, f)
view = memoryview(STREAM)
while view:
    view = view[os.write(1, view):]
sys.exit(0)
'''


def test_a_session_cannot_have_the_kernel_hang_up_its_watcher(tmp_path: Path, bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(STANDIN.replace('b"STREAM_BYTES"', repr(SESSION)))
    harness.chmod(0o755)
    batch = tmp_path / "b"
    try:
        run = record(corpus, batch, harness, "--post-result-grace", "2")
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        workspace = batch / "sessions" / "present" / PROBE / final["session"] / "workspace"
        report = json.loads((workspace / "attack.json").read_text())
        assert report["watcher_state"] not in ("Z", "gone"), report
        assert report["watcher_reaped"] in ([0, 0], errno.ECHILD), report  # alive, or not ours
        assert report["setpgid"] == errno.ESRCH, report
        assert kit.processes_under(tmp_path) == {}
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
        sweep_killed_runners()
