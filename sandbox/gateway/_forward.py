"""One request forwarded: the headers swapped, the response relayed as it arrives, observed.

What goes upstream (`upstream_headers`): the session's headers less its key
(``x-api-key``, ``authorization``), the hop-by-hop headers (and any the request's
``Connection`` names), ``host`` (httpx sets it), ``content-length`` (`relay` sets it
again from the declared length: the body is streamed, not measured) and
``accept-encoding`` (``identity`` is asked for instead, so the stream relayed is one the
observer can read); plus the real credential: an API key as ``x-api-key``, a login's token
as ``Authorization: Bearer`` with `OAUTH_BETA` added to ``anthropic-beta`` when absent.
Every other header passes through as sent.

What comes back (`relay`): the provider's status and headers (less hop-by-hop ones), then
its body chunk by chunk as httpx reads it from the socket (``aiter_raw``: never the body
whole), each chunk fed to the `sandbox.gateway._sse.ResponseObserver` on its way. The real
credential never reaches the session, even were the provider to echo it: it is masked in
the headers and the body (`Scrubber`), the length kept.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import TYPE_CHECKING, Final, cast

import anyio
import httpx

from ._sse import ResponseObserver, bounded

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterable, Iterable

    from ._login import Credential
    from ._server import Incoming, ServerConnection

OAUTH_BETA: Final = b"oauth-2025-04-20"
"""The ``anthropic-beta`` flag the provider asks of a request with a login's bearer token."""
HOP_BY_HOP: Final = frozenset({
    b"connection", b"keep-alive", b"proxy-connection", b"proxy-authenticate",
    b"proxy-authorization", b"te", b"trailer", b"trailers", b"transfer-encoding", b"upgrade",
})
"""Headers of one connection, never forwarded (RFC 9110 7.6.1, and the legacy proxy ones)."""
DRAIN_S: Final = 5.0
"""Seconds to let a closed response's last read end httpx's generators (it fails at once)."""
_NOT_FORWARDED: Final = HOP_BY_HOP | {b"x-api-key", b"authorization", b"host",
                                      b"content-length", b"accept-encoding"}


