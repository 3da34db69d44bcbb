"""The listing of a session's tree that passed its writes limit: names and sizes, no bytes.

Rule (docs/storage.md "Past the writes limit"): a session that ended
``limit-exceeded`` for its writes keeps, in the batch, what its workspace held
(every entry's path, kind, size and allocated bytes) but none of its data, so
nothing it wrote past its limit remains. The walk trusts nothing in the tree,
as `sandbox.storage.copy_out` does: no symlink is followed (each directory is
opened with ``O_NOFOLLOW`` relative to its parent, and left by ``..`` checked
against the one it came from), nothing but directories is opened (a FIFO
never blocks it), and it holds one directory open at any depth, iteratively.
The listing itself is bounded (`MAX_ENTRIES`, `MAX_PATH_CHARS`): past either,
entries are counted, not named.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from .._hostfs import DIR_FLAGS

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MAX_ENTRIES", "MAX_PATH_CHARS", "Entry", "EntryKind", "Listing", "list_tree"]

EntryKind = Literal["file", "directory", "symlink", "fifo", "socket", "device"]
MAX_ENTRIES: Final = 100_000
"""Entries named at most. A store has `store_size`'s inodes: twice the sealed files, and
16,384 more or one per 4 KiB of the writes limit (100,000 at about 390 MiB); past this the
entries are counted, so a tree made to swell the listing costs the batch a bounded file."""
MAX_PATH_CHARS: Final = 8 << 20
"""Characters of path named at most in all (a tree nested thousands deep has long paths)."""
_KINDS: Final[tuple[tuple[int, EntryKind], ...]] = (
    (stat.S_IFREG, "file"), (stat.S_IFDIR, "directory"), (stat.S_IFLNK, "symlink"),
    (stat.S_IFIFO, "fifo"), (stat.S_IFSOCK, "socket"))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of the tree.

    Attributes:
        path: Relative to the tree, ``/``-separated, as the kernel gives it
            (``str`` with ``surrogateescape``).
        kind: What it is (a block or character device is ``device``).
        size_bytes: ``st_size``: for a file its length (holes included), for a
            symlink its target's length, in bytes.
        data_bytes: ``st_blocks * 512``: what it took on disk, in bytes.
    """

    path: str
    kind: EntryKind
    size_bytes: int
    data_bytes: int


@dataclass(slots=True)
class Listing:
    """What `list_tree` saw.

    Attributes:
        entries: The entries named, in the order met (a directory before what it holds).
        unlisted: Entries seen past `MAX_ENTRIES` or `MAX_PATH_CHARS`, counted only.
        unreadable: Directories the runner could not open: what they hold is not listed.
        data_bytes: ``data_bytes`` of every entry seen, named or not.
    """

    entries: list[Entry] = field(default_factory=list)
    unlisted: int = 0
    unreadable: int = 0
    data_bytes: int = 0
    _chars: int = 0

    def as_record(self) -> dict[str, object]:
        """The listing as JSON-ready data: ``entries`` (objects of `Entry`'s fields),
        ``unlisted``, ``unreadable``, ``data_bytes`` (docs/batch.md, ``workspace.listing.json``)."""
        return {"entries": [{"path": e.path, "kind": e.kind, "size_bytes": e.size_bytes,
                             "data_bytes": e.data_bytes} for e in self.entries],
                "unlisted": self.unlisted, "unreadable": self.unreadable,
                "data_bytes": self.data_bytes}  # fmt: skip


@dataclass(slots=True)
class _Frame:
    path: str
    subdirs: list[str]
    ident: tuple[int, int]


def list_tree(source: Path, *, max_entries: int = MAX_ENTRIES,
              max_path_chars: int = MAX_PATH_CHARS) -> Listing:  # fmt: skip
    """List the tree ``source`` without reading a byte of any file (blocking; module docstring).

    Call once no process of the session is left (a race with a writer is not
    guarded against, only links).

    Args:
        source: The session's directory in its store (a directory, not a symlink).
        max_entries: Entries named at most.
        max_path_chars: Characters of path named at most in all.

    Returns:
        The `Listing`.

    Raises:
        OSError: ``source`` is not a directory (``ELOOP`` for a symlink), or the
            tree changed under the walk (``EXDEV``).
    """
    listing = Listing()
    fd = os.open(source, DIR_FLAGS)
    try:
        stack = [_Frame("", _entries(fd, "", listing, max_entries, max_path_chars), _ident(fd))]
        while stack:
            frame = stack[-1]
            if frame.subdirs:
                name = frame.subdirs.pop()
                path = f"{frame.path}/{name}" if frame.path else name
                try:
                    below = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError:
                    listing.unreadable += 1
                    continue
                os.close(fd)
                fd = below
                stack.append(_Frame(path, _entries(fd, path, listing, max_entries,
                                                   max_path_chars), _ident(fd)))  # fmt: skip
                continue
            stack.pop()
            if stack:
                above = os.open("..", DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = above
                if _ident(fd) != stack[-1].ident:
                    raise OSError(errno.EXDEV, f"{frame.path!r} moved during the listing")
    finally:
        os.close(fd)
    return listing


def _entries(fd: int, path: str, listing: Listing, max_entries: int,
             max_path_chars: int) -> list[str]:  # fmt: skip
    """Add the entries of the open directory ``fd`` to ``listing``; return its directories."""
    subdirs = []
    with os.scandir(fd) as found:
        for item in found:
            info = item.stat(follow_symlinks=False)
            where = f"{path}/{item.name}" if path else item.name
            kinds = [k for t, k in _KINDS if stat.S_IFMT(info.st_mode) == t]
            kind: EntryKind = kinds[0] if kinds else "device"
            data = info.st_blocks * 512
            listing.data_bytes += data
            if len(listing.entries) < max_entries and listing._chars + len(where) <= max_path_chars:
                listing.entries.append(Entry(where, kind, info.st_size, data))
                listing._chars += len(where)
            else:
                listing.unlisted += 1
            if kind == "directory":
                subdirs.append(item.name)
    return subdirs


def _ident(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino
