"""After a session: what it made becomes the runner's, and what it left in its log is copied.

Rule: once every process of a session is gone (its cgroup is empty), nothing
it left on the host may act for it or be trusted for its modes:

* **its workspace** (`reclaim_tree`): every entry belongs to the runner (its
  uid and gid), loses every ACL the session may have set and every file
  capability, and gets a mode of the runner's choosing: directories 0755,
  files 0644, or 0755 when the session left an execute bit; never setuid,
  setgid or sticky, never writable by the session user (an execute bit is the
  owner's). A setuid copy of
  ``/usr/bin/python3`` left in the workspace so becomes a plain root-owned
  file that runs as whoever starts it. Symlinks are re-owned and kept (a
  symlink's mode means nothing); FIFOs and sockets keep no special bit.
* **its log directory** (`replace_with_copy`): only regular files are kept,
  and as copies the runner writes (0600, in directories 0700 that it owns);
  symlinks, FIFOs, sockets and whatever the session set on the originals
  (modes, owners, ACLs, hard links to workspace files) are dropped with the
  original tree. The copy holds at most ``max_bytes`` (the session's writes limit):
  the copy writes every byte of a file, so a sparse file (its size with no block
  allocated, which the writes limit does not see) or one file under many names (hard
  links, measured once) would otherwise make the runner write terabytes; a file that
  would take the copy past the bound is dropped.

No symlink is ever followed: each directory is opened relative to its parent
with ``O_NOFOLLOW`` and changed through that descriptor, each other entry
through an ``O_PATH`` descriptor whose type is checked (``fstat``) before its
owner and mode change. Depth is bounded (`MAX_DEPTH`): a directory that deep
is made the runner's, mode 0700, and not entered, so nothing below it is
reachable by anyone but root, and the walk holds at most `MAX_DEPTH`
descriptors however deep the session nested its directories.

The batch directory itself is 0700 (`campaign.batch._dir`): no other host
user reaches a session's files while it runs either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .._hostfs import DIR_FLAGS
from .._remove import remove_tree

__all__ = ["MAX_DEPTH", "Reclaimed", "reclaim_tree", "replace_with_copy"]

MAX_DEPTH: Final = 64
"""Directory levels below the top that the walk enters; a directory this deep is made
0700, the runner's, and left unentered. Corpora nest a handful of levels."""
DIR_MODE: Final = 0o755
"""A workspace directory after the session: the runner's; readable, so that the findings
checker (run as the session user, read-only) can still read it."""
FILE_MODE: Final = 0o644
"""A workspace file after the session (0755 when the session left an execute bit)."""
SEALED_DIR_MODE: Final = 0o700
"""A directory at `MAX_DEPTH`, and every directory of a log copy."""
LOG_FILE_MODE: Final = 0o600
"""A file of a log copy."""
_DROPPED_XATTRS: Final = ("system.posix_acl_access", "system.posix_acl_default",
                          "security.capability")
_COPY_CHUNK_BYTES: Final = 1024 * 1024


@dataclass(slots=True)
class Reclaimed:
    """What a reclaim did (for the caller's log); counts of entries.

    Attributes:
        entries: Entries re-owned and given the runner's modes.
        sealed: Directories at `MAX_DEPTH`, made 0700 and not entered.
        dropped: Log entries not kept (not a regular file, too deep, or past the copy's
            bound).
        copied_bytes: Bytes the log's copy holds.
    """

    entries: int = 0
    sealed: int = 0
    dropped: int = 0
    copied_bytes: int = 0


def reclaim_tree(top: Path, *, uid: int | None = None, gid: int | None = None) -> Reclaimed:
    """Make ``top`` and everything under it the runner's, with the runner's modes (blocking).

    Call only once no process of the session is left (module docstring).

    Args:
        top: The session's workspace (a directory; a symlink there is refused).
        uid, gid: The owner to give; None is the runner's effective uid / gid.

    Returns:
        The counts (`Reclaimed`).

    Raises:
        OSError: ``top`` cannot be opened as a directory without following a symlink,
            or an entry cannot be changed (a filesystem that refuses ``chown``).
    """
    owner = (os.geteuid() if uid is None else uid, os.getegid() if gid is None else gid)
    done = Reclaimed()
    fd = os.open(top, DIR_FLAGS)
    try:
        _own_dir(fd, owner, DIR_MODE)
        done.entries += 1
        _walk(fd, owner, 1, done)
    finally:
        os.close(fd)
    return done


def _walk(dir_fd: int, owner: tuple[int, int], depth: int, done: Reclaimed) -> None:
    with os.scandir(dir_fd) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False),
                  entry.is_symlink()) for entry in entries]  # fmt: skip
    for name, is_dir, is_link in names:
        if is_link:
            with contextlib.suppress(FileNotFoundError):
                os.chown(name, *owner, dir_fd=dir_fd, follow_symlinks=False)
                done.entries += 1
        elif is_dir:
            try:
                fd = _open_dir(dir_fd, name)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                    continue
                raise
            try:
                if depth >= MAX_DEPTH:
                    _own_dir(fd, owner, SEALED_DIR_MODE)
                    done.sealed += 1
                    continue
                _own_dir(fd, owner, DIR_MODE)
                done.entries += 1
                _walk(fd, owner, depth + 1, done)
            finally:
                os.close(fd)
        else:
            _own_other(dir_fd, name, owner)
            done.entries += 1


