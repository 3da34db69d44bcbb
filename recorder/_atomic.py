"""Atomic file writes: a reader sees the old file or the new one, never a part.

Every file of a batch directory that is replaced rather than appended
(``plan.yaml``, ``config.yaml``, ``manifest.json``, ``stderr.tail``,
``final.txt``, the transcripts) goes through `write_atomic`: a temporary file in
the same directory, written whole, fsynced, renamed over the target, and the
directory fsynced, so a crash at any instant leaves either version whole.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


def fsync_dir(directory: Path) -> None:
    """fsync ``directory`` so a rename or a new entry in it survives a crash.

    Raises:
        OSError: the directory cannot be opened or synced.
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes | Iterable[bytes], *, mode: int = 0o640,
                 check: Callable[[Path], None] | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    Args:
        path: The target; its directory must exist.
        data: The whole new content, as bytes or as pieces written one after the
            other (a large text encoded a piece at a time is never held encoded whole).
        mode: Permission bits of the new file (batch files are not for other users).
        check: Called with the temporary file once it is written whole and fsynced,
            before it replaces ``path`` (a writer that proves its output by reading it
            back); what it raises leaves ``path`` unchanged.

    Raises:
        OSError: the host refused the write (ENOSPC, EDQUOT, EROFS, ...); ``path``
            is unchanged and the temporary file is removed.
        Exception: whatever iterating ``data`` or ``check`` raised; ``path`` is unchanged
            and the temporary file is removed.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fp:
            for piece in (data,) if isinstance(data, bytes) else data:
                fp.write(piece)
            fp.flush()
            os.fchmod(fp.fileno(), mode)
            os.fsync(fp.fileno())
        if check is not None:
            check(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
