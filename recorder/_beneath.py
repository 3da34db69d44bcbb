"""Reading a session's file after the session: beneath the workspace, no symlink, bounded.

Every file the transform reads after a session (a produced artifact, a file
a Read named that the session created) is opened here: the workspace is
opened as a directory, then each component of the workspace-relative path
with ``O_NOFOLLOW`` relative to the one before (``openat``), so no symlink is
followed anywhere on the way and nothing outside the workspace is reached
(``..`` never gets here: paths are normalised lexically and must lie
inside). The last component must be a regular file (``fstat`` of the open
descriptor, so what is checked is what is read; ``O_NONBLOCK`` so a FIFO
cannot hang the runner), of at most `MAX_ARTIFACT_BYTES`. Digest and cites
come from one read of that one descriptor.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import posixpath
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MAX_ARTIFACT_BYTES: Final = 64 * 1024 * 1024
"""The largest file read after a session, in bytes. A bigger one keeps its path only, and
the ledger and the prose say so: a session must not make the runner read an 8 TiB sparse
file (docs/recorder.md)."""
READ_BYTES: Final = 1024 * 1024
"""One read of an artifact, in bytes."""
MAX_SESSION_READ_BYTES: Final = 1024 * 1024 * 1024
"""The most all the reads after one session may take, in bytes (a `ReadBudget` its caller
shares between them): about two seconds of hashing here. Without it a session that names
one 64 MiB sparse file under a hundred thousand names (hard links; Write calls of a few
characters each) has the runner hash 6 TB after it: hours of a core, its session never
done. A file past what is left keeps its path only (`Unreadable`)."""


class ReadBudget:
    """What is left of one session's `MAX_SESSION_READ_BYTES`."""

    __slots__ = ("left",)

    def __init__(self, budget: int = MAX_SESSION_READ_BYTES) -> None:
        self.left = budget


class Unreadable(Exception):
    """The file is not read: why, in words, and its size when known (bytes)."""

    def __init__(self, reason: str, size_bytes: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.size_bytes = size_bytes


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What one read of a file gave."""

    digest: str
    """``sha256:<hex>`` of its bytes."""
    size_bytes: int


def _components(relative: str) -> list[str]:
    normal = posixpath.normpath(relative)
    if normal.startswith(("/", "../")) or normal in ("..", "."):
        raise Unreadable("not a file inside the workspace")
    return normal.split("/")


def open_beneath(workspace: Path, relative: str) -> int:
    """A read-only descriptor of the regular file ``relative`` beneath ``workspace``.

    Raises:
        Unreadable: a symlink on the way or at the end, not a regular file, missing, or over
            `MAX_ARTIFACT_BYTES` (the caller closes nothing then).
    """
    parts = _components(relative)
    try:
        fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise Unreadable(f"the workspace cannot be opened ({exc.strerror})") from exc
    try:
        for part in parts[:-1]:
            dir_fd, fd = fd, -1  # _step closes dir_fd, whatever happens
            fd = _step(dir_fd, part, os.O_RDONLY | os.O_DIRECTORY)
        dir_fd, fd = fd, -1
        fd = _step(dir_fd, parts[-1], os.O_RDONLY | os.O_NONBLOCK)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file")
        if info.st_size > MAX_ARTIFACT_BYTES:
            raise Unreadable(f"{info.st_size} bytes, over the {MAX_ARTIFACT_BYTES} read after a "
                             "session", info.st_size)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return fd


def _step(dir_fd: int, name: str, flags: int) -> int:
    """Open ``name`` in ``dir_fd`` without following a symlink; closes ``dir_fd``."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except ValueError as exc:  # a NUL, or a lone surrogate no byte encodes: no file has it
        raise Unreadable("missing after the session") from exc
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (
                exc.errno == errno.ENOTDIR and _is_link(dir_fd, name)):
            raise Unreadable("a symlink, never followed after a session") from exc
        if exc.errno == errno.ENOTDIR:
            raise Unreadable("a component of its path is not a directory") from exc
        if exc.errno == errno.ENOENT:
            raise Unreadable("missing after the session") from exc
        raise Unreadable(f"cannot be opened ({exc.strerror})") from exc
    finally:
        os.close(dir_fd)


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_beneath(workspace: Path, relative: str,
                 on_text: Callable[[str, bool], None] | None = None,
                 budget: ReadBudget | None = None) -> FileFacts:
    """Read ``relative`` beneath ``workspace`` once: its digest, and its text to ``on_text``.

    ``on_text(text, final)`` gets the file decoded as UTF-8 (errors replaced),
    piece by piece, ``final`` True on the last call (for cites). ``budget``: the
    session's (`ReadBudget`), which the file's size is taken from; None: no bound but
    `MAX_ARTIFACT_BYTES`.

    Raises:
        Unreadable: see `open_beneath`; or the file changed size while read; or its
            size is past what is left of ``budget``.
    """
    fd = open_beneath(workspace, relative)
    if budget is not None:
        size = os.fstat(fd).st_size
        if size > budget.left:
            os.close(fd)
            raise Unreadable(f"{size} bytes, past the {MAX_SESSION_READ_BYTES} read after a "
                             "session in all", size)
        budget.left -= size
    hasher = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    size = 0
    try:
        while chunk := os.read(fd, READ_BYTES):
            size += len(chunk)
            if size > MAX_ARTIFACT_BYTES:
                raise Unreadable(f"grew past the {MAX_ARTIFACT_BYTES} bytes read after a "
                                 "session while it was read", size)
            hasher.update(chunk)
            if on_text is not None:
                on_text(decoder.decode(chunk), False)
        if on_text is not None:
            on_text(decoder.decode(b"", final=True), True)
    except OSError as exc:
        raise Unreadable(f"cannot be read ({exc.strerror})") from exc
    finally:
        os.close(fd)
    return FileFacts(digest=f"sha256:{hasher.hexdigest()}", size_bytes=size)
