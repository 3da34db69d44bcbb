"""Errors raised by the recorder.

* RecorderError            - base class of every error the recorder raises
  x LineTooLong            - a harness stdout line exceeded the reader's cap (recorder._lines)
  x StdoutTooLarge         - the harness printed more than its stdout bound (recorder._lines)

Other recorder modules add their own subclasses here; callers above the
recorder catch these types, never ``OSError``. A child that cannot be started is
`sandbox.SpawnFailed`, raised by the process layer the driver reads from.
"""

from __future__ import annotations


class RecorderError(Exception):
    """Base class for every error raised by `recorder`."""


class LineTooLong(RecorderError):
    """A stdout line of the harness exceeded the line cap (BC-03).

    Raised by `recorder._lines.LineReader` before it buffers past the cap;
    `recorder._driver.drive_child` turns it into ``end="line-too-long"``
    and keeps it in the result. The session is never resumed past the line:
    a silent skip would hide a call.

    Attributes:
        line_number: 1-based number of the offending line in the stream.
        size_bytes: Bytes of that line seen so far (without the newline). When
            ``complete`` is False the line had not ended yet: it is at least
            this long.
        limit_bytes: The cap that was exceeded.
        complete: True when the line's newline had been seen (exact size).
    """

    def __init__(
        self, *, line_number: int, size_bytes: int, limit_bytes: int, complete: bool
    ) -> None:
        size = f"{size_bytes} bytes" if complete else f"at least {size_bytes} bytes"
        super().__init__(
            f"stdout line {line_number} is {size}, over the line cap of {limit_bytes} bytes"
        )
        self.line_number = line_number
        self.size_bytes = size_bytes
        self.limit_bytes = limit_bytes
        self.complete = complete


class StdoutTooLarge(RecorderError):
    """The harness printed more bytes on stdout than the session's bound (``--max-stdout``).

    Raised by `recorder._lines.LineReader` as soon as the bytes received from
    the pipe pass the bound, before any of the chunk that passed it is framed
    into lines; `recorder._driver.drive_child` turns it into
    ``end="stdout-limit"`` and the session is ``limit-exceeded``
    (docs/confinement.md, "Limits").

    Attributes:
        received_bytes: Bytes received from the pipe so far, the last chunk included.
        limit_bytes: The bound that was passed, bytes.
    """

    def __init__(self, *, received_bytes: int, limit_bytes: int) -> None:
        super().__init__(f"received {received_bytes} bytes on stdout, over the bound of "
                         f"{limit_bytes} bytes")
        self.received_bytes = received_bytes
        self.limit_bytes = limit_bytes
