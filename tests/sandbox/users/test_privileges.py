"""No root inside: who sessions run as, the setpriv prefix, and reaching mounts.

The ACL tests need root (they chown and grant for the real session user) and
check the grant from the session user's side with setpriv, not by reading
our own code's answer back.
"""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox import SESSION_USER, SessionUser, SessionUserUnusable, drop_argv, session_user
from sandbox.users._privileges import can_access, grant_search, hand_over

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs a root runner")


@pytest.fixture
def user() -> SessionUser:
    """The real session user (a root runner creates it; `make session-user`)."""
    if os.geteuid() != 0:
        pytest.skip("only a root runner drops privileges")
    found = session_user()
    assert found is not None
    return found


def _as(user: SessionUser, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*drop_argv(user), *argv], capture_output=True, text=True,
                          env={}, check=False, timeout=30)  # fmt: skip


def test_a_runner_that_is_not_root_drops_nothing() -> None:
    assert session_user(euid=1000) is None
    assert drop_argv(None) == []


def test_drop_argv_is_setpriv_with_every_id_and_no_groups() -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("no setpriv here")
    assert drop_argv(SessionUser("s", 990, 991)) == [
        setpriv, "--reuid=990", "--regid=991", "--clear-groups", "--",
    ]  # fmt: skip


def test_a_session_user_with_uid_0_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = pwd.struct_passwd((SESSION_USER, "x", 0, 0, "", "/", "/bin/false"))
    monkeypatch.setattr("sandbox.users._pool.pwd.getpwnam", lambda name: fake)
    with pytest.raises(SessionUserUnusable, match="would run as root"):
        session_user(euid=0)


@as_root
def test_the_session_user_is_not_root(user: SessionUser) -> None:
    assert user.name == SESSION_USER
    assert user.uid != 0
    assert user.gid != 0
    done = _as(user, "/usr/bin/id", "-u")
    assert done.stdout.strip() == str(user.uid)


@as_root
def test_grant_search_lets_only_the_session_user_through_and_never_list(
    user: SessionUser, tmp_path: Path
) -> None:
    private = tmp_path / "private" / "deeper"
    target = private / "ws"
    target.mkdir(parents=True)
    for path in (tmp_path / "private", private):
        path.chmod(0o700)
    assert _as(user, "/usr/bin/test", "-d", str(target)).returncode == 1
    granted = grant_search(target, user)
    assert tmp_path / "private" in granted
    assert private in granted
    assert _as(user, "/usr/bin/test", "-d", str(target)).returncode == 0
    assert _as(user, "/bin/ls", str(private)).returncode != 0  # search, not read
    nobody = pwd.getpwnam("nobody")
    other = SessionUser("nobody", nobody.pw_uid, nobody.pw_gid)
    assert _as(other, "/usr/bin/test", "-d", str(target)).returncode == 1
    assert grant_search(target, user) == []  # idempotent
    assert not can_access(private, other, want=1)


@as_root
def test_grant_keeps_the_groups_own_bits(user: SessionUser, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "ws").mkdir(parents=True)
    shared.chmod(0o750)
    tmp_path.chmod(0o700)
    grant_search(shared / "ws", user)
    assert (shared.stat().st_mode & 0o070) == 0o050


@as_root
def test_hand_over_chowns_the_tree_but_never_a_symlinks_target(
    user: SessionUser, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "a.md").write_text("a")
    host_file = tmp_path / "host-file"
    host_file.write_text("host")
    (workspace / "link").symlink_to(host_file)
    hand_over(user, own=[workspace], reach=[])
    for path in (workspace, workspace / "docs", workspace / "docs" / "a.md"):
        assert (path.lstat().st_uid, path.lstat().st_gid) == (user.uid, user.gid)
    assert (workspace / "link").lstat().st_uid == user.uid
    assert host_file.stat().st_uid == 0
    assert workspace.stat().st_mode & 0o777 == 0o700


@as_root
def test_a_filesystem_without_acls_is_refused_with_the_fix(
    user: SessionUser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "p" / "ws").mkdir(parents=True)
    (tmp_path / "p").chmod(0o700)

    def no_acls(*args: object) -> None:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr("sandbox.users._privileges.os.setxattr", no_acls)
    with pytest.raises(SessionUserUnusable, match="cannot search") as caught:
        grant_search(tmp_path / "p" / "ws", user)
    assert "setfacl -m u:headwater-session:x" in caught.value.fix
