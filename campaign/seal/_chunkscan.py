"""Searching a large file for names in bounded memory: overlapping windows of its bytes.

The seal (`campaign.seal._sealbig`) reads a file over `LARGE_FILE_BYTES` in chunks of
`CHUNK_BYTES`, never whole (docs/sealing.md, "Large files"). Names are searched
in windows: each window is the previous window's last `overlap` bytes followed
by the next chunk, so any occurrence no longer than ``overlap - 4`` bytes lies,
with the two bytes either side that its word boundaries look at, wholly inside
one window. Rule (each occurrence reported once, in file order): window k
reports the occurrences that *start* in ``[lo_k, cut_k)``, where ``cut_k`` is
two bytes past the start of window k+1 and ``lo_k`` is ``cut_{k-1}`` (0 for
the first window); with ``overlap >= longest + 4`` that occurrence ends at
least two bytes before window k's end, so its boundaries were seen. A
naming longer than the overlap (a title whose words are split by a run of
white space longer than the overlap, say) is not guaranteed to be seen; the
overlap is at least `OVERLAP_BYTES` (64 KiB), far above any name.

Line numbers are counted across windows, so a line longer than a window
costs nothing more than its bytes read once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from campaign.corpus import CHUNK_BYTES as CHUNK_BYTES
from campaign.corpus import LARGE_FILE_BYTES as LARGE_FILE_BYTES

from ._names import Naming, Text

OVERLAP_BYTES: Final = 64 << 10
"""The least overlap (bytes) of two windows: far above the longest name of any document."""
O_READ: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How the seal opens every corpus and workspace file it reads: never through a link."""
BINARY_SNIFF_BYTES: Final = 8192
"""A NUL byte in this many leading bytes marks a file binary (the heuristic of git and grep)."""
EXCERPT_CHARS: Final = 100
"""How much of a deciding line ``--explain`` shows."""


def shown_line(line: bytes) -> str:
    """The deciding line ``line`` as ``--explain`` shows it: decoded (bad bytes replaced),
    white space folded to single spaces, cut to `EXCERPT_CHARS` characters with ``...``."""
    text = " ".join(line.decode("utf-8", "replace").split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3] + "..."


def read_chunks(fd: int, *, offset: int = 0) -> Iterator[bytes]:
    """The bytes of the open file ``fd`` from ``offset`` to its end, `CHUNK_BYTES` at a time.

    ``pread``, so the descriptor's offset is left alone. Raises OSError from ``pread``.
    """
    while chunk := os.pread(fd, CHUNK_BYTES, offset):
        offset += len(chunk)
        yield chunk


def _lookahead(chunks: Iterable[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Each chunk (empty ones dropped) with True for the last one."""
    held: bytes | None = None
    for chunk in chunks:
        if not chunk:
            continue
        if held is not None:
            yield held, False
        held = chunk
    if held is not None:
        yield held, True


class Found:
    """One occurrence found by `scan`: the naming at absolute byte offsets, and its lines."""

    __slots__ = ("excerpt", "first_line", "last_line", "naming")

    def __init__(self, naming: Naming, first_line: int, last_line: int, excerpt: bytes) -> None:
        self.naming = naming
        """``how`` and absolute ``start``/``end`` (bytes, end exclusive) in the whole file."""
        self.first_line = first_line
        """1-based line holding ``naming.start``."""
        self.last_line = last_line
        """1-based line holding the naming's last byte."""
        self.excerpt = excerpt
        """The bytes of the first line around the naming (cut at the window's edges)."""


def scan(chunks: Iterable[bytes], search: Callable[[Text], Iterable[Naming]], *,
         longest: int = 0, first: bool = False) -> Iterator[Found]:
    """Every occurrence ``search`` finds in the concatenation of ``chunks``, in file order.

    Args:
        chunks: the file's bytes, in order (each at most a few MiB).
        search: the occurrences in one window's `Text` (offsets relative to it).
        longest: the longest name searched for (bytes); the overlap is at
            least this + 4.
        first: stop after the window that holds the first occurrence.

    Memory: one window (a chunk plus the overlap) and its lowered copy.
    """
    overlap = max(OVERLAP_BYTES, longest + 4)
    tail = b""
    base = 0  # absolute offset of the window's first byte
    lines = 0  # newlines before the window
    lo = 0
    for chunk, last in _lookahead(_at_least(chunks, 2 * overlap)):
        window = tail + chunk
        cut = len(window) if last else len(window) - overlap + 2
        text = Text(window)
        hits = sorted((n for n in search(text) if lo <= n.start < cut), key=lambda n: n.start)
        for n in hits:
            first_line = lines + window.count(b"\n", 0, n.start) + 1
            last_line = first_line + window.count(b"\n", n.start, max(n.end - 1, n.start))
            begin = window.rfind(b"\n", 0, n.start) + 1
            stop = window.find(b"\n", n.start)
            excerpt = window[begin : stop if stop >= 0 else len(window)][:400]
            yield Found(Naming(n.how, base + n.start, base + n.end), first_line, last_line,
                        excerpt)
        if hits and first:
            return
        if last:
            return
        keep = len(window) - overlap
        lines += window.count(b"\n", 0, keep)
        base += keep
        tail = window[keep:]
        lo = 2


def _at_least(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    """``chunks`` joined so that each, except maybe the last, holds at least ``size`` bytes."""
    pending: list[bytes] = []
    held = 0
    for chunk in chunks:
        pending.append(chunk)
        held += len(chunk)
        if held >= size:
            yield b"".join(pending)
            pending, held = [], 0
    if pending:
        yield b"".join(pending)


def skip_ranges(chunks: Iterable[bytes], drops: list[tuple[int, int]]) -> Iterator[bytes]:
    """``chunks`` without the bytes of ``drops`` (sorted, disjoint ``[start, end)`` offsets)."""
    at = 0
    index = 0
    for chunk in chunks:
        begin, end = at, at + len(chunk)
        pos = begin
        while index < len(drops) and drops[index][0] < end:
            start, stop = drops[index]
            if start > pos:
                yield chunk[pos - begin : start - begin]
            pos = max(pos, min(stop, end))
            if stop > end:
                break
            index += 1
        if pos < end:
            yield chunk[pos - begin :]
        at = end
