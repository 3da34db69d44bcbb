"""A write the host refused (disk full, quota, read-only): told apart from other errors, and
what a user does about it. The batch stops with exit 6 (docs/batch.md "Exit statuses")."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from typing import Final

HOST_REFUSED: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
"""errno values that mean the host refused a write (disk full, quota, read-only): exit 6."""
class HostWriteRefused(Exception):
    """The host refused a write the batch needs (disk full, quota): the batch stops (exit 6).

    The attempt in progress has no final record (it did not end; the host
    stopped it): ``resume`` reruns it, and it does not count against
    ``--retries``.
    """

    def __init__(self, what: str, error: OSError) -> None:
        super().__init__(f"the host refused a write ({what}): {error.strerror or error}")
        self.what = what
        self.error = error


def write_remedy(error: OSError) -> str:
    """What a user does about a refused write before running the command again, in words.

    ``free space`` for a full disk or quota, ``raise the file size limit`` for
    EFBIG, ``make the batch directory writable`` for a read-only file system.
    """
    if error.errno == errno.EROFS:
        where = f"{error.filename} is" if error.filename else "it is"
        return f"make the batch directory writable ({where} on a read-only file system)"
    if error.errno == errno.EFBIG:
        return "raise the file size limit (ulimit -f) the runner was started with"
    return f"free space on the file system of {error.filename}" if error.filename else (
        "free space")


def refused_write(exc: OSError) -> bool:
    """True when ``exc`` says the host refused a write (`HOST_REFUSED`)."""
    return exc.errno in HOST_REFUSED


@contextlib.contextmanager
def host_writes(what: str) -> Iterator[None]:
    """Turn a refused write into `HostWriteRefused`; other OSErrors stay what they are."""
    try:
        yield
    except OSError as exc:
        if refused_write(exc):
            raise HostWriteRefused(what, exc) from exc
        raise
