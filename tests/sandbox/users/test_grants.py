"""Taking back session users' search grants (sandbox/users/_grants.py), against acl(5).

Expected values from acl(5): a directory whose ACL, once the session users' entries are
gone, has no named entry left has a minimal ACL, which is its mode alone (no xattr; the
group bits are the owning group's entry again, where with a mask they showed the mask); one
that keeps a named entry keeps its ACL with the mask the union of the group class
(setfacl(1)'s recomputation). The grants are made as a runner makes them
(`sandbox.users._privileges.grant_search`'s entry), the ACL read back from the kernel's xattr.

Seen red: `revoke_search` without its removal of a minimal ACL (the directory kept a mask,
``ls -ld``'s ``+``; the mode's group bits stayed the mask's).
"""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import pytest

from sandbox.users._grants import GRANT_DEPTH, revoke_grants, revoke_search
from sandbox.users._privileges import _add_user_search

A, B, KEPT = 4201, 4202, 4203
"""Two session users' uids and a uid whose entry is not the runner's to take back."""
ACL = "system.posix_acl_access"


def entries(path: Path) -> list[tuple[int, int, int]] | None:
    """(tag, perm, id) of the access ACL (acl(5) xattr: u32 version, then u16 u16 u32)."""
    try:
        blob = os.getxattr(path, ACL, follow_symlinks=False)
    except OSError as exc:
        assert exc.errno == errno.ENODATA, exc
        return None
    return list(struct.iter_unpack("<HHI", blob[4:]))


def granted(path: Path, *uids: int, mode: int = 0o700) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    for uid in uids:
        _add_user_search(path, uid)
    return path


@pytest.fixture(autouse=True)
def _acls(tmp_path: Path) -> None:
    try:
        _add_user_search(granted(tmp_path / "probe"), A)
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs under {tmp_path}: {exc}")


def test_a_directory_granted_only_to_session_users_gets_its_mode_back(tmp_path: Path) -> None:
    batch = granted(tmp_path / "b", A, B)
    assert entries(batch) is not None and (batch.stat().st_mode & 0o777) == 0o710  # the mask
    assert revoke_search(batch, {A, B}) is True
    assert entries(batch) is None  # minimal: no + in ls -ld
    assert batch.stat().st_mode & 0o777 == 0o700
    assert revoke_search(batch, {A, B}) is False  # nothing left to take


def test_the_owning_groups_bits_come_back(tmp_path: Path) -> None:
    shared = granted(tmp_path / "g", A, mode=0o750)
    assert revoke_search(shared, {A})
    assert entries(shared) is None and shared.stat().st_mode & 0o777 == 0o750


def test_an_entry_of_another_uid_stays_and_the_mask_is_recomputed(tmp_path: Path) -> None:
    both = granted(tmp_path / "k", A, mode=0o700)
    _add_user_search(both, KEPT)
    assert revoke_search(both, {A})
    # user_obj rwx, user:KEPT --x, group_obj ---, mask --x (KEPT's | group_obj's), other ---
    assert entries(both) == [(0x01, 7, 0xFFFFFFFF), (0x02, 1, KEPT), (0x04, 0, 0xFFFFFFFF),
                             (0x10, 1, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)]


def test_the_walk_takes_back_down_to_its_depth_and_follows_no_symlink(tmp_path: Path) -> None:
    top = granted(tmp_path / "batch", A)
    path = top
    levels = []
    for index in range(GRANT_DEPTH + 1):
        path = granted(path / f"d{index}", A)
        levels.append(path)
    outside = granted(tmp_path / "outside", A)
    (top / "link").symlink_to(outside)
    revoked = revoke_grants(top, {A, B})
    assert sorted(revoked) == sorted([top, *levels[:GRANT_DEPTH]])
    assert all(entries(p) is None for p in (top, *levels[:GRANT_DEPTH]))
    assert entries(levels[GRANT_DEPTH]) is not None  # below the depth: not entered
    assert entries(outside) is not None  # a symlink's target is not the tree's
