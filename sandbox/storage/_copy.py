"""Copy a finished session's tree out of its store into the batch, trusting nothing in it.

Rule: what a session wrote is untrusted (RC-02, disk bound). The copy

* never follows a symlink: each directory is opened relative to its parent
  with ``O_NOFOLLOW``, each file likewise and checked with ``fstat``; a
  symlink is recreated as a symlink with its target text unchanged, never
  resolved, never read through;
* copies directories and regular files only: FIFOs, sockets and device
  nodes are listed in the report (`Skipped`), never opened (a FIFO would block);
* is sparse: only a file's data segments (``SEEK_DATA``/``SEEK_HOLE``,
  lseek(2)) are read and written, and the copy is truncated to the file's
  size, so a 16 TiB sparse file costs its written blocks, not 16 TiB;
* copies at most ``max_bytes`` bytes of data in all: a file whose data would
  pass it is not copied (listed, with its data bytes), and the walk goes on;
* holds two directories open at any depth: it descends by ``openat(name)``
  and comes back by ``openat("..")`` (checked against the directory it left),
  iteratively, so a tree nested past Python's recursion limit, or past the
  open-file limit, is copied;
* gives everything the runner's owner and the modes `sandbox.storage._reclaim` gives a
  reclaimed workspace (directories 0755, files 0644, or 0755 with an execute
  bit): the findings checker, which reads as the session user, still can.

Names are taken as the kernel gives them (``str`` with ``surrogateescape``:
a name that is not UTF-8 is copied byte for byte). Call it once no process of
the session is left: a race with a writer is not guarded against, only links.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from .._hostfs import DIR_FLAGS
from ._reclaim import DIR_MODE, FILE_MODE

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["CopyReport", "SkipReason", "Skipped", "copy_out"]

SkipReason = Literal["fifo", "socket", "device", "over-max-bytes", "unreadable"]
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK_BYTES: Final = 1024 * 1024
_OTHER: Final[tuple[tuple[int, SkipReason], ...]] = (
    (stat.S_IFIFO, "fifo"), (stat.S_IFSOCK, "socket"), (stat.S_IFCHR, "device"),
    (stat.S_IFBLK, "device"))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Skipped:
    """One entry of the source that the copy does not hold.

    Attributes:
        path: Relative to the source, ``/``-separated; ``os.fsencode(path)`` gives its bytes.
        reason: Why: a FIFO, socket or device node; a file whose data would pass
            ``max_bytes``; or one the runner could not open.
        size_bytes: For a file, its data in bytes (what the copy would have cost); else 0.
    """

    path: str
    reason: SkipReason
    size_bytes: int = 0


@dataclass(slots=True)
class CopyReport:
    """What `copy_out` copied (counts of entries, bytes of data) and what it left out.

    Attributes:
        files: Regular files copied.
        directories: Directories made, the top one excepted.
        symlinks: Symlinks recreated (their target text unchanged).
        bytes_copied: Bytes of data written, holes excepted; at most ``max_bytes``.
        skipped: The entries not copied, in the order met.
    """

    files: int = 0
    directories: int = 0
    symlinks: int = 0
    bytes_copied: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def bytes_not_copied(self) -> int:
        """Bytes of data of the files left out for ``max_bytes``."""
        return sum(s.size_bytes for s in self.skipped if s.reason == "over-max-bytes")


def copy_out(source: Path, destination: Path, *, max_bytes: int) -> CopyReport:
    """Copy the tree ``source`` to the new directory ``destination`` (blocking; module docstring).

    Args:
        source: The session's directory in its store (a directory, not a symlink).
        destination: Where the copy goes; must not exist. Made 0755, the runner's.
        max_bytes: Bytes of file data the copy may write in all.

    Returns:
        The counts and the skipped entries (`CopyReport`).

    Raises:
        ValueError: ``max_bytes`` is negative.
        FileExistsError: ``destination`` exists.
        OSError: ``source`` is not a directory (``ELOOP`` for a symlink), the copy cannot
            be written (disk full), or the tree changed under the walk.
    """
    if max_bytes < 0:
        raise ValueError(f"max_bytes must not be negative, got {max_bytes}")
    report = CopyReport()
    fds = [os.open(source, DIR_FLAGS)]
    try:
        os.mkdir(destination, DIR_MODE)
        fds.append(os.open(destination, DIR_FLAGS))
        os.fchmod(fds[1], DIR_MODE)
        _walk(fds, report, max_bytes)
    finally:
        for fd in fds:
            os.close(fd)
    return report


@dataclass(slots=True)
class _Frame:
    path: str
    """Relative to the source, for the report ("" at the top)."""
    subdirs: list[str]
    """Names not entered yet."""
    ident: tuple[int, int]
    """(st_dev, st_ino) of this source directory, to check a return by ".."."""


def _walk(fds: list[int], report: CopyReport, max_bytes: int) -> None:
    """Copy below the open pair ``fds`` ([source, copy]); the pair is replaced as it moves."""
    stack = [_Frame("", _copy_entries(fds, "", report, max_bytes), _ident(fds[0]))]
    while stack:
        frame = stack[-1]
        if frame.subdirs:
            name = frame.subdirs.pop()
            path = f"{frame.path}/{name}" if frame.path else name
            if _move(fds, name, name, report, path):
                report.directories += 1
                stack.append(_Frame(path, _copy_entries(fds, path, report, max_bytes),
                                    _ident(fds[0])))  # fmt: skip
            continue
        stack.pop()
        if stack:
            _move(fds, "..", None, report, frame.path)
            if _ident(fds[0]) != stack[-1].ident:
                raise OSError(errno.EXDEV, f"{frame.path!r} moved during the copy")


def _move(fds: list[int], name: str, made: str | None, report: CopyReport, path: str) -> bool:
    """Replace the pair by its ``name`` (".." going up; ``made``: the copy's new directory)."""
    try:
        src = _open(fds[0], name, DIR_FLAGS, stat.S_IRWXU)
    except OSError:
        report.skipped.append(Skipped(path, "unreadable"))
        return False
    try:
        if made is not None:
            os.mkdir(made, DIR_MODE, dir_fd=fds[1])
        dst = os.open(name, DIR_FLAGS, dir_fd=fds[1])
    except BaseException:
        os.close(src)
        raise
    for i, fd in enumerate((src, dst)):
        os.close(fds[i])
        fds[i] = fd
    if made is not None:
        os.fchmod(dst, DIR_MODE)
    return True


def _copy_entries(fds: list[int], path: str, report: CopyReport, max_bytes: int) -> list[str]:
    """Copy every entry of the pair's source that is not a directory; return the directories."""
    with os.scandir(fds[0]) as entries:
        listed = [(e.name, e.stat(follow_symlinks=False).st_mode) for e in entries]
    subdirs = []
    for name, mode in listed:
        where = f"{path}/{name}" if path else name
        if stat.S_ISDIR(mode):
            subdirs.append(name)
        elif stat.S_ISLNK(mode):
            os.symlink(os.readlink(name, dir_fd=fds[0]), name, dir_fd=fds[1])
            report.symlinks += 1
        elif stat.S_ISREG(mode):
            _copy_file(fds, name, where, report, max_bytes)
        else:
            kinds = [r for t, r in _OTHER if stat.S_IFMT(mode) == t]
            report.skipped.append(Skipped(where, kinds[0] if kinds else "device"))
    return subdirs


def _copy_file(fds: list[int], name: str, path: str, report: CopyReport, max_bytes: int) -> None:
    try:
        fd = _open(fds[0], name, _FILE_FLAGS, stat.S_IRUSR | stat.S_IWUSR)
    except OSError:
        report.skipped.append(Skipped(path, "unreadable"))
        return
    try:
        info = os.fstat(fd)
        segments = list(_data_segments(fd, info.st_size)) if stat.S_ISREG(info.st_mode) else []
        data = sum(end - start for start, end in segments)
        if not stat.S_ISREG(info.st_mode) or report.bytes_copied + data > max_bytes:
            reason: SkipReason = "over-max-bytes" if stat.S_ISREG(info.st_mode) else "unreadable"
            report.skipped.append(Skipped(path, reason, data))
            return
        mode = (FILE_MODE | 0o111) if info.st_mode & stat.S_IXUSR else FILE_MODE
        out = os.open(name, _NEW_FLAGS, mode, dir_fd=fds[1])
        try:
            os.fchmod(out, mode)
            for start, end in segments:
                report.bytes_copied += _copy_range(fd, out, start, end)
            os.ftruncate(out, info.st_size)
        finally:
            os.close(out)
        report.files += 1
    finally:
        os.close(fd)


def _ident(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _data_segments(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The (start, end) byte ranges of ``fd`` that hold data; the rest are holes."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data past offset
                return
            raise
        offset = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        yield start, offset


def _copy_range(src: int, dst: int, start: int, end: int) -> int:
    done = 0
    while start + done < end:
        chunk = os.pread(src, min(_CHUNK_BYTES, end - start - done), start + done)
        if not chunk:  # shorter than it said: nothing writes it any more
            break
        view = memoryview(chunk)
        while view:
            written = os.pwrite(dst, view, start + done)
            view = view[written:]
            done += written
    return done


def _open(dir_fd: int, name: str, flags: int, owner_bits: int) -> int:
    """Open ``name`` without following a symlink; one of the runner's that the session made
    unreadable gets ``owner_bits`` first (through an O_PATH descriptor, never a link)."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            if stat.S_ISLNK(os.fstat(handle).st_mode):
                raise
            os.chmod(f"/proc/self/fd/{handle}", owner_bits)
        finally:
            os.close(handle)
        return os.open(name, flags, dir_fd=dir_fd)
