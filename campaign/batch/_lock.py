"""One runner per batch: an exclusive flock on ``<batch>/.lock``, naming its holder.

Two runners writing one ledger would both name a session ``r1`` and delete
each other's running workspace; so run, demo, resume and record hold the
lock for as long as they write the batch, and a second one stops (exit 2)
before it writes anything. The holder writes its pid into the file, so
``status`` can say which process is running the batch. flock dies with its
process: a killed runner leaves nothing to clean.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pathlib import Path

LOCK_NAME: Final = ".lock"
"""The lock file; not content of the batch (an otherwise empty directory is still new)."""


class BatchBusy(Exception):
    """Another process holds the batch's lock (exit 2)."""

    def __init__(self, batch: Path, pid: int | None) -> None:
        who = f"process {pid}" if pid else "another process"
        super().__init__(f"batch {batch} is in use by {who} (headwater-campaign holds it while "
                         "it writes the batch); wait for it to end")
        self.batch = batch
        self.pid = pid


class BatchLock:
    """The held lock of one batch; release with `close` (or let the process end)."""

    def __init__(self, batch: Path) -> None:
        """Take the lock without waiting.

        Raises:
            BatchBusy: another process holds it.
            OSError: the lock file cannot be created.
        """
        self.batch = batch
        self._fd = os.open(batch / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o640)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            pid = _read_pid(self._fd)
            os.close(self._fd)
            raise BatchBusy(batch, pid) from exc
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def close(self) -> None:
        """Release the lock; idempotent."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> BatchLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lock_holder(batch: Path) -> int | None:
    """The pid of the process that holds ``batch``'s lock now, or None when nobody does.

    Returns 0 when the lock is held but the holder wrote no pid (yet).
    """
    try:
        fd = os.open(batch / LOCK_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    raw = os.pread(fd, 32, 0).strip()
    return int(raw) if raw.isdigit() else None
