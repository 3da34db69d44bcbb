"""A root runner's search grants on a batch end with the batch's invocation (docs/host.md).

Rule (`sandbox.users._grants`): the ACL entries ``u:<session user>:--x`` a root runner adds on
the batch's directories so that a session user reaches what bwrap binds (the findings
checker reads the session's workspace in the batch) are taken back when the invocation
ends, before the batch lock is let go. After a real ``record`` whose corpus has a checker
(the checker's sandbox runs as the session user over ``<batch>/sessions/.../workspace``,
so the batch directory and those below it were granted), the access ACL of every
directory of the batch down to the session's (the kernel's ``system.posix_acl_access``,
what ``getfacl`` prints, decoded here by acl(5)'s layout; ``getfacl`` too where Debian's
acl is installed) holds no entry of a session user, and ``ls -ld`` of the batch shows no
``+``.

Seen red: ``grants_revoked`` taken out of `campaign.batch._open.open_batch` (the batch
directory kept ``user:headwater-session:--x`` and ``ls -ld`` showed ``drwx--x---+``).
"""

from __future__ import annotations

import errno
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from sandbox import session_pool
from sandbox._config import sweep_config_root
from tests.integration import kit
from tests.integration.test_record_standins import (
    PROBE,
    SESSION,
    make_corpus,
    record,
)
from tests.standin import write_standin

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]


def test_no_session_user_keeps_an_acl_entry_on_the_batch_after_record(
        tmp_path: Path, bwrap: str) -> None:
    pool = session_pool()
    if pool is None:
        pytest.skip("a runner that is not root grants nothing")
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus", checker=".headwater/check.sh",
                         extra={".headwater/check.sh": "#!/bin/sh\nexit 0\n"})
    (corpus / ".headwater" / "check.sh").chmod(0o755)
    harness = write_standin(tmp_path / "claude", stdout=SESSION)
    try:
        run = record(corpus, batch, harness)
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
    assert run.returncode == 0, run.stdout + run.stderr
    (final,) = kit.final_list(batch)
    assert final["state"] == "recorded" and "findings_note" not in final, final  # checked
    session = batch / "sessions" / "present" / PROBE / "r1"
    uids = {user.uid for user in pool.users}
    between = session.parents[: len(session.parents) - len(batch.parents) - 1]
    for directory in (batch, *between, session):
        assert not named_users(directory) & uids, directory
    getfacl = shutil.which("getfacl")
    if getfacl is not None:
        acl = subprocess.run([getfacl, "-p", "-c", str(batch)], capture_output=True,
                             text=True, check=True, timeout=30).stdout
        users = {line.split(":")[1] for line in acl.splitlines() if line.startswith("user:")}
        assert not users & {user.name for user in pool.users}, acl
    listing = subprocess.run(["ls", "-ld", str(batch)], capture_output=True, text=True,
                             check=True, timeout=30).stdout
    assert listing.split()[0] == "drwx------", listing  # no "+": no ACL left, mode 0700


def named_users(directory: Path) -> set[int]:
    """The uids of the named-user entries (ACL_USER, tag 2) of ``directory``'s access ACL:
    the xattr is a little-endian version (2), then entries of tag (u16), perm (u16), id
    (u32) (acl(5), linux/posix_acl_xattr.h)."""
    try:
        blob = os.getxattr(directory, "system.posix_acl_access")
    except OSError as exc:
        assert exc.errno == errno.ENODATA, exc
        return set()
    assert struct.unpack_from("<I", blob)[0] == 2
    return {ident for tag, _, ident in struct.iter_unpack("<HHI", blob[4:]) if tag == 2}
