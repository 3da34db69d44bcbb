"""The gateway's server side: one client connection spoken with h11, a request at a time.

h11 parses and frames everything (the request line, the headers, a body of its length or
chunked, keep-alive or close); nothing here reads bytes of HTTP itself. A connection serves
one request after another as HTTP/1.1 allows (the CLI reuses its connections), each answered
before the next is read. Bounds: a head of at most `MAX_HEAD_BYTES`; once a request's first
bytes arrived, its head and body must arrive within `REQUEST_TIMEOUT_S` (an idle kept-alive
connection waits without a bound: it ends with its session).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import anyio
import h11

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from anyio.abc import ByteStream

MAX_HEAD_BYTES: Final = 64 * 1024
"""Largest request head (request line and headers) read; the CLI's is about 1.5 KiB."""
REQUEST_TIMEOUT_S: Final = 120.0
"""Seconds a request has, from its first bytes, to send its whole head and body."""
RECEIVE_BYTES: Final = 64 * 1024
"""Bytes asked of the socket at a time."""


class Malformed(Exception):
    """What the client sent is not an HTTP/1.1 request the gateway can read (in words)."""


class BodyTooLarge(Exception):
    """The request's body passes the gateway's bound (declared or as it arrived)."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """One request's head as it arrived.

    Attributes:
        method: As sent (``POST``).
        target: Path and query as sent.
        headers: Names lower-cased (h11's), values as sent.
        arrived: `anyio.current_time` when the head was complete.
        at: The same moment, RFC 3339 UTC, second precision.
    """

    method: str
    target: str
    headers: list[tuple[bytes, bytes]]
    arrived: float
    at: str

    def values(self, name: bytes) -> list[bytes]:
        """Every value of header ``name`` (lower case), in order."""
        return [value for key, value in self.headers if key == name]


def utc_now() -> str:
    """Now, RFC 3339 UTC, second precision (``2026-12-03T16:40:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ServerConnection:
    """One client connection of a session's gateway, spoken with h11.

    Args:
        stream: The accepted connection.
    """

    def __init__(self, stream: ByteStream) -> None:
        self._stream = stream
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._deadline = math.inf
        self.responded = False
        """Whether a response was begun for the current request."""
        self.status: int | None = None
        """The status of the response begun for the current request, if one was."""

    async def next_request(self) -> Incoming | None:
        """The next request's head; None when the client closed between requests.

        Raises:
            Malformed: not a request h11 can read, a head over `MAX_HEAD_BYTES`, or a head
                that took more than `REQUEST_TIMEOUT_S`.
        """
        self._deadline = math.inf
        event = await self._next_event()
        if isinstance(event, h11.ConnectionClosed):
            return None
        if not isinstance(event, h11.Request):
            raise Malformed(f"expected a request, got {type(event).__name__}")
        return Incoming(event.method.decode("latin-1"), event.target.decode("latin-1"),
                        list(event.headers), anyio.current_time(), utc_now())  # fmt: skip

    def extend_deadline(self, seconds: float) -> None:
        """Give the current request ``seconds`` more to arrive in: the time the gateway made it
        wait before reading its body does not count against the client."""
        self._deadline += seconds

    def declared_length(self, incoming: Incoming) -> int | None:
        """The request's ``content-length``, when its body is framed by one (h11 has checked
        it); None when it is chunked (``transfer-encoding`` overrides a length, RFC 9112 6.3)
        or declares none."""
        values = incoming.values(b"content-length")
        if not values or incoming.values(b"transfer-encoding"):
            return None
        return int(values[0])

    async def body(self, limit: int) -> AsyncIterator[bytes]:
        """The current request's body, piece by piece as it arrives (never held whole), at
        most ``limit`` bytes in all (a client that waits for ``100 Continue`` before its
        body is sent one: the body is wanted).

        Raises:
            BodyTooLarge: more than ``limit`` bytes arrived (the rest is not read).
            Malformed: the body broke off, or took more than `REQUEST_TIMEOUT_S`.
        """
        received = 0
        if self._h11.they_are_waiting_for_100_continue:  # ``Expect: 100-continue``
            await self._send(h11.InformationalResponse(status_code=100, headers=[]))
        while True:
            event = await self._next_event()
            if isinstance(event, h11.Data):
                received += len(event.data)
                if received > limit:
                    raise BodyTooLarge
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return
            else:
                raise Malformed(f"the body broke off ({type(event).__name__})")

    async def start(self, status: int, headers: list[tuple[bytes, bytes]],
                    reason: bytes = b"") -> None:
        """Begin the response: its status line and headers."""
        self.status = status
        self.responded = True
        await self._send(h11.Response(status_code=status, headers=headers, reason=reason))

    async def send(self, data: bytes) -> None:
        """Send one piece of the response's body as it is (chunked unless a length was set)."""
        await self._send(h11.Data(data=data))

    async def end(self) -> None:
        """End the response."""
        await self._send(h11.EndOfMessage())

    async def error(self, status: int, kind: str, message: str, *, close: bool) -> None:
        """Answer with the gateway's own Anthropic-shaped error, ``{"type": "error", ...}``.

        ``close`` adds ``connection: close`` (the request's body may be unread). Every error
        but a 503 carries ``x-should-retry: false``: another try cannot change the answer.
        """
        body = json.dumps({"type": "error", "error": {"type": kind, "message": message}},
                          ensure_ascii=False).encode()  # fmt: skip
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode())]
        if status != 503:
            headers.append((b"x-should-retry", b"false"))
        if close:
            headers.append((b"connection", b"close"))
        await self.start(status, headers)
        await self.send(body)
        await self.end()

    async def linger(self, seconds: float) -> None:
        """Close our side for writing, then discard what the client sends until it closes or
        ``seconds`` pass (an answer given before a request is then read, not reset)."""
        with anyio.move_on_after(seconds):
            try:
                await self._stream.send_eof()
                while await self._stream.receive(RECEIVE_BYTES):
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError,
                    OSError):  # fmt: skip
                pass

    def next_cycle(self) -> bool:
        """Ready the connection for the client's next request; False when it must close."""
        self.responded = False
        self.status = None
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
            return True
        return False

    def can_answer(self) -> bool:
        """Whether a response may still begin for the current request."""
        return self._h11.our_state in (h11.IDLE, h11.SEND_RESPONSE) and not self.responded

    async def _send(self, event: h11.Event) -> None:
        data = self._h11.send(event)
        if data:
            await self._stream.send(data)

    async def _next_event(self) -> object:
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise Malformed(str(exc)[:200]) from None
            if event is not h11.NEED_DATA:
                return event
            data = b""
            with anyio.move_on_at(self._deadline) as scope:
                try:
                    data = await self._stream.receive(RECEIVE_BYTES)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    data = b""
            if scope.cancelled_caught:
                raise Malformed(f"the request took more than {REQUEST_TIMEOUT_S:g} s to arrive")
            if data and self._deadline == math.inf:
                self._deadline = anyio.current_time() + REQUEST_TIMEOUT_S
            self._h11.receive_data(data)
