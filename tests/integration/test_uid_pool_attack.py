"""A session cannot take from the session running beside it what the kernel counts per uid.

The kernel keeps many counts per user and host-wide: inotify instances
(``fs.inotify.max_user_instances``, 128 here) and watches, key quotas,
``RLIMIT_NPROC``, ``RLIMIT_SIGPENDING``, ``RLIMIT_MSGQUEUE``, pipe buffers. When every
session of a root runner ran as the one user ``headwater-session``, a session that took all
128 inotify instances left none to any session of the host running meanwhile (its
``inotify_init1`` failed with EMFILE).

One ``run`` batch under real bwrap, two sessions at once (``--concurrency 3``: a user more
than the batch needs, since on a shared host an older runner's sessions may hold
``headwater-session`` without a lease, and a lease skips a user whose uid still runs a
process). The stand-in of session A calls ``inotify_init1`` until it fails (EMFILE) and holds
every instance it got for `HOLD_S` seconds; session B, `ASK_AFTER_S` seconds into its run,
asks for one. Each writes what it saw, its uid and when (the host's clock, which the
sandbox shares) into its workspace.

Rule (docs/session-reach.md "Identity and processes"; `sandbox.users._lease`): each session runs as
a pool user no other session running at once runs as, so B gets its instance while A holds
all of A's user's.

Seen red with ``HW_WEAKEN=no-uid-pool`` (every lease is ``headwater-session``, at once, as
before the pool): A and B run as uid 999 at once, and B's ``inotify_init1`` fails with
EMFILE while A holds its 128 instances.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from sandbox.users import session_pool
from tests.integration import kit

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0, reason="only a root runner drops to session users"),
]

HOLD_S = 15
"""Seconds A holds its instances: both sessions start within a second or two of each other."""
ASK_AFTER_S = 5
"""Seconds into its run B asks: A has taken every instance by then (it takes milliseconds)."""
HOG, PEER = "UID-HOG-1", "UID-PEER-1"
STANDIN = r'''#!/usr/bin/python3
import ctypes, json, os, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (uid pool attack)"); sys.exit(0)
task = sys.argv[-1]
libc = ctypes.CDLL(None, use_errno=True)
IN_CLOEXEC = 0o2000000
def init1():
    fd = libc.inotify_init1(IN_CLOEXEC)
    return fd, (ctypes.get_errno() if fd < 0 else 0)
if "take every inotify instance" in task:
    held, err, started = [], 0, time.time()
    while len(held) < 100000:
        fd, err = init1()
        if fd < 0:
            break
        held.append(fd)
    took_at = time.time()
    time.sleep(HOLD_S)
    answer = {"took": len(held), "errno": err, "uid": os.getuid(), "from": took_at,
              "until": time.time()}
else:
    time.sleep(ASK_AFTER_S)
    at = time.time()
    fd, err = init1()
    answer = {"fd": fd, "errno": err, "uid": os.getuid(), "at": at}
with open("inotify.json", "w") as f:
    json.dump(answer, f)
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
      "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": json.dumps(answer) + "\nnothing"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''.replace("HOLD_S)", f"{HOLD_S})").replace("ASK_AFTER_S)", f"{ASK_AFTER_S})")


def _answer(batch: Path, probe: str) -> dict[str, float]:
    path = batch / "sessions" / "present" / probe / "s1" / "workspace" / "inotify.json"
    answer: dict[str, float] = json.loads(path.read_text())
    return answer


def test_a_session_holding_its_users_inotify_instances_leaves_the_other_session_its_own(
    bwrap: str,
) -> None:
    tasks = {HOG: "take every inotify instance and hold them.",
             PEER: "ask for one inotify instance."}  # fmt: skip
    with kit.host_dir("hw-uidpool-") as root:
        corpus = kit.write_corpus(root / "corpus", tasks, tools=["Bash"])
        harness = kit.write_harness(root / "claude", STANDIN)
        batch = root / "batch"
        proc = kit.run_scripted(root, corpus, harness, "--concurrency", "3")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        finals = {probe: r for (probe, _), r in kit.finals(batch).items()}
        assert {finals[p]["state"] for p in tasks} == {"recorded"}, finals
        hog, peer = _answer(batch, HOG), _answer(batch, PEER)
        # The attack worked on its own user, and B asked while A held every instance.
        assert hog["took"] >= 1 and hog["errno"] == errno.EMFILE, hog
        assert hog["from"] < peer["at"] < hog["until"], (hog, peer)
        # The rule: B got its instance, as a user of the pool other than A's.
        assert peer["fd"] >= 0 and peer["errno"] == 0, (hog, peer)
        pool = session_pool()
        assert pool is not None
        assert {hog["uid"], peer["uid"]} <= {u.uid for u in pool.users}
        assert hog["uid"] != peer["uid"], (hog, peer)
        assert kit.processes_under(root) == {}
