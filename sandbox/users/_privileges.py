"""No root inside: sessions of a root runner run as a dedicated unprivileged user (RC-05).

bwrap's ``--uid`` maps a uid inside the user namespace only: started by
root, the sandbox's processes are still uid 0 on the host, and host files that
only root may read (``/etc/shadow`` under the read-only ``/etc``) stay
readable. So a runner whose effective uid is 0 drops privileges *before*
bwrap starts: the argv is prefixed with ``setpriv --reuid U --regid G
--clear-groups --`` (util-linux, setpriv(1)), which execs bwrap as a session
user: one of the pool (`sandbox.users._pool`, `SESSION_USER` first) that the
sandbox leases for its whole life (`sandbox.users._lease`), so no two sessions that
run at once share a uid. bwrap then needs unprivileged user namespaces, like
any non-root runner. A runner that is not root needs no drop: its sessions
run as itself.

The session user must reach what bwrap binds: the session's workspace, log
and config directories are handed to it (owner, mode 0700; a credentials copy
0600), and every directory on the way to a bind source that it cannot search
gets a POSIX ACL entry ``u:<that user>:--x`` (search only, never list or
read). Inside the sandbox none of those directories is mounted, so the grant
widens nothing the session can reach; it lets bwrap, running as that user,
resolve the mount sources. The entry names the user, not a group all pool
users share: a shared group would be a supplementary group of every session
(``--clear-groups`` drops them), through which a session could make its own
files readable by the others (``chgrp``, ``chmod g+r``). Parents shared by
many sessions (a batch directory) so carry at most one entry per pool user.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._errors import SessionUserUnusable

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

SESSION_USER: Final = "headwater-session"
"""The first user of the session pool (`sandbox.users._pool`), the one user of earlier versions."""
PRIVATE_DIR_MODE: Final = 0o700
"""Mode of the session's own directories once handed over."""
PRIVATE_FILE_MODE: Final = 0o600
"""Mode of a credentials copy once handed over."""

_ACL_XATTR: Final = "system.posix_acl_access"
_ACL_VERSION: Final = 2  # POSIX_ACL_XATTR_VERSION, linux/posix_acl_xattr.h
_ACL_HEADER: Final = struct.Struct("<I")
_ACL_ENTRY: Final = struct.Struct("<HHI")  # e_tag, e_perm, e_id
_ACL_USER_OBJ, _ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = (
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20,
)  # fmt: skip
_ACL_UNDEFINED_ID: Final = 0xFFFFFFFF
_SEARCH: Final = 0o1


@dataclass(frozen=True, slots=True)
class SessionUser:
    """The unprivileged identity a root runner's sessions run under.

    Attributes:
        name: The account name: `SESSION_USER`, or another of the pool (`sandbox.users._pool`).
        uid: Its user id, never 0.
        gid: Its primary group id, never 0; supplementary groups are cleared.
    """

    name: str
    uid: int
    gid: int


