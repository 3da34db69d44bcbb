"""What the gateway reads of a response on its way through: the provider's own metadata.

`ResponseObserver` is fed each chunk as it is relayed (never the response whole) and keeps
only what a ledger row needs (`sandbox.gateway._types.ProviderRequest`): ``message.id``,
``message.model`` and ``usage`` of ``message_start``, ``usage`` and ``delta.stop_reason`` of
each ``message_delta``. Every other event (the text and thinking deltas, which are most of
the bytes) is skipped without being decoded.

Bounded: a stream is read line by line with at most `MAX_LINE_BYTES` held; a longer line
(a big text delta) is skipped as it goes by, its bytes never held. A response that is not a
stream (``application/json``: the CLI's non-streaming fallback, an error) keeps at most
`MAX_JSON_BYTES` and is decoded once it has ended; a longer one is not observed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from ._types import MAX_TEXT, Usage

MAX_LINE_BYTES: Final = 256 * 1024
"""The longest SSE line kept to be read; ``message_start`` and ``message_delta`` are < 2 KiB."""
MAX_JSON_BYTES: Final = 2 * 1024 * 1024
"""The most of a non-streaming response kept to be decoded once it ends."""
_WANTED: Final = (b"message_start", b"message_delta")
_USAGE_FIELDS: Final = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                        "cache_read_input_tokens")
_SPLIT_FIELDS: Final = (("ephemeral_5m_input_tokens", "cache_creation_5m_tokens"),
                        ("ephemeral_1h_input_tokens", "cache_creation_1h_tokens"))


def bounded(value: object) -> str | None:
    """``value`` when it is a string, cut to `MAX_TEXT` characters; else None."""
    return value[:MAX_TEXT] if isinstance(value, str) else None


class ResponseObserver:
    """Reads one response's metadata from its body's chunks, as they are relayed.

    Args:
        content_type: The response's ``content-type``; ``text/event-stream`` is read as a
            stream, ``application/json`` once whole, anything else not at all.
    """

    def __init__(self, content_type: str) -> None:
        kind = content_type.split(";", 1)[0].strip().lower()
        self._stream = kind == "text/event-stream"
        self._json: bytearray | None = bytearray() if kind == "application/json" else None
        self._line = bytearray()
        self._skipping = False
        self._event = b""
        self.message_id: str | None = None
        self.model: str | None = None
        self.stop_reason: str | None = None
        self._usage: dict[str, int] = {}

    @property
    def usage(self) -> Usage | None:
        """The usage read so far (the later event's field replacing the earlier's, `Usage`)."""
        return Usage(**self._usage) if self._usage else None

    def feed(self, chunk: bytes) -> None:
        """One chunk of the body, as it was relayed."""
        if self._stream:
            self._feed_lines(chunk)
        elif self._json is not None:
            if len(self._json) + len(chunk) > MAX_JSON_BYTES:
                self._json = None
            else:
                self._json += chunk

    def end(self) -> None:
        """The body has ended: read what is left (a last line without its newline, a JSON)."""
        if self._stream and self._line and not self._skipping:
            self._take_line(bytes(self._line))
        self._line.clear()
        if self._json is not None:
            try:
                message = json.loads(self._json)
            except ValueError:
                message = None
            self._json = None
            if isinstance(message, Mapping) and message.get("type") == "message":
                self._message(message)
                self._stop(message.get("stop_reason"))

    def _feed_lines(self, chunk: bytes) -> None:
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not self._skipping:
                if len(self._line) + len(piece) > MAX_LINE_BYTES:
                    self._skipping = True
                    self._line.clear()
                else:
                    self._line += piece
            if end < 0:
                return
            if not self._skipping:
                self._take_line(bytes(self._line))
            self._line.clear()
            self._skipping = False
            start = end + 1

    def _take_line(self, line: bytes) -> None:
        line = line.rstrip(b"\r")
        if not line:
            self._event = b""
        elif line.startswith(b"event:"):
            self._event = line[6:].strip()
        elif line.startswith(b"data:"):
            data = line[5:].strip()
            if self._event in _WANTED or (not self._event and any(w in data for w in _WANTED)):
                self._data(data)

    def _data(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if not isinstance(event, Mapping):
            return
        if event.get("type") == "message_start" and isinstance(event.get("message"), Mapping):
            self._message(event["message"])
        elif event.get("type") == "message_delta":
            self._add_usage(event.get("usage"))
            delta = event.get("delta")
            if isinstance(delta, Mapping):
                self._stop(delta.get("stop_reason"))

    def _message(self, message: Mapping[str, object]) -> None:
        self.message_id = bounded(message.get("id")) or self.message_id
        self.model = bounded(message.get("model")) or self.model
        self._add_usage(message.get("usage"))

    def _stop(self, reason: object) -> None:
        self.stop_reason = bounded(reason) or self.stop_reason

    def _add_usage(self, usage: object) -> None:
        if not isinstance(usage, Mapping):
            return
        for name in _USAGE_FIELDS:
            if (count := _count(usage.get(name))) is not None:
                self._usage[name] = count
        split = usage.get("cache_creation")
        if isinstance(split, Mapping):
            for wire, ours in _SPLIT_FIELDS:
                if (count := _count(split.get(wire))) is not None:
                    self._usage[ours] = count


def _count(value: object) -> int | None:
    """A token count: a non-negative int (not a bool); anything else is no figure."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
