"""A session cannot take what sessions sharing its uid share: its user's namespaces.

The kernel counts a user's namespaces host-wide (``user.max_user_namespaces``, 96,365
here). When every session of a root runner ran as the one user ``headwater-session``, five
processes of that user holding 96,351 user namespaces (descriptors of them, made at about a
thousand a second) left none, and a ``record`` started meanwhile ended ``refused-init``
(bwrap: "unshare user ns: No space left on device"), not retryable; a session could hold
them as long as it runs (512 processes of 1,024 descriptors each are enough), failing every
session of every batch of the host that started meanwhile. A root runner's sessions now run
each as a pool user of its own (`sandbox.users._lease`; tests/integration/test_uid_pool_attack.py
for the other per-user counts), so such a session would take only its own user's; but the
sessions of a runner that is not root all run as that runner, and its own probes need user
namespaces: the rule below still holds for every runner.

The stand-in (through ``record``, real bwrap) tries ``unshare(CLONE_NEWUSER)`` in a child
and writes the answer to its workspace. Rule (docs/session-reach.md "Identity and
processes"): the session can make no user namespace (bwrap ``--disable-userns``: ENOSPC),
and, with no capability, no namespace of another kind, so it can hold none of its
user's count.

Seen red without ``--disable-userns`` in `sandbox._argv.NAMESPACE_FLAGS`: the unshare
succeeds (0).
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from tests.integration import kit
from tests.integration.test_record_standins import PROBE, SESSION, finals, make_corpus, record

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

STANDIN = r'''#!/usr/bin/python3
import ctypes, json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (user namespaces)"); sys.exit(0)
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    ok = libc.unshare(0x10000000)  # CLONE_NEWUSER
    os.write(w, json.dumps([ok, ctypes.get_errno() if ok else 0]).encode())
    os._exit(0)
os.close(w)
answer = json.loads(os.read(r, 100))
os.waitpid(pid, 0)
with open("userns.json", "w") as f:
    json.dump(answer, f)
os.write(1, STREAM)
'''


def test_a_session_can_make_no_user_namespace(tmp_path: Path, bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(STANDIN.replace("STREAM", repr(SESSION)))
    harness.chmod(0o755)
    batch = tmp_path / "b"
    try:
        run = record(corpus, batch, harness)
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        assert final["state"] == "recorded", final["reason"]
        workspace = batch / "sessions" / "present" / PROBE / final["session"] / "workspace"
        assert json.loads((workspace / "userns.json").read_text()) == [-1, errno.ENOSPC]
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