def _connection_named(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    return {name.strip().lower() for key, value in headers if key.lower() == b"connection"
            for name in value.split(b",") if name.strip()}


def upstream_headers(incoming: Incoming, credential: Credential) -> list[tuple[bytes, bytes]]:
    """The headers ``incoming`` is forwarded with, carrying ``credential`` (module docstring)."""
    dropped = _NOT_FORWARDED | _connection_named(incoming.headers)
    headers = [(key, value) for key, value in incoming.headers if key not in dropped]
    headers.append((b"accept-encoding", b"identity"))
    secret = credential.secret.encode()
    if credential.kind == "api-key":
        headers.append((b"x-api-key", secret))
        return headers
    headers.append((b"authorization", b"Bearer " + secret))
    betas = [i for i, (key, _) in enumerate(headers) if key == b"anthropic-beta"]
    flags = {flag.strip() for i in betas for flag in headers[i][1].split(b",")}
    if OAUTH_BETA not in flags:
        if betas:
            key, value = headers[betas[0]]
            headers[betas[0]] = (key, value + b"," + OAUTH_BETA)
        else:
            headers.append((b"anthropic-beta", OAUTH_BETA))
    return headers


class Scrubber:
    """Masks a secret in a stream of chunks, with as little held back as can be.

    Only a chunk's tail that could begin the secret is held until the next chunk, so a
    response's pieces are relayed as they come (an SSE event's closing newlines never begin
    a key). Each occurrence becomes as many ``*``: the body's length is kept.

    Args:
        secret: What must never pass (empty: nothing is masked).
    """

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._mask = b"*" * len(secret)
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        """The part of ``held + chunk`` that can be sent now, masked."""
        if not self._secret:
            return chunk
        data = (self._held + chunk).replace(self._secret, self._mask)
        keep = 0
        for size in range(min(len(self._secret) - 1, len(data)), 0, -1):
            if data.endswith(self._secret[:size]):
                keep = size
                break
        self._held = data[len(data) - keep:] if keep else b""
        return data[:len(data) - keep]

    def end(self) -> bytes:
        """What is held at the end (it was not the secret's start after all)."""
        held, self._held = self._held, b""
        return held

    def header(self, value: bytes) -> bytes:
        """A header value, masked."""
        return value.replace(self._secret, self._mask) if self._secret else value


MASKED_TAIL: Final = 8
"""Shortest start of the secret masked at a text's end (a text cut to `MAX_TEXT` may end in
part of it)."""


def masked(text: str | None, secret: str) -> str | None:
    """``text`` with each occurrence of ``secret`` as as many ``*``, and a tail that is the
    secret's first `MASKED_TAIL` or more characters (the text was cut inside it) masked too:
    a row's fields come from the provider, and the credential goes to the provider only."""
    if text is None or not secret:
        return text
    text = text.replace(secret, "*" * len(secret))
    for size in range(min(len(secret) - 1, len(text)), MASKED_TAIL - 1, -1):
        if text.endswith(secret[:size]):
            return text[:len(text) - size] + "*" * size
    return text


def response_headers(response: httpx.Response, scrub: Scrubber) -> list[tuple[bytes, bytes]]:
    """The provider's response headers for the session: hop-by-hop ones out, masked."""
    raw = response.headers.raw
    dropped = HOP_BY_HOP | _connection_named(raw)
    return [(key.lower(), scrub.header(value)) for key, value in raw
            if key.lower() not in dropped]


class Relayed:
    """What `relay` saw of one response (the row's provider fields)."""

    def __init__(self) -> None:
        self.latency_s: float | None = None
        self.request_id: str | None = None
        self.observer: ResponseObserver | None = None
        self.upstream_error: str | None = None


async def relay(client: httpx.AsyncClient, url: str, incoming: Incoming,
                body: AsyncIterable[bytes], declared: int | None, credential: Credential,
                conn: ServerConnection, seen: Relayed) -> int | None:
    """Forward ``incoming`` with ``body`` to ``url`` and relay the response to ``conn``.

    ``body`` is sent upstream piece by piece as it yields them (never joined), with the
    ``content-length`` the session declared (``declared`` bytes, which h11 has held the body
    to) or chunked when it declared none. An error ``body`` raises (the session's body passed
    the bound, or broke off) is raised as it is, before any response begins.

    ``seen`` is filled as things happen (so a caller cut off still has what was seen). A
    provider that cannot be reached gets the session a 502 of the gateway's (``api_error``,
    which the harness retries as it would the provider's); a response that breaks off ends
    the session's connection where it broke.

    Returns:
        The status the provider answered with, or None when it could not be reached.

    When the session's connection fails, or the gateway is cancelled, while a chunk is
    being sent, the provider's response is closed and read once more: that read raises
    inside httpx's chain of async generators and ends each of them on its way out (a chain
    left where it was would be finalized later by the event loop, with a warning each).

    Raises:
        anyio.BrokenResourceError, anyio.ClosedResourceError, OSError: the session's
            connection went away (the provider's response closed first).
        Exception: whatever ``body`` raised while it was sent.
    """
    headers = upstream_headers(incoming, credential)
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    request = client.build_request(incoming.method, url, content=body, headers=headers)
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        seen.upstream_error = bounded(f"the provider could not be reached: {_cause(exc)}")
        return None
    try:
        seen.latency_s = anyio.current_time() - incoming.arrived
        seen.request_id = bounded(response.headers.get("request-id"))
        observer = seen.observer = ResponseObserver(response.headers.get("content-type", ""))
        scrub = Scrubber(credential.secret.encode())
        await conn.start(response.status_code, response_headers(response, scrub),
                         response.reason_phrase.encode("latin-1", "replace"))  # fmt: skip
        gone: BaseException | None = None
        try:
            raw = cast("AsyncGenerator[bytes, None]", response.aiter_raw())
            async with aclosing(raw) as chunks:
                with anyio.CancelScope() as drain:
                    async for chunk in chunks:
                        observer.feed(chunk)
                        if gone is None and (out := scrub.feed(chunk)):
                            try:
                                await conn.send(out)
                            except BaseException as exc:  # the session or the gateway left
                                gone = exc
                                drain.deadline = anyio.current_time() + DRAIN_S
                                with anyio.CancelScope(shield=True):
                                    await response.aclose()  # its next read raises
        except httpx.HTTPError as exc:
            if gone is not None:
                raise gone from None
            seen.upstream_error = bounded(f"the provider's response broke off: {_cause(exc)}")
            return response.status_code
        finally:
            observer.end()
        if gone is not None:
            raise gone
        if tail := scrub.end():
            await conn.send(tail)
        await conn.end()
        return response.status_code
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()


def _cause(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, or of the first exception under it that has a message
    (trio's TLS failure is an httpx error with none, its cause the ``SSLError``)."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        if str(seen):
            return f"{type(seen).__name__}: {seen}"
        seen = seen.__cause__ or seen.__context__
    return type(exc).__name__
