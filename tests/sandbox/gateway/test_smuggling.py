"""What a session's raw bytes cannot make its gateway do (the attacks tried that held, kept so
they stay held): h11 frames every request, each request is checked on its own, and what goes
upstream is framed anew by httpx (sandbox/gateway/_server.py, docs/gateway.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from sandbox.gateway import open_gateway, open_upstream

from .conftest import REAL_KEY, Gate

if TYPE_CHECKING:
    from sandbox._config import Credentials
    from sandbox.gateway import Gateway

    from .provider import LoopbackProvider

pytestmark = pytest.mark.anyio
BODY = b'{"model":"m","messages":[]}'


async def exchange(gateway: Gateway, data: bytes) -> bytes:
    """Send ``data`` on one connection; everything answered until the gateway closes or 3 s."""
    port = int(gateway.base_url.rsplit(":", 1)[1])
    answered = b""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(data)
        with anyio.move_on_after(3.0):
            try:
                while True:
                    answered += await stream.receive()
            except anyio.EndOfStream:
                pass
    return answered


def request(key: bytes, *, head: bytes = b"POST /v1/messages?beta=true HTTP/1.1",
            extra: bytes = b"", body: bytes = BODY) -> bytes:
    return (head + b"\r\nhost: x\r\nx-api-key: " + key + b"\r\n" + extra
            + b"content-length: %d\r\n\r\n" % len(body) + body)


def statuses(answered: bytes) -> list[bytes]:
    return [part.split(b" ", 1)[0] for part in answered.split(b"HTTP/1.1 ")[1:]
            if part[:3].isdigit()]


async def test_a_pipelined_request_with_another_key_is_refused_on_its_own(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "json"
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        ph = gateway.placeholder.encode()
        answered = await exchange(gateway, request(ph) + request(b"nope") + request(ph))
        stats = gateway.stats()
    assert statuses(answered) == [b"200", b"401"]  # a refusal closes: the third is never read
    assert len(provider.requests) == 1
    assert (stats.forwarded, stats.refused) == (1, {"placeholder": 1})
    assert REAL_KEY.encode() not in answered


async def test_chunked_beside_a_length_goes_upstream_as_the_chunked_body_alone(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "json"
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        ph = gateway.placeholder.encode()
        smuggled = b"POST /v1/complete HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n"
        data = (b"POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\nx-api-key: " + ph
                + b"\r\ncontent-length: %d\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"
                % len(smuggled) + smuggled)
        await exchange(gateway, data)
    # RFC 9112 6.3: chunked wins; what follows the last chunk is a request of its own, refused
    assert [(seen.target, seen.body) for seen in provider.requests] == [
        ("/v1/messages?beta=true", b"")]
    assert [row.refused for row in gate.rows] == [None, "placeholder"]


@pytest.mark.parametrize("head", [
    b"POST http://evil.example/v1/messages?beta=true HTTP/1.1",
    b"post /v1/messages?beta=true HTTP/1.1", b"POST /v1//messages?beta=true HTTP/1.1",
    b"POST /v1/messages/../complete?beta=true HTTP/1.1",
    b"POST /v1/%2e%2e/complete HTTP/1.1", b"POST /v1/messages?beta=true&x=1 HTTP/1.1",
    b"OPTIONS /v1/messages?beta=true HTTP/1.1", b"PUT /v1/messages?beta=true HTTP/1.1"])
async def test_a_target_or_method_that_is_not_the_harness_s_own_is_refused_path(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate, head: bytes) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        answered = await exchange(gateway, request(gateway.placeholder.encode(), head=head))
    assert statuses(answered) == [b"404"] and provider.requests == []
    assert [row.refused for row in gate.rows] == ["path"]


@pytest.mark.parametrize("extra", [b"content-length: 3\r\n", b"x-a: b\x00c\r\n",
                                   b"transfer-encoding: identity\r\n"])
async def test_a_framing_h11_cannot_trust_is_refused_malformed(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate, extra: bytes) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        answered = await exchange(gateway, request(gateway.placeholder.encode(), extra=extra))
    assert statuses(answered) == [b"400"] and provider.requests == []
    assert [row.refused for row in gate.rows] == ["malformed"]
