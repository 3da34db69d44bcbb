"""Taking back the search grants a root runner gave session users on a tree (docs/host.md).

Rule: a root runner lets each session user search the directories on the way to what bwrap
binds (`sandbox.users._privileges.grant_search`: the ACL entry ``u:<user>:--x``), a batch's own
directories included (its sessions' directories lead to each workspace the findings
checker reads). The grants are needed while the batch's sessions run, and by nothing once
they have ended: when the batch's last invocation ends (the batch lock is released, however
the invocation ended) every named-user entry of a pool user is removed from the batch's
directories down to `GRANT_DEPTH` levels, and an ACL that is then no more than the mode
says is removed whole (so ``ls -ld`` shows no ``+`` and ``getfacl`` no ``user:`` line of a
session user). Directories above the batch keep theirs: another batch beside it may be
running and need them, and search alone lists and reads nothing.

A workspace's own ACLs are the reclaim's business (`sandbox.storage._reclaim` drops every ACL the
session set); no symlink is followed, and nothing below `GRANT_DEPTH` is entered.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._errors import SessionUserUnusable
from ._pool import session_pool
from ._privileges import (
    _ACL_ENTRY,
    _ACL_GROUP,
    _ACL_GROUP_OBJ,
    _ACL_HEADER,
    _ACL_MASK,
    _ACL_USER,
    _ACL_VERSION,
    _ACL_XATTR,
    _read_acl,
)

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator

__all__ = ["GRANT_DEPTH", "grants_revoked", "revoke_grants", "revoke_search"]

logger = logging.getLogger(__name__)

GRANT_DEPTH: Final = 5
"""Levels below the top that `revoke_grants` visits: a batch's ``sessions/<arm>/<probe>/
<session>/`` and the directories in it (docs/batch.md's layout), where grants are made."""


def revoke_search(directory: Path, uids: Collection[int]) -> bool:
    """Remove the named-user ACL entries of ``uids`` from ``directory`` (blocking).

    When no named user or group entry is left, the ACL goes whole and the mode's
    group bits become the owning group's entry again (acl(5): with a mask they showed
    the mask); otherwise the mask becomes the union of what is left of the group class,
    as setfacl(1) recomputes it. ``directory`` is not followed if it is a symlink.

    Returns:
        True when an entry was removed.

    Raises:
        OSError: the ACL cannot be written (a file system without ACLs has none to remove,
            and answers False).
    """
    try:
        entries = _read_acl_nofollow(directory)
    except FileNotFoundError:
        return False
    if entries is None:
        return False
    kept = [e for e in entries if not (e[0] == _ACL_USER and e[2] in uids)]
    if len(kept) == len(entries):
        return False
    named = [e for e in kept if e[0] in (_ACL_USER, _ACL_GROUP)]
    if not named:
        group_obj = next(p for t, p, _ in kept if t == _ACL_GROUP_OBJ)
        mode = stat.S_IMODE(os.lstat(directory).st_mode)
        os.removexattr(directory, _ACL_XATTR, follow_symlinks=False)
        os.chmod(directory, (mode & ~0o070) | (group_obj << 3))  # not a symlink: read above
        return True
    group_class = 0
    for tag, perm, _ in kept:
        if tag in (_ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP):
            group_class |= perm
    kept = [(t, group_class if t == _ACL_MASK else p, i) for t, p, i in kept]
    blob = _ACL_HEADER.pack(_ACL_VERSION) + b"".join(  # the tags' values are acl(5)'s order
        _ACL_ENTRY.pack(t, p, i) for t, p, i in sorted(kept))
    os.setxattr(directory, _ACL_XATTR, blob, follow_symlinks=False)
    return True


def revoke_grants(top: Path, uids: Collection[int], *, depth: int = GRANT_DEPTH) -> list[Path]:
    """`revoke_search` on ``top`` and every directory below it down to ``depth`` levels
    (blocking; symlinks neither followed nor changed; a directory that vanishes, or one
    that cannot be listed, is passed over).

    Returns:
        The directories an entry was removed from, for the caller's log.

    Raises:
        OSError: an ACL cannot be written.
    """
    revoked: list[Path] = []
    level = [top]
    for _ in range(depth + 1):
        below: list[Path] = []
        for directory in level:
            if revoke_search(directory, uids):
                revoked.append(directory)
            with contextlib.suppress(OSError):
                below += [Path(e.path) for e in os.scandir(directory)
                          if e.is_dir(follow_symlinks=False)]  # fmt: skip
        level = below
    return revoked


@contextlib.contextmanager
def grants_revoked(top: Path) -> Iterator[None]:
    """On leaving the block, however it is left: `revoke_grants` of this host's session users
    (`sandbox.users._pool.session_pool`) on ``top`` (blocking; nothing for a runner that is not
    root, which grants nothing).

    Hold it inside whatever keeps other runners off ``top`` (a batch: its lock), so that
    no sandbox that needs a grant runs while they are taken back. A failure to take one
    back is logged, never raised: it must not hide how the block ended, and what is left
    is a search right on a directory whose files are the runner's.
    """
    try:
        yield
    finally:
        try:
            pool = session_pool()
        except SessionUserUnusable:  # a root runner without users: it granted nothing
            pool = None
        if pool is not None:
            try:
                revoked = revoke_grants(top, {user.uid for user in pool.users})
            except OSError as exc:
                logger.warning("the session users' search grants on %s could not all be "
                               "taken back: %s", top, exc)  # fmt: skip
            else:
                logger.info("took back the session users' search grants on %d directories "
                            "of %s", len(revoked), top)  # fmt: skip


def _read_acl_nofollow(path: Path) -> list[tuple[int, int, int]] | None:
    """`sandbox.users._privileges._read_acl` of ``path`` itself: a symlink has none (None)."""
    if stat.S_ISLNK(os.lstat(path).st_mode):
        return None
    try:
        return _read_acl(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise FileNotFoundError(exc.errno, exc.strerror, str(path)) from exc
        raise

