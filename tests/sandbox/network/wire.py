"""What the network tests share: reading a proxy's answer to its end."""

from __future__ import annotations

import anyio
import anyio.abc


async def read_to_the_end(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the other side sends, until it closes the connection (or breaks it)."""
    data = b""
    while True:
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data
