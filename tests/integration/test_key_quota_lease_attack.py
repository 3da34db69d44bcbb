"""A session's keys still count against its user's quota after its lease is released.

Seen red before `sandbox.users._lease.Lease.settle` (uid 994 held 200 keys, before 0, with its lease
released), green with it.

The kernel counts keys per uid, host-wide (``kernel.keys.maxkeys`` 200 and ``maxbytes``
20,000 for a user that is not root; ``/proc/key-users``). The stand-in (through ``record``,
real bwrap) adds ``user`` keys to its user keyring until ``add_key`` fails (EDQUOT). Its
keyrings live in bwrap's user namespace, which the kernel frees some time after the
session's last process is gone (measured here: about 2 s after ``record`` returned, the
uid still held 200 of its 200 keys). The lease (`sandbox.users._lease`) is released as soon as
the cgroup is empty and the files are the runner's, so the next session leased that user
in those seconds (with ``--concurrency 1`` it is the same user, at once) starts with no key
quota left: ``add_key`` fails with EDQUOT, which docs/session-reach.md "Identity and
processes" says a session can no longer take from another.

Rule (docs/host.md "A root runner", the lease): no session runs as the user until nothing
of the one before it holds anything the kernel counts for that uid. The test reads
``/proc/key-users`` at once when ``record`` returns: the session's uid holds no more keys
than before it.

The fix: a lease remembers its uid's key count when handed out (``/proc/key-users``) and,
before it is released, waits (at most `sandbox.users._lease.KEYS_SETTLE_S`, off the event loop)
until the count is back to that.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from sandbox._scratch import sweep_killed_runners
from tests.integration import kit
from tests.integration.test_record_standins import PROBE, SESSION, finals, make_corpus, record

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

STANDIN = r'''#!/usr/bin/python3
"""Key-quota stand-in of tests/integration/test_key_quota_lease_attack.py."""
import ctypes, json, os, sys
STREAM = b"STREAM_BYTES"
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (key quota)"); sys.exit(0)
libc = ctypes.CDLL(None, use_errno=True)
SYS_add_key, KEY_SPEC_USER_KEYRING = 248, -4
made, err = 0, 0
while made < 1000:
    if libc.syscall(SYS_add_key, b"user", b"hw-quota-%d" % made, b"x" * 64, 64,
                    KEY_SPEC_USER_KEYRING) < 0:
        err = ctypes.get_errno()
        break
    made += 1
with open("keys.json", "w") as f:
    json.dump({"uid": os.getuid(), "made": made, "errno": err}, f)
view = memoryview(STREAM)
while view:
    view = view[os.write(1, view):]
'''


def key_counts() -> dict[int, int]:
    """Keys per uid, from /proc/key-users (``uid: usage nkeys/nikeys qnkeys/maxkeys ...``)."""
    counts = {}
    for row in Path("/proc/key-users").read_text().splitlines():
        uid, rest = row.split(":", 1)
        counts[int(uid)] = int(rest.split()[1].split("/")[0])
    return counts


@pytest.mark.skipif(not Path("/proc/key-users").exists(), reason="no keys in this kernel")
def test_a_sessions_keys_are_gone_before_its_user_is_leased_again(
        tmp_path: Path, bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = kit.write_harness(tmp_path / "claude", STANDIN.replace('b"STREAM_BYTES"',
                                                                     repr(SESSION)))
    batch = tmp_path / "b"
    before = key_counts()
    uid = None
    try:
        run = record(corpus, batch, harness)
        after = key_counts()  # at once: the lease is already released
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        workspace = batch / "sessions" / "present" / PROBE / final["session"] / "workspace"
        report = json.loads((workspace / "keys.json").read_text())
        uid = report["uid"]
        assert report["made"] > 0 and report["errno"] != 0, report  # it took the whole quota
        assert after.get(uid, 0) <= before.get(uid, 0), (
            f"uid {uid} holds {after.get(uid, 0)} keys (before: {before.get(uid, 0)}) with "
            f"its lease released: {report}")
    finally:
        if uid is not None:  # the kernel frees them with the namespace: wait, bounded
            deadline = time.monotonic() + 30
            while key_counts().get(uid, 0) > before.get(uid, 0) and time.monotonic() < deadline:
                time.sleep(0.2)
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
        sweep_killed_runners()
