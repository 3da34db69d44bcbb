"""After a session, what it left cannot act for it, and what was recorded stays true.

Attacks from inside, each a stand-in harness under real bwrap through ``record``:

* the session opens its workspace to everyone, leaves a setuid and setgid
  copy of ``/usr/bin/python3`` in it and a world-writable file, and copies its credentials into its
  log directory as 0644 in a 0777 directory, with a symlink to
  ``/etc/shadow`` beside them. Afterwards an unprivileged host user
  (``nobody``) must reach none of it (the batch directory is 0700), the copy
  must be a plain file of the runner's, no session user of the pool (the
  session's or another) must write anything of its old files, and the log
  must hold copies of its regular files only, the runner's, 0600;
* the session leaves in its log a sparse file of 2 GiB (no block allocated) and an 8 MiB
  file under 101 names (hard links), about 8 MiB of its 64 MiB writes limit: the runner's
  copy of the log must hold no more than that limit;
* a survivor (the attack stand-in: a detached daemon that kills the lifeline
  watcher and tries ptrace of bwrap's pid 1) rewrites a produced file
  through a descriptor it keeps open: the digest the ledger holds must be
  the digest of the file left, and stay so.

Rules: docs/session-reach.md "After the session"; the runner's sandbox
recipe (`sandbox.storage._reclaim`, `campaign.batch._dir.BATCH_DIR_MODE`) and the
end of a session (its cgroup killed and empty before anything is read).

Seen red: ``HW_WEAKEN=no-reclaim,open-batch`` (``nobody`` runs the copy and
is the session user); ``open-batch`` alone (``nobody`` runs the copy, as
itself); ``no-reclaim`` alone (the files stay the session user's);
``HW_WEAKEN=no-seccomp,no-cgroup,no-landlock`` (the survivor's rewrite lands after the
digest was recorded); the log copy's bound removed (`sandbox.storage._reclaim._copy_file`
copying every file whatever its size): the runner wrote 2.8 GB into the kept log.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import session_pool
from sandbox._config import sweep_config_root
from sandbox._scratch import sweep_killed_runners
from tests.conftest import missing
from tests.integration import kit
from tests.integration.attack_standin import write_attack_standin
from tests.integration.test_record_standins import (
    ANSWERED,
    PROBE,
    finals,
    init,
    make_corpus,
    record,
    result,
    tool_result,
    tool_use,
)

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

KEY = "sk-standin-not-a-secret"
"""The key `record` is given (its ``--api-key-env``): the session's gateway holds it; the
session itself holds only its placeholder (docs/gateway.md)."""
PLACEHOLDER_PREFIX = "headwater-placeholder-"
"""How the placeholder a session is given in place of the key begins."""
NOBODY = (65534, 65534)

LEAVER = r'''#!/usr/bin/python3
import json, os, shutil, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (leaves things behind)"); sys.exit(0)
os.chmod(".", 0o755)  # the workspace is the session's: it opens it to everyone
shutil.copy("/usr/bin/python3", "py")
os.chmod("py", 0o6755)
with open("notes.md", "w") as f:
    f.write("mine\n")
os.chmod("notes.md", 0o666)
log = os.environ["HEADWATER_LOG_DIR"]
with open(os.path.join(log, "key"), "w") as f:
    f.write(os.environ["ANTHROPIC_API_KEY"])
os.chmod(os.path.join(log, "key"), 0o644)
os.chmod(log, 0o777)
os.symlink("/etc/shadow", os.path.join(log, "shadow"))
os.mkfifo(os.path.join(log, "pipe"))
os.write(1, STREAM)
'''


def _stream() -> bytes:
    write = tool_use("t2", "Write", {"file_path": "notes.md", "content": "mine\n"}, msg="m0")
    return init() + write + tool_result("t2", "ok") + ANSWERED + result()


def _as(uid: int, gid: int, *argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` run by a shell as ``uid``: setpriv execs its command still holding root's
    capabilities (they go with that exec), so the command it execs is a shell that has none."""
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                           "--", "/bin/sh", "-c", shlex.join(argv)], capture_output=True,
                          text=True, env={}, timeout=30, check=False)  # fmt: skip


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A host directory any user may traverse (0755), as a batch root on /var/tmp is."""
    if os.geteuid() != 0:
        missing("a root runner (its sessions run as another user, whom other users are kept "
                "from)")
    with kit.host_dir("hw-after-") as root:
        root.chmod(0o755)
        yield root


def test_what_a_session_leaves_is_the_runners_and_no_other_user_reaches_it(
        open_root: Path, bwrap: str) -> None:
    corpus = make_corpus(open_root / "corpus")
    harness = open_root / "claude"
    harness.write_text(LEAVER.replace("STREAM", repr(_stream())))
    harness.chmod(0o755)
    batch = open_root / "batch"
    try:
        run = record(corpus, batch, harness, "--network", "host")
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        session = batch / "sessions" / "present" / PROBE / final["session"]
        workspace, log = session / "workspace", session / "log"
        # An unprivileged host user reaches nothing of the batch, running or kept.
        ran = _as(*NOBODY, str(workspace / "py"), "-c", "import os; print(os.geteuid())")
        assert ran.returncode != 0 and "Permission denied" in ran.stderr, (
            f"nobody ran the copy as uid {ran.stdout.strip()}")
        read = _as(*NOBODY, "/bin/cat", str(log / "key"))
        assert read.returncode != 0 and PLACEHOLDER_PREFIX not in read.stdout
        # 0700; the group bits show the ACL mask of the session user's search-only entry
        assert stat.S_IMODE(batch.stat().st_mode) in (0o700, 0o710)
        # The copy is a plain file of the runner's: whoever starts it stays who they are.
        for path in (workspace, workspace / "py", workspace / "notes.md"):
            info = path.lstat()
            assert (info.st_uid, info.st_gid) == (0, 0), path
            assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID | 0o022), oct(info.st_mode)
        pool = session_pool()  # whichever of them the session's lease gave it
        assert pool is not None
        for user in pool.users:
            wrote = _as(user.uid, user.gid, "/bin/sh", "-c", f"echo more >> "
                        f"{workspace / 'notes.md'} || exit 1; touch {workspace / 'new'}")
            assert wrote.returncode != 0 and (workspace / "notes.md").read_text() == "mine\n"
            assert not (workspace / "new").exists()
        # The log: copies of its regular files, the runner's, 0600 in 0700.
        assert sorted(p.name for p in log.iterdir()) == ["key"]
        told = (log / "key").read_text()  # what the session was told: never the key
        assert told.startswith(PLACEHOLDER_PREFIX) and KEY not in told, told
        for path, mode in ((log, 0o700), (log / "key", 0o600)):
            info = path.lstat()
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, mode), path
        produced = {a["path"]: a for a in final["event"]["produced"]}
        digest = "sha256:" + hashlib.sha256(b"mine\n").hexdigest()
        assert produced["notes.md"]["result"] == digest
    finally:
        kit.kill_all(kit.processes_under(open_root))
        sweep_config_root()


def test_a_survivor_cannot_change_a_produced_file_after_its_digest_is_recorded(
        tmp_path: Path, bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = write_attack_standin(tmp_path / "claude", stdout=_stream(), rewrite="notes.md")
    batch = tmp_path / "b"
    try:
        run = record(corpus, batch, harness, "--network", "host")
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        produced = {a["path"]: a for a in final["event"]["produced"]}
        path = batch / "sessions" / "present" / PROBE / final["session"] / "workspace"
        left = (path / "notes.md").read_bytes()
        assert produced["notes.md"]["result"] == "sha256:" + hashlib.sha256(left).hexdigest()
        time.sleep(1.0)  # the survivor, were it alive, rewrites every 0.2 s
        assert (path / "notes.md").read_bytes() == left
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
        sweep_killed_runners()


SPARSE_LOG = r'''#!/usr/bin/python3
import os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (sparse log)"); sys.exit(0)
log = os.environ["HEADWATER_LOG_DIR"]
with open(os.path.join(log, "sparse"), "wb") as f:
    f.truncate(2 << 30)  # its size, none of it allocated
with open(os.path.join(log, "dense"), "wb") as f:
    f.write(b"y" * (8 << 20))
for n in range(100):
    os.link(os.path.join(log, "dense"), os.path.join(log, "link%d" % n))
os.write(1, STREAM)
'''


def test_what_a_session_leaves_in_its_log_costs_the_runner_no_more_than_its_writes_limit(
        tmp_path: Path, bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(SPARSE_LOG.replace("STREAM", repr(_stream())))
    harness.chmod(0o755)
    batch = tmp_path / "b"
    try:
        run = record(corpus, batch, harness, "--network", "host", "--max-writes", "64M")
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        assert final["state"] == "recorded", final["reason"]
        log = batch / "sessions" / "present" / PROBE / final["session"] / "log"
        held = sum(p.lstat().st_blocks * 512 for p in log.rglob("*"))
        assert held <= 64 * 1024 * 1024, f"the runner wrote {held} bytes into the kept log"
        kept = {p.name: p.stat().st_size for p in log.iterdir()}
        assert "sparse" not in kept and len(kept) == 8, kept  # what fits, in the log's order
        assert set(kept.values()) == {8 << 20}, kept
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