def _open_dir(dir_fd: int, name: str) -> int:
    """Open a directory of the session's to read it, even one it left unreadable (mode 000:
    a runner that is not root owns it, and changes its mode through an O_PATH descriptor,
    which needs no permission on it)."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        path_fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC,
                          dir_fd=dir_fd)  # fmt: skip
        try:
            os.chmod(f"/proc/self/fd/{path_fd}", SEALED_DIR_MODE)
        finally:
            os.close(path_fd)
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def _own_dir(fd: int, owner: tuple[int, int], mode: int) -> None:
    os.fchown(fd, *owner)
    _drop_xattrs(fd)
    os.fchmod(fd, mode)


def _own_other(dir_fd: int, name: str, owner: tuple[int, int]) -> None:
    """A regular file, FIFO or socket: re-owned and re-moded through an O_PATH descriptor."""
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    try:
        info = os.fstat(fd)
        if stat.S_ISLNK(info.st_mode) or stat.S_ISDIR(info.st_mode):
            return  # not what scandir saw: nothing of the session runs, so never reached
        via = f"/proc/self/fd/{fd}"  # the inode itself: an O_PATH fd takes no fchmod
        os.chown(via, *owner)
        if stat.S_ISREG(info.st_mode):
            _drop_xattrs(via)  # first: with an ACL, the group bits of a mode are its mask
        executable = info.st_mode & stat.S_IXUSR and stat.S_ISREG(info.st_mode)
        os.chmod(via, (FILE_MODE | 0o111) if executable else FILE_MODE)
    finally:
        os.close(fd)


def _drop_xattrs(target: int | str) -> None:
    for name in _DROPPED_XATTRS:
        try:
            os.removexattr(target, name)
        except OSError as exc:
            # EPERM: only root may touch security.*; a runner that is not root (nor its
            # session, whose capabilities bwrap drops) can have set no file capability.
            if exc.errno not in (errno.ENODATA, errno.EOPNOTSUPP, errno.EPERM):
                raise


def replace_with_copy(directory: Path, *, max_bytes: int) -> Reclaimed:
    """Replace ``directory`` by a copy of its regular files that the runner writes (blocking).

    The copy is made beside it (``.<name>.copy-<random>``, 0700), then swapped
    in by two renames, and the session's original tree removed (without
    following its symlinks). Call only once no process of the session is left.
    A file whose size would take the copy past ``max_bytes`` is not copied (module
    docstring): the copy never holds more, whatever the files' sizes and links.

    Returns:
        The counts: ``entries`` files and directories copied, ``dropped`` what was not.

    Raises:
        OSError: the copy cannot be written (disk full) or the renames fail; the
            original is then left in place and the partial copy removed.
    """
    token = secrets.token_hex(4)
    copy = directory.with_name(f".{directory.name}.copy-{token}")
    old = directory.with_name(f".{directory.name}.session-{token}")
    done = copy_regular(directory, copy, max_bytes=max_bytes)
    try:
        directory.rename(old)
        copy.rename(directory)
    except BaseException:
        with contextlib.suppress(OSError):
            remove_tree(copy)
        raise
    with contextlib.suppress(OSError):  # a symlink in it is not followed, any depth is removed
        remove_tree(old)
    return done


def copy_regular(source: Path, destination: Path, *, max_bytes: int) -> Reclaimed:
    """Copy the regular files of ``source`` into the new directory ``destination`` (blocking).

    What `replace_with_copy` copies, put elsewhere: a session's log directory
    in its store goes into the batch so (RC-02 blind sessions: the store is
    the session's own file system, with no room for a second copy). The
    same modes, bound and rules: ``destination`` 0700, no symlink followed,
    past ``max_bytes`` nothing more. Call only once no process of the session
    is left.

    Raises:
        FileExistsError: ``destination`` exists.
        OSError: the copy cannot be written; the partial copy is removed.
    """
    done = Reclaimed()
    destination.mkdir(mode=SEALED_DIR_MODE)
    try:
        src = os.open(source, DIR_FLAGS)
        try:
            _copy_dir(src, destination, 1, done, max_bytes)
        finally:
            os.close(src)
    except BaseException:
        with contextlib.suppress(OSError):
            remove_tree(destination)
        raise
    return done


def _copy_dir(src_fd: int, dst: Path, depth: int, done: Reclaimed, max_bytes: int) -> None:
    with os.scandir(src_fd) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                 for e in entries]  # fmt: skip
    for name, is_dir, is_file in names:
        if is_dir and depth < MAX_DEPTH:
            try:
                fd = os.open(name, DIR_FLAGS, dir_fd=src_fd)
            except OSError:
                done.dropped += 1
                continue
            try:
                (dst / name).mkdir(mode=SEALED_DIR_MODE)
                done.entries += 1
                _copy_dir(fd, dst / name, depth + 1, done, max_bytes)
            finally:
                os.close(fd)
        elif is_file and _copy_file(src_fd, name, dst / name, done, max_bytes):
            done.entries += 1
        else:
            done.dropped += 1


def _copy_file(src_fd: int, name: str, target: Path, done: Reclaimed, max_bytes: int) -> bool:
    """Copy one regular file's bytes; False when it is not one after all, or its size would take
    the copy past ``max_bytes`` (nothing written)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=src_fd)  # fmt: skip
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        left = max_bytes - done.copied_bytes
        if not stat.S_ISREG(info.st_mode) or info.st_size > left:
            return False
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                      LOG_FILE_MODE)  # fmt: skip
        try:  # no process of the session is left to grow it; bounded all the same
            while left > 0 and (chunk := os.read(fd, min(_COPY_CHUNK_BYTES, left))):
                left -= len(chunk)
                done.copied_bytes += len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return True