def drop_argv(user: SessionUser | None) -> list[str]:
    """The argv prefix that starts bwrap as ``user``; ``[]`` for None (no drop).

    ``setpriv --reuid U --regid G --clear-groups --``: real, effective and
    saved ids all become the user's, supplementary groups are dropped, and
    the capabilities of root go with the uid change (capabilities(7)). setpriv
    execs bwrap in place, so bwrap keeps the pid the driver spawned: signals,
    the process group and ``--die-with-parent`` work as without the drop.

    Raises:
        SessionUserUnusable: setpriv is not installed (util-linux).
    """
    if user is None:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise SessionUserUnusable(
            "setpriv is not found: privileges cannot be dropped before bwrap",
            "install util-linux (it provides setpriv)",
        )
    return [setpriv, f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups", "--"]


def hand_over(
    user: SessionUser | None, *, own: Sequence[Path], reach: Sequence[Path]
) -> list[Path]:
    """Give ``user`` the session's own directories and a way to every bind source.

    Each of ``own`` (the workspace, the log directory) and everything under
    it is chowned to the user (symlinks themselves, never their targets), and
    its top gets mode 0700. For each of ``own`` and ``reach`` (the harness
    binary, the config directory), every ancestor directory the user cannot
    search gets the ACL entry ``u:<user>:--x`` (`grant_search`). A ``reach``
    file must already be readable and executable by the user: its mode is
    the owner's business, not changed here. Nothing happens for None.

    Returns:
        The directories that received the ACL entry, for the caller to say so.

    Raises:
        SessionUserUnusable: a directory cannot be granted (no ACL support on
            its filesystem), or a ``reach`` file is not readable by the user.
    """
    if user is None:
        return []
    for path in own:
        chown_tree(path, user)
        os.chmod(path, PRIVATE_DIR_MODE)
    granted: list[Path] = []
    for path in (*own, *reach):
        granted += grant_search(path, user)
    for path in reach:
        if path.is_file() and not can_access(path, user, want=0o5):
            raise SessionUserUnusable(
                f"{path} is not readable and executable by {user.name} (mode "
                f"{stat.S_IMODE(path.stat().st_mode):04o}); the session could not start it",
                f"chmod o+rx {path}",
            )
    return granted


def chown_tree(path: Path, user: SessionUser) -> None:
    """Chown ``path`` and everything under it to ``user``, never following a symlink."""
    os.lchown(path, user.uid, user.gid)
    if path.is_symlink() or not path.is_dir():
        return
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            os.lchown(os.path.join(root, name), user.uid, user.gid)


def grant_search(path: Path, user: SessionUser) -> list[Path]:
    """Let ``user`` search every ancestor directory of ``path`` (not ``path`` itself).

    Returns:
        The directories that needed and received the ACL entry ``u:<user>:--x``.

    Raises:
        SessionUserUnusable: an ACL cannot be written there (``EOPNOTSUPP``:
            the filesystem has no POSIX ACLs); the fix names the directory.
    """
    granted: list[Path] = []
    for directory in reversed(Path(os.path.abspath(path)).parents):
        if can_access(directory, user, want=_SEARCH):
            continue
        try:
            _add_user_search(directory, user.uid)
        except OSError as exc:
            raise SessionUserUnusable(
                f"{user.name} cannot search {directory} (on the way to {path}) and an ACL "
                f"cannot be added there: {exc}",
                f"`setfacl -m u:{user.name}:x {directory}` or `chmod o+x {directory}`, or use "
                "paths under /var/tmp/headwater-campaign",
            ) from exc
        granted.append(directory)
    return granted


def can_access(path: Path, user: SessionUser, *, want: int) -> bool:
    """Whether ``user`` (no supplementary groups) has the ``want`` bits (r=4 w=2 x=1) on ``path``.

    The POSIX ACL access check (acl(5)): owner; a named-user entry masked;
    the owning or a named group masked; other. Follows a symlink at ``path``.
    """
    st = os.stat(path)
    entries = _read_acl(path)
    if st.st_uid == user.uid:
        return (st.st_mode >> 6) & want == want
    if entries is None:
        perm = (st.st_mode >> 3) & 7 if st.st_gid == user.gid else st.st_mode & 7
        return perm & want == want
    mask = next((p for t, p, _ in entries if t == _ACL_MASK), 7)
    named = [p for t, p, i in entries if t == _ACL_USER and i == user.uid]
    if named:
        return named[0] & mask & want == want
    groups = [p for t, p, i in entries if (t == _ACL_GROUP_OBJ and st.st_gid == user.gid)
              or (t == _ACL_GROUP and i == user.gid)]  # fmt: skip
    if groups:
        return any(p & mask & want == want for p in groups)
    other = next(p for t, p, _ in entries if t == _ACL_OTHER)
    return other & want == want


def _read_acl(path: Path) -> list[tuple[int, int, int]] | None:
    """The access ACL's entries ``(tag, perm, id)``; None when the file has none."""
    try:
        blob = os.getxattr(path, _ACL_XATTR)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.EOPNOTSUPP):
            return None
        raise
    return [_ACL_ENTRY.unpack_from(blob, offset)
            for offset in range(_ACL_HEADER.size, len(blob), _ACL_ENTRY.size)]  # fmt: skip


def _add_user_search(directory: Path, uid: int) -> None:
    """Add (or widen) the entry ``u:<uid>:--x`` and keep the mask letting it through."""
    mode = os.stat(directory).st_mode
    entries = _read_acl(directory) or [
        (_ACL_USER_OBJ, (mode >> 6) & 7, _ACL_UNDEFINED_ID),
        (_ACL_GROUP_OBJ, (mode >> 3) & 7, _ACL_UNDEFINED_ID),
        (_ACL_OTHER, mode & 7, _ACL_UNDEFINED_ID),
    ]
    by_key = {(tag, ident): perm for tag, perm, ident in entries}
    by_key[(_ACL_USER, uid)] = by_key.get((_ACL_USER, uid), 0) | _SEARCH
    group_tags = (_ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP)
    group_class = [p for (t, _), p in by_key.items() if t in group_tags]
    mask_key = (_ACL_MASK, _ACL_UNDEFINED_ID)
    if mask_key in by_key:
        by_key[mask_key] |= _SEARCH  # the group-obj entry keeps its own bits: mask only limits
    else:
        by_key[mask_key] = _union(group_class)
    blob = _ACL_HEADER.pack(_ACL_VERSION) + b"".join(
        _ACL_ENTRY.pack(tag, perm, ident) for (tag, ident), perm in sorted(by_key.items())
    )
    os.setxattr(directory, _ACL_XATTR, blob)


def _union(perms: Iterable[int]) -> int:
    result = 0
    for perm in perms:
        result |= perm
    return result


def hand_over_file(path: Path, user: SessionUser | None) -> None:
    """Chown one file (a credentials copy) to ``user`` with mode 0600; nothing for None."""
    if user is None:
        return
    with contextlib.suppress(FileNotFoundError):
        os.lchown(path, user.uid, user.gid)
        os.chmod(path, PRIVATE_FILE_MODE)
