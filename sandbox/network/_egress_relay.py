"""The egress proxy's byte relays and its own answers (`sandbox.network._egress`).

Each relay ends the exchange when either side can carry no more, and none
raises for a peer's fault: a broken or closed stream is the end of that
connection, never of the proxy.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Final

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio.abc import ByteStream
    from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["answer", "forward_once", "splice"]

RELAY_CHUNK_BYTES: Final = 65536
"""Bytes asked for per read while relaying."""


async def forward_once(
    reader: BufferedByteReceiveStream, client: ByteStream, upstream: ByteStream, length: int,
    on_more: Callable[[], None],
) -> None:
    """Send the one request's body (``length`` bytes) upstream and its answer back; what the
    client sends after that body is never forwarded (``on_more()`` once, and the end). The
    client's end of input (a half-close) is passed on, and the answer still relayed."""
    left = length
    while left:
        chunk = await reader.receive(min(left, RELAY_CHUNK_BYTES))
        await upstream.send(chunk)
        left -= len(chunk)
    async with anyio.create_task_group() as tg:

        async def watch_client() -> None:
            try:
                await reader.receive(1)
            except anyio.EndOfStream:
                with contextlib.suppress(Exception):
                    await upstream.send_eof()
                return  # the client is done sending: its answer comes back all the same
            except Exception:
                tg.cancel_scope.cancel()
                return
            on_more()  # bytes after its request: never forwarded, and the exchange is over
            tg.cancel_scope.cancel()

        async def upstream_to_client() -> None:
            with contextlib.suppress(Exception):
                while True:
                    await client.send(await upstream.receive(RELAY_CHUNK_BYTES))
            tg.cancel_scope.cancel()

        tg.start_soon(watch_client)
        tg.start_soon(upstream_to_client)


async def splice(
    reader: BufferedByteReceiveStream, client: ByteStream, upstream: ByteStream
) -> None:
    """Relay both ways; when the upstream side ends, the exchange is over."""
    async with anyio.create_task_group() as tg:

        async def client_to_upstream() -> None:
            with contextlib.suppress(Exception):
                while True:
                    try:
                        chunk = await reader.receive(RELAY_CHUNK_BYTES)
                    except anyio.EndOfStream:
                        await upstream.send_eof()
                        return
                    await upstream.send(chunk)
            tg.cancel_scope.cancel()  # a send or receive failed: nothing more can pass

        async def upstream_to_client() -> None:
            with contextlib.suppress(Exception):
                while True:
                    await client.send(await upstream.receive(RELAY_CHUNK_BYTES))
            tg.cancel_scope.cancel()  # EOF or failure: nothing more can come back

        tg.start_soon(client_to_upstream)
        tg.start_soon(upstream_to_client)


_REASONS: Final = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway",
                    503: "Service Unavailable"}


async def answer(client: ByteStream, status: int, message: str) -> None:
    """Answer ``status`` (400, 403, 502, 503) with ``message`` and ``Connection: close``;
    a client that is gone already gets nothing, and nothing is raised."""
    body = f"headwater egress proxy: {message}\n".encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(Exception):
        await client.send(head + body)
