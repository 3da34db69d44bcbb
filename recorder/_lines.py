"""Pull-based, bounded framing of the harness's stdout into lines.

Rule sources: BC-03 (line cap), docs/bench.md (memory) (pull-based) and
docs/confinement.md "Limits" (the bound on all bytes received, ``--max-stdout``).

Lines are framed on the byte 0x0A only and stay bytes: a chunk is never
decoded, so a multi-byte UTF-8 character split across reads, or a U+2028
inside a JSON string, survives; the consumer decodes whole lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

from sandbox import STDOUT_PIPE_BYTES

from ._errors import LineTooLong, StdoutTooLarge

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Self

__all__ = ["MAX_LINE_BYTES", "READ_CHUNK_BYTES", "LineReader", "LineTooLong", "StdoutTooLarge"]

MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""Cap on one stdout line, in bytes, newline excluded.

Real stream-json lines pass 1 MiB when a tool returns an image or a large
file (the line holds the content twice: BC-03 is 1.4 MB), so the cap sits
far above them; it exists so a runaway child cannot take unbounded memory.
Raise it only with a measured line that needs it.
"""

READ_CHUNK_BYTES: Final = STDOUT_PIPE_BYTES
"""Bytes asked for per read of stdout: the capacity `sandbox` asks for the child's stdout
pipe, so one read empties a full pipe (the bound on what the reader holds besides the
current line)."""

_NEWLINE: Final = b"\n"


@final
class LineReader:
    """Pull newline-terminated lines from a byte source, one at a time.

    ``async for line in reader`` yields each line without its newline byte.
    ``receive`` is called only when the consumer asks for a line that is not
    buffered yet, so a slow consumer leaves the bytes in the pipe and the
    writer blocks (backpressure). A final fragment without a newline is not a
    line: after exhaustion it is in `tail` (a cut stream, the state
    ``truncated``).

    Memory: at most one chunk returned by ``receive`` plus the current line
    (and, while a line spans chunks, the earlier lines of the chunk it began
    in), and the current line never grows past ``max_line_bytes``.
    ``bytes_received - bytes_delivered`` is exactly what is held of the line.

    Backend-neutral (trio and asyncio): it awaits only ``receive``.
    **Cancellation:** a cancelled ``receive`` propagates; bytes already held
    stay held, so iteration may continue afterwards.

    **Stream bound:** with ``max_stream_bytes``, every chunk is counted in
    `bytes_received` the moment ``receive`` returns it, before any framing;
    once the count passes the bound, iteration fails with `StdoutTooLarge`
    and none of that chunk is framed, so a harness that prints without end
    costs one chunk past the bound, never a line's parse.

    Raises (from iteration):
        LineTooLong: a line would exceed ``max_line_bytes``; raised before the
            bytes past the cap are appended, with the 1-based line number.
            Iteration stops for good afterwards.
        StdoutTooLarge: the bytes received passed ``max_stream_bytes``; raised
            before the chunk that passed it is framed. Iteration stops for good.
        Whatever ``receive`` raises, unchanged.
    """

    def __init__(
        self,
        receive: Callable[[], Awaitable[bytes]],
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_stream_bytes: int | None = None,
    ) -> None:
        """Wrap ``receive``, which returns the next chunk of bytes, ``b""`` at end of stream.

        ``max_stream_bytes`` bounds all bytes received (None: no bound).

        Raises:
            ValueError: a bound below 1.
        """
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be at least 1, but got {max_line_bytes}")
        if max_stream_bytes is not None and max_stream_bytes < 1:
            raise ValueError(f"max_stream_bytes must be at least 1, but got {max_stream_bytes}")
        self._receive = receive
        self._max_line_bytes = max_line_bytes
        self._max_stream_bytes = max_stream_bytes
        self._chunk = b""
        self._pos = 0
        self._parts: list[memoryview] = []  # the current line's bytes from earlier chunks
        self._partial_len = 0  # their total length
        self._eof = False
        self._failed = False
        self.tail: bytes | None = None
        """After exhaustion: the final fragment that had no newline; None if none."""
        self.bytes_received = 0
        """Bytes returned by ``receive`` so far."""
        self.bytes_delivered = 0
        """Bytes handed on as lines, each counted with the newline that ended it."""
        self.lines = 0
        """Lines yielded so far."""

    @property
    def pending(self) -> bytes:
        """The bytes held now and not yet delivered: the start of a line not yet ended."""
        return b"".join([*self._parts, self._chunk[self._pos :]])

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        if self._failed:
            raise StopAsyncIteration
        while True:
            line = self._take_line()
            if line is not None:
                return line
            if self._eof:
                raise StopAsyncIteration
            chunk = await self._receive()
            self.bytes_received += len(chunk)
            bound = self._max_stream_bytes
            if bound is not None and self.bytes_received > bound:
                self._failed = True
                raise StdoutTooLarge(received_bytes=self.bytes_received, limit_bytes=bound)
            if chunk:
                self._chunk, self._pos = chunk, 0
            else:
                self._finish()

    def _take_line(self) -> bytes | None:
        """Return the next complete line from what is held, or None (partial kept).

        A line that spans chunks is kept as the list of its pieces, views of
        the chunks (no copy), and joined once, when its newline arrives: each
        byte is copied once, however many reads the line took (a bytearray that
        grows copies it again at every reallocation, and once more into the
        line; a copy of each piece was a second copy of most of a 3 MB line).
        The views keep at most one chunk's delivered lines alive besides the line.
        """
        chunk, pos = self._chunk, self._pos
        if pos >= len(chunk):
            return None
        end = chunk.find(_NEWLINE, pos)
        if end < 0:
            self._check_size(self._partial_len + len(chunk) - pos, complete=False)
            self._parts.append(memoryview(chunk)[pos:])
            self._partial_len += len(chunk) - pos
            self._chunk, self._pos = b"", 0
            return None
        self._check_size(self._partial_len + end - pos, complete=True)
        if self._parts:
            self._parts.append(memoryview(chunk)[pos:end])
            line = b"".join(self._parts)
            self._parts.clear()
            self._partial_len = 0
        else:
            line = chunk[pos:end]
        self._pos = end + 1
        self.bytes_delivered += len(line) + 1
        self.lines += 1
        return line

    def _check_size(self, size_bytes: int, *, complete: bool) -> None:
        if size_bytes > self._max_line_bytes:
            self._failed = True
            raise LineTooLong(
                line_number=self.lines + 1,
                size_bytes=size_bytes,
                limit_bytes=self._max_line_bytes,
                complete=complete,
            )

    def _finish(self) -> None:
        self._eof = True
        self.tail = b"".join(self._parts) if self._parts else None
        self._parts = []
        self._partial_len = 0
