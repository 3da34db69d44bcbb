"""Proved ``## Events`` items of one arm, kept in a file without a name, not in memory.

A transcript that grows is rewritten whole at every render, so each render
needs the block item of every recorded event. Kept in memory with its event,
that would be about 1 kB per event for the whole batch; an `ItemSpool` keeps
each item, dumped and proved once (`_events.item_of`),
as UTF-8 bytes in a temporary file that has no name (``O_TMPFILE``: it goes
when it is closed or the runner dies), and in memory only where it lies: one
int per event (start and length packed), found by a reference the caller
chooses (the journal uses the ledger offset of the event's final line, which
names one line of an append-only file for good).
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Final, final

from ._events import item_of

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from ._models import Event

_LENGTH_BITS: Final = 32
"""Low bits of a packed position that hold the item's length in bytes (items stay far
below 4 GiB: one event's calls and artifacts hold digests, never the bytes)."""


@final
class ItemSpool:
    """The proved items of one arm's events, by reference, on disk.

    Args:
        directory: Where the unnamed file lives (the batch's ``transcripts/``:
            the items are the batch's data, 0600 like every temporary file).

    Not thread-safe: use one from one thread at a time. Memory: one dict entry
    and two ints per reference (about 100 bytes), whatever the events hold.

    Raises:
        OSError: the file cannot be made (``__init__``), written (`add`) or read (`item`).
    """

    def __init__(self, directory: Path) -> None:
        self._file = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115 (closed by close)
        self._end = 0
        self._where: dict[int, int] = {}
        """Reference -> start << `_LENGTH_BITS` | length, in the file."""

    def __contains__(self, ref: int) -> bool:
        return ref in self._where

    def __len__(self) -> int:
        return len(self._where)

    def add(self, ref: int, event: Event) -> None:
        """Dump and prove ``event``'s item and keep it under ``ref`` (replacing any there).

        Raises:
            TranscriptUnproven: the item does not read back as ``event`` (a bug).
            OSError: the host refused the write (disk full); nothing is kept under ``ref``.
        """
        data = item_of(event).encode("utf-8")
        written = 0
        while written < len(data):
            written += os.pwrite(self._file.fileno(), data[written:], self._end + written)
        self._where[ref] = self._end << _LENGTH_BITS | len(data)
        self._end += len(data)

    def item(self, ref: int) -> bytes:
        """The item kept under ``ref``, as written (UTF-8).

        Raises:
            KeyError: nothing is kept under ``ref``.
            OSError: the file could not be read whole.
        """
        where = self._where[ref]
        start, length = where >> _LENGTH_BITS, where & ((1 << _LENGTH_BITS) - 1)
        data = os.pread(self._file.fileno(), length, start)
        if len(data) != length:
            raise OSError(f"the item spool gave {len(data)} of {length} bytes at {start}")
        return data

    def keep_only(self, refs: Iterable[int]) -> None:
        """Forget every reference not in ``refs`` (an event a later final replaced).

        Its bytes stay in the file (the file holds at most every item ever proved,
        as the ledger holds every event); only the memory is given back.
        """
        self._where = {ref: self._where[ref] for ref in refs}

    def close(self) -> None:
        """Close the file (its space goes back to the file system); idempotent."""
        self._file.close()
        self._where = {}

    def __enter__(self) -> ItemSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
