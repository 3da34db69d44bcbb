"""A session that leaves its responses unread holds at most its share of the batch's
connections to the provider (sandbox/gateway/_upstream.py, ``MAX_IN_FLIGHT``; RC-03).

The batch has one pool of connections to the provider for all its sessions. A response the
session does not read stops the gateway's relay, which then holds its connection to the
provider as long as the session likes; with no share, a few such sessions would take the
whole pool and every other session's requests would wait for it, then fail.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import httpx
import pytest

from sandbox.gateway import open_gateway, open_upstream
from sandbox.gateway._upstream import MAX_CONNECTIONS, MAX_IN_FLIGHT
from sandbox.users import MAX_POOL_USERS

if TYPE_CHECKING:
    from collections.abc import Callable

    from sandbox._config import Credentials

    from .conftest import Gate
    from .provider import LoopbackProvider

MESSAGES = "/v1/messages?beta=true"
OPENED = MAX_IN_FLIGHT + 4
"""Unread streams the session opens: more than its share."""


def test_every_session_s_share_together_fit_in_the_pool() -> None:
    # the share's rule: the most sessions a batch runs at once, each at its share, never
    # need more connections than the pool has
    assert MAX_IN_FLIGHT * MAX_POOL_USERS <= MAX_CONNECTIONS
    assert MAX_IN_FLIGHT >= 4  # a harness's main loop, a subagent or two and a side request


def _request(placeholder: str) -> bytes:
    # a body larger than one read of the gateway's, so the rest is read after any wait
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 8,
                       "messages": [{"role": "user", "content": "x" * 256 * 1024}]}).encode()
    return (b"POST " + MESSAGES.encode() + b" HTTP/1.1\r\nHost: gateway\r\n"
            b"x-api-key: " + placeholder.encode() + b"\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


async def _until(done: Callable[[], bool]) -> None:
    """Poll the provider (a thread of its own) until ``done``, for at most 20 s."""
    for _ in range(400):
        if done():
            return
        await anyio.sleep(0.05)
    raise AssertionError("the provider did not get there in 20 s")


async def _read_all(stream: anyio.abc.SocketStream) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        while True:
            await stream.receive()


@pytest.mark.anyio
async def test_unread_streams_past_the_share_wait_and_another_session_is_served(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a request has this long to arrive: the waiting ones wait longer, which must not count
    monkeypatch.setattr("sandbox.gateway._server.REQUEST_TIMEOUT_S", 1.5)
    provider.mode = "endless"
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as hoarder, open_gateway(upstream, gate) as other:
        host, port = hoarder.base_url.removeprefix("http://").split(":")
        streams = [await anyio.connect_tcp(host, int(port)) for _ in range(OPENED)]
        try:
            async with anyio.create_task_group() as senders:
                for stream in streams:  # each asks for a stream and never reads a byte of it
                    senders.start_soon(stream.send, _request(hoarder.placeholder))
            await _until(lambda: len(provider.requests) >= MAX_IN_FLIGHT)
            await anyio.sleep(3.0)  # any further one would reach the provider; past 1.5 s
            reached = len(provider.requests)
            provider.mode = "json"
            async with httpx.AsyncClient(base_url=other.base_url, trust_env=False,
                                         timeout=20.0) as session:
                answered = await session.post(MESSAGES, json={"model": "m"},
                                              headers={"x-api-key": other.placeholder})
            provider.release.set()  # the endless streams end once read; the waiting ones go on
            async with anyio.create_task_group() as readers:
                for stream in streams:
                    readers.start_soon(_read_all, stream)
                await _until(lambda: len(provider.requests) >= OPENED + 1)
                readers.cancel_scope.cancel()
        finally:
            provider.release.set()
            for stream in streams:
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await stream.aclose()
    assert reached == MAX_IN_FLIGHT
    assert answered.status_code == 200
    assert [row.refused for row in gate.rows].count(None) == OPENED + 1  # none refused


@pytest.mark.anyio
async def test_a_request_still_waiting_when_the_session_leaves_is_not_a_forwarded_row(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    # the session leaves (its gateway closes) while its share is at the provider and more of
    # its requests wait: those were never forwarded nor answered, so no row may read as a
    # forwarded request (the attempt would count each in ``unpriced_requests``, a spend it
    # cannot know, and the ledger would show requests the provider never had)
    provider.mode = "endless"
    async with open_upstream(provider.url, api_key) as upstream:
        async with open_gateway(upstream, gate) as gateway:
            host, port = gateway.base_url.removeprefix("http://").split(":")
            streams = [await anyio.connect_tcp(host, int(port)) for _ in range(OPENED)]
            for stream in streams:
                await stream.send(_request(gateway.placeholder))
            await _until(lambda: len(provider.requests) >= MAX_IN_FLIGHT)
            await anyio.sleep(0.5)  # the rest are waiting for a place
        for stream in streams:
            with contextlib.suppress(OSError, anyio.BrokenResourceError):
                await stream.aclose()
    stats = gateway.stats()
    assert stats.forwarded == MAX_IN_FLIGHT
    assert stats.refused == {}
    assert [row.refused for row in gate.rows].count(None) == stats.forwarded


@pytest.mark.anyio
async def test_a_budget_refusal_whose_body_is_cut_by_the_session_leaving_is_still_refused(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    # a budget refusal reads the body before it answers; the session leaves meanwhile: the
    # request was refused all the same, in its row and in the counts (``budget_refused`` is
    # part of ``refused``), and nothing reached the provider
    gate.refuse = "the batch's cost budget is reached"
    async with open_upstream(provider.url, api_key) as upstream:
        async with open_gateway(upstream, gate) as gateway:
            host, port = gateway.base_url.removeprefix("http://").split(":")
            stream = await anyio.connect_tcp(host, int(port))
            whole = _request(gateway.placeholder)
            await stream.send(whole[:len(whole) // 2])  # the rest never comes
            await _until(lambda: gateway.stats().budget_refused == 1)
        with contextlib.suppress(OSError, anyio.BrokenResourceError):
            await stream.aclose()
    stats = gateway.stats()
    assert stats.forwarded == 0
    assert stats.refused == {"budget": 1}
    assert [row.refused for row in gate.rows] == ["budget"]
    assert provider.requests == []
