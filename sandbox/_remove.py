"""Remove a tree a session wrote, however deep it nested it.

Rule: removing what a session left (its config directory, its log tree, a
workspace) ends with the tree gone or an `OSError`, never another exception,
whatever the session made. `shutil.rmtree` recurses once per directory level
(Python 3.11), so a session that nested a thousand directories made it raise
`RecursionError`, even with ``ignore_errors``, and crashed the runner
(`tests/integration/test_deep_tree_attack.py`). So `remove_tree` walks with a
stack of its own, each directory opened relative to its parent without
following a symlink (a planted link is removed, never entered), and holds at
most `OPEN_DIRS` directories open: a subdirectory deeper than that is moved up
to the top directory (one rename, same filesystem) and removed from there.
The names of one directory are listed once: a directory with many
subdirectories costs one listing, not one per subdirectory.

Call it once no process of the session is left (the cgroup is empty, or the
runner that ran it is dead): a tree that changes meanwhile may be left partly
in place (an `OSError`), but nothing outside it is touched.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from typing import TYPE_CHECKING, Final

from ._hostfs import DIR_FLAGS

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["OPEN_DIRS", "remove_tree"]

OPEN_DIRS: Final = 32
"""Directories a removal holds open at once, below the top one."""
_NOT_A_DIR: Final = (errno.ENOTDIR, errno.ELOOP)


def remove_tree(path: Path) -> None:
    """Remove ``path`` and everything under it (blocking); a missing path is not an error.

    A symlink or file at ``path`` is unlinked. Directories the session made
    unreadable or unwritable (a runner that is not root) are given back their
    owner's permissions first.

    Raises:
        OSError: something could not be removed (not: it was already gone).
    """
    try:
        top = _open_dir(None, str(path))
    except OSError as exc:
        if exc.errno not in _NOT_A_DIR:
            raise
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    if top is None:
        return
    try:
        _empty(top)
    finally:
        os.close(top)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)


def _empty(top: int) -> None:
    """Remove everything in the directory ``top`` (module docstring: the walk)."""
    token, moved = secrets.token_hex(4), 0
    # (descriptor, name in the directory above, subdirectories left to remove)
    stack: list[tuple[int, str, list[str]]] = [(top, "", _unlink_files(top))]
    try:
        while stack:
            fd, name, pending = stack[-1]
            if pending:
                child = pending.pop()
                if len(stack) > OPEN_DIRS:  # too deep to hold open: remove it from the top
                    moved += 1
                    up = f".removing-{token}-{moved}"
                    with contextlib.suppress(FileNotFoundError):
                        os.rename(child, up, src_dir_fd=fd, dst_dir_fd=top)
                        stack[0][2].append(up)
                    continue
                try:
                    opened = _open_dir(fd, child)
                except OSError as exc:
                    if exc.errno not in _NOT_A_DIR:
                        raise
                    with contextlib.suppress(FileNotFoundError):  # no longer a directory
                        os.unlink(child, dir_fd=fd)
                    continue
                if opened is not None:
                    stack.append((opened, child, []))
                    stack[-1][2].extend(_unlink_files(opened))
                continue
            stack.pop()
            if stack:
                os.close(fd)
                _rmdir(stack[-1][0], name)
    finally:
        for fd, _, _ in stack[1:]:
            os.close(fd)


def _rmdir(parent: int, name: str) -> None:
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except PermissionError:  # a directory of the runner's it may not write
        os.fchmod(parent, stat.S_IRWXU)
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(name, dir_fd=parent)


def _open_dir(parent: int | None, name: str) -> int | None:
    """Open directory ``name`` (relative to ``parent``) without following a symlink; None when
    it is gone. An unreadable one of the runner's is made 0700 and opened again."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except PermissionError:
        _own(parent, name)
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return None


def _own(parent: int | None, name: str) -> None:
    """Give directory ``name`` back its owner's permissions (through an O_PATH descriptor: a
    symlink put there is never followed)."""
    try:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=parent)  # fmt: skip
    except FileNotFoundError:
        return
    try:
        os.chmod(f"/proc/self/fd/{handle}", stat.S_IRWXU)
    finally:
        os.close(handle)


def _unlink_files(fd: int) -> list[str]:
    """Unlink every entry of directory ``fd`` that is not a directory; return the directories."""
    with os.scandir(fd) as entries:
        listed = [(e.name, _is_dir(e)) for e in entries]
    subdirs = []
    for name, is_dir in listed:
        if is_dir:
            subdirs.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except PermissionError:  # a directory of the runner's it may not write
            os.fchmod(fd, stat.S_IRWXU)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)
        except IsADirectoryError:  # became one meanwhile
            subdirs.append(name)
    return subdirs


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
