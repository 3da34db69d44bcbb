"""The gateway between a session and a real provider on loopback: what crosses, what is refused,
what each request's row says (sandbox/gateway; RC-03, docs/gateway.md)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest

from sandbox._config import Credentials
from sandbox.gateway import Usage, open_gateway, open_upstream

from . import provider as wire
from .conftest import REAL_KEY, Gate

if TYPE_CHECKING:
    from pathlib import Path

    from anyio.abc import SocketStream

    from sandbox.gateway import Gateway

    from .provider import LoopbackProvider

pytestmark = pytest.mark.anyio

MESSAGES = "/v1/messages?beta=true"
SYSTEM = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.abc;"},
          {"type": "text", "text": "You are a test agent.", "cache_control": {"type": "ephemeral"}}]
BODY: dict[str, Any] = {"model": "claude-asked-9", "system": SYSTEM, "stream": True,
                        "messages": [{"role": "user", "content": "hi"}]}


def client(gateway: Gateway, key: str | None = None, *, bearer: bool = False) -> httpx.AsyncClient:
    """The session's side: an HTTP client of the gateway with a key (its placeholder)."""
    key = gateway.placeholder if key is None else key
    headers = {"authorization": f"Bearer {key}"} if bearer else {"x-api-key": key}
    return httpx.AsyncClient(base_url=gateway.base_url, headers=headers, trust_env=False,
                             timeout=20.0)


async def post(gateway: Gateway, key: str | None = None, *, path: str = MESSAGES,
               bearer: bool = False, **extra: Any) -> httpx.Response:
    async with client(gateway, key, bearer=bearer) as session:
        return await session.post(path, json=BODY, **extra)


async def test_the_placeholder_is_swapped_for_the_key_and_the_key_never_comes_back(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "echo"  # the provider echoes every header it got, in its body and a header
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        assert gateway.key_variable == "ANTHROPIC_API_KEY"
        response = await post(gateway, headers={"anthropic-beta": "x-1", "x-app": "cli"})
    assert response.status_code == 200
    (seen,) = provider.requests
    assert seen.header("x-api-key") == [REAL_KEY]
    assert seen.header("authorization") == []
    assert seen.header("accept-encoding") == ["identity"]
    assert seen.header("anthropic-beta") == ["x-1"] and seen.header("x-app") == ["cli"]
    assert gateway.placeholder not in json.dumps(seen.headers)
    assert REAL_KEY in seen.header("x-api-key")  # the echo below would carry it back
    assert REAL_KEY not in response.text and REAL_KEY not in str(response.headers)
    assert "*" * len(REAL_KEY) in response.text  # masked, length kept
    assert gateway.stats().forwarded == 1 and gateway.stats().refused == {}


async def test_a_login_token_goes_as_a_bearer_with_the_oauth_beta(
        provider: LoopbackProvider, gate: Gate, tmp_path: Path) -> None:
    login = write_login(tmp_path, "token-one", expires_in_s=3600)
    async with open_upstream(provider.url, login) as upstream, \
            open_gateway(upstream, gate) as gateway:
        assert gateway.key_variable == "ANTHROPIC_AUTH_TOKEN"
        first = await post(gateway, bearer=True, headers={"anthropic-beta": "claude-code-1"})
        second = await post(gateway, bearer=True)
    assert first.status_code == second.status_code == 200
    one, two = provider.requests
    assert one.header("authorization") == ["Bearer token-one"]
    assert one.header("anthropic-beta") == ["claude-code-1,oauth-2025-04-20"]
    assert two.header("anthropic-beta") == ["oauth-2025-04-20"]
    assert one.header("x-api-key") == []


async def test_another_key_or_none_is_refused_and_counted_by_the_session_that_sent_it(
        provider: LoopbackProvider, api_key: Credentials) -> None:
    mine, theirs = Gate(), Gate()
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, mine) as gateway, open_gateway(upstream, theirs) as other:
        borrowed = await post(gateway, other.placeholder)
        guessed = await post(gateway, "sk-ant-guess", bearer=True)
        async with httpx.AsyncClient(base_url=gateway.base_url, trust_env=False) as bare:
            keyless = await bare.post(MESSAGES, json=BODY)
        both = await post(gateway, headers={"authorization": f"Bearer {other.placeholder}"})
    for response in (borrowed, guessed, keyless, both):
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "authentication_error"
    assert provider.requests == []
    assert gateway.stats().refused == {"placeholder": 4} and gateway.stats().forwarded == 0
    assert other.stats().refused == {}
    assert [row.refused for row in mine.rows] == ["placeholder"] * 4
    assert [row.status for row in mine.rows] == [401] * 4 and theirs.rows == []


async def test_a_path_the_harness_does_not_need_is_refused_and_counted_by_name(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        other = await post(gateway, path="/v1/complete")
        unbeta = await post(gateway, path="/v1/messages")
        async with client(gateway) as session:
            listed = await session.get("/v1/models")
    assert [r.status_code for r in (other, unbeta, listed)] == [404, 404, 404]
    assert other.json()["error"]["type"] == "not_found_error"
    assert provider.requests == []
    assert gateway.stats().refused == {"path POST /v1/complete": 1, "path POST /v1/messages": 1,
                                       "path GET /v1/models": 1}
    assert [(row.refused, row.path) for row in gate.rows] == [
        ("path", "/v1/complete"), ("path", "/v1/messages"), ("path", "/v1/models")]


async def test_a_529_is_relayed_as_it_came(provider: LoopbackProvider, api_key: Credentials,
                                           gate: Gate) -> None:
    provider.mode = "overloaded"
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        response = await post(gateway)
    assert response.status_code == 529
    assert response.json() == wire.OVERLOADED
    assert response.headers["retry-after"] == "7" and response.headers["x-should-retry"] == "true"
    assert response.headers["request-id"] == wire.REQUEST_ID
    (row,) = gate.rows
    assert (row.status, row.refused, row.request_id) == (529, None, wire.REQUEST_ID)
    assert gateway.stats().forwarded == 1


async def test_the_stream_reaches_the_session_before_the_provider_has_sent_its_end(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "wait"  # sends message_start, then waits for the word the client gives
    received = b""
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway, client(gateway) as session, \
            session.stream("POST", MESSAGES, json=BODY) as response:
        async for chunk in response.aiter_raw():
            if not received:
                assert b"message_start" in chunk
                provider.release.set()
            received += chunk
    assert not provider.waited_out, "the first event reached the client only after the last"
    assert received == wire.FIRST_EVENTS + wire.LAST_EVENTS


async def test_a_request_body_reaches_the_provider_before_the_session_has_sent_its_end(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    """The body is streamed upstream as it arrives, never held whole (docs/gateway.md,
    "Bounds"): the session sends the rest of its body only once the provider has read the
    first part, so a gateway that waited for the whole body would never forward it."""
    provider.mode = "json"
    text = json.dumps(BODY).encode()
    head, tail = text[:-10], text[-10:]
    waited: list[bool] = []

    async def session_body() -> Any:
        yield head
        waited.append(await anyio.to_thread.run_sync(provider.body_begun.wait, 10.0))
        yield tail

    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway, client(gateway) as session:
        answer = await session.post(MESSAGES, content=session_body(),
                                    headers={"content-length": str(len(text))})
    assert waited == [True]
    assert answer.status_code == 200
    assert provider.requests[-1].body == text
    assert gate.rows[-1].system_digest is not None
    assert gate.rows[-1].requested_model == BODY["model"]


async def test_the_row_holds_what_the_provider_sent(provider: LoopbackProvider,
                                                    api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        await post(gateway)
        provider.mode = "json"
        await post(gateway)
    streamed, whole = gate.rows
    start = wire.START_USAGE
    expected = Usage(input_tokens=start["input_tokens"], output_tokens=wire.FINAL_OUTPUT_TOKENS,
                     cache_creation_input_tokens=start["cache_creation_input_tokens"],
                     cache_read_input_tokens=start["cache_read_input_tokens"],
                     cache_creation_5m_tokens=2, cache_creation_1h_tokens=3)
    # the rule (sandbox/gateway/_digest.py): the billing block out, the texts as a JSON list
    digest = "sha256:" + hashlib.sha256(b'["You are a test agent."]').hexdigest()
    for row in (streamed, whole):
        assert (row.method, row.path, row.status, row.refused) == ("POST", MESSAGES, 200, None)
        assert (row.request_id, row.message_id, row.model) == (
            wire.REQUEST_ID, wire.MESSAGE_ID, wire.SERVED_MODEL)
        assert row.requested_model == "claude-asked-9"
        assert row.usage == expected
        assert row.system_digest == digest
        assert row.upstream_error is None
        assert row.latency_s is not None and 0 <= row.latency_s <= row.duration_s
        assert row.at.endswith("Z") and len(row.at) == len("2026-12-03T16:40:00Z")
    assert (streamed.stop_reason, whole.stop_reason) == ("end_turn", "max_tokens")


async def test_one_connection_carries_request_after_request(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway, client(gateway) as session:
        ports = set()
        for _ in range(3):
            async with session.stream("POST", MESSAGES, json=BODY) as response:
                await response.aread()
                ports.add(response.extensions["network_stream"].get_extra_info("client_addr"))
    assert len(ports) == 1, "each request came on a new connection: keep-alive is broken"
    assert [row.status for row in gate.rows] == [200] * 3


async def test_the_budget_refuses_without_reaching_the_provider(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        assert (await post(gateway)).status_code == 200
        gate.refuse = "the batch's budget of 100 cents is reached"
        refused = await post(gateway)
    assert refused.status_code == 400
    assert refused.json()["error"] == {"type": "invalid_request_error",
                                       "message": "the batch's budget of 100 cents is reached"}
    assert refused.headers["x-should-retry"] == "false"
    assert len(provider.requests) == 1
    stats = gateway.stats()
    assert (stats.forwarded, stats.budget_refused, stats.refused) == (1, 1, {"budget": 1})
    assert [row.refused for row in gate.rows] == [None, "budget"]


def write_login(directory: Path, token: str, *, expires_in_s: float) -> Credentials:
    import time
    path = directory / ".credentials.json"
    path.write_text(json.dumps({"claudeAiOauth": {
        "accessToken": token, "refreshToken": "never-used",
        "expiresAt": int((time.time() + expires_in_s) * 1000)}}))
    return Credentials(credentials_file=path, api_key_env=None, api_key=None)


async def test_an_expired_login_is_refused_and_says_how_to_log_in(
        provider: LoopbackProvider, gate: Gate, tmp_path: Path) -> None:
    login = write_login(tmp_path, "old-token", expires_in_s=-60)
    async with open_upstream(provider.url, login) as upstream, \
            open_gateway(upstream, gate) as gateway:
        response = await post(gateway, bearer=True)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert "expired" in response.json()["error"]["message"]
    assert "log in again" in response.json()["error"]["message"]
    assert provider.requests == []
    stats = gateway.stats()
    assert stats.refused == {"login": 1} and stats.login_failure is not None
    assert "log in again" in stats.login_failure and "old-token" not in stats.login_failure
    assert gate.rows[0].refused == "login"


async def test_a_changed_login_file_is_read_again(provider: LoopbackProvider, gate: Gate,
                                                  tmp_path: Path) -> None:
    login = write_login(tmp_path, "token-one", expires_in_s=3600)
    async with open_upstream(provider.url, login) as upstream, \
            open_gateway(upstream, gate) as gateway:
        await post(gateway, bearer=True)
        write_login(tmp_path, "token-two-longer", expires_in_s=3600)
        await post(gateway, bearer=True)
    assert [r.header("authorization") for r in provider.requests] == [
        ["Bearer token-one"], ["Bearer token-two-longer"]]


async def test_a_login_the_provider_refuses_is_a_login_failure_until_the_file_changes(
        provider: LoopbackProvider, gate: Gate, tmp_path: Path) -> None:
    login = write_login(tmp_path, "revoked", expires_in_s=3600)
    provider.mode = "unauthorized"
    async with open_upstream(provider.url, login) as upstream, \
            open_gateway(upstream, gate) as gateway:
        first = await post(gateway, bearer=True)
        second = await post(gateway, bearer=True)
        provider.mode = "stream"
        write_login(tmp_path, "renewed-token", expires_in_s=3600)
        third = await post(gateway, bearer=True)
    assert (first.status_code, second.status_code, third.status_code) == (401, 401, 200)
    assert first.json()["error"]["message"] == "invalid token"  # the provider's, relayed
    assert "log in again" in second.json()["error"]["message"]  # the gateway's own
    assert len(provider.requests) == 2
    stats = gateway.stats()
    assert stats.login_failure is not None and "refused" in stats.login_failure
    assert stats.refused == {"login": 1}


async def test_a_body_over_the_bound_is_refused_413(provider: LoopbackProvider,
                                                    api_key: Credentials, gate: Gate) -> None:
    big = b"x" * 5000

    async def chunked() -> Any:
        for start in range(0, len(big), 1000):
            yield big[start:start + 1000]

    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate, max_body_bytes=4096) as gateway, \
            client(gateway) as session:
        declared = await session.post(MESSAGES, content=big)
        streamed = await session.post(MESSAGES, content=chunked())
        fits = await session.post(MESSAGES, content=big[:4096])
    assert (declared.status_code, streamed.status_code, fits.status_code) == (413, 413, 200)
    assert declared.json()["error"]["type"] == "request_too_large"
    assert gateway.stats().refused == {"too-large": 2}
    assert len(provider.requests) == 1


async def test_a_declared_length_over_the_bound_is_refused_before_its_body_is_read(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        port = int(gateway.base_url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as raw:
            await raw.send(b"POST " + MESSAGES.encode() + b" HTTP/1.1\r\nhost: x\r\n"
                           b"x-api-key: " + gateway.placeholder.encode() + b"\r\n"
                           b"content-length: 1000000000\r\n\r\n")  # and no body at all
            with anyio.fail_after(5):
                answer = await raw.receive()
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"connection: close" in answer.lower()
    assert gateway.stats().refused == {"too-large": 1}


async def test_a_client_that_waits_for_100_continue_is_sent_it(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    body = json.dumps(BODY).encode()
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        port = int(gateway.base_url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as raw:
            await raw.send(b"POST " + MESSAGES.encode() + b" HTTP/1.1\r\nhost: x\r\n"
                           b"x-api-key: " + gateway.placeholder.encode() + b"\r\n"
                           b"expect: 100-continue\r\ncontent-length: "
                           + str(len(body)).encode() + b"\r\n\r\n")
            with anyio.fail_after(5):
                assert (await raw.receive()).startswith(b"HTTP/1.1 100 ")
                await raw.send(body)
                answer = await raw.receive()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert [seen.body for seen in provider.requests] == [body]


async def test_over_the_connection_cap_a_request_is_answered_503(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate, max_connections=1) as gateway:
        port = int(gateway.base_url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port):  # holds the one connection
            await anyio.sleep(0.1)
            response = await post(gateway)
        assert response.status_code == 503
        assert response.json()["error"]["type"] == "overloaded_error"
        assert gateway.stats().refused == {"over-cap": 1}
        await anyio.sleep(0.1)
        assert (await post(gateway)).status_code == 200  # the first connection closed
    assert [row.refused for row in gate.rows] == ["over-cap", None]


async def test_a_connection_over_the_cap_is_answered_503_before_it_sends_anything(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate, max_connections=1) as gateway:
        port = int(gateway.base_url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port), \
                await anyio.connect_tcp("127.0.0.1", port) as over:  # sends nothing
            answer = b""
            with anyio.fail_after(3):  # not held until a request comes
                try:
                    while True:
                        answer += await over.receive()
                except anyio.EndOfStream:
                    pass
        assert answer.startswith(b"HTTP/1.1 503 ")
        assert b'"overloaded_error"' in answer
        assert gateway.stats().refused == {"over-cap": 1}
    assert [(row.refused, row.method, row.path) for row in gate.rows] == [("over-cap", "", "")]


async def test_bytes_that_are_not_http_are_refused_400(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        port = int(gateway.base_url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as raw:
            await raw.send(b"\x16\x03\x01 not a request at all\r\n\r\n")
            answer = await raw.receive()
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert gateway.stats().refused == {"malformed": 1}
    assert gate.rows[0].refused == "malformed" and gate.rows[0].status == 400


async def test_leaving_with_a_response_in_flight_closes_it_and_still_gives_its_row(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "wait"
    with anyio.fail_after(5):  # the gateway's exit must not wait for the provider
        async with open_upstream(provider.url, api_key) as upstream:
            async with open_gateway(upstream, gate) as gateway:
                raw = await raw_post(gateway)
                received = b""
                while b"message_start" not in received:  # the response has begun
                    received += await raw.receive()
            await raw.aclose()
    (row,) = gate.rows
    assert row.status == 200 and row.message_id == wire.MESSAGE_ID
    assert row.usage is not None and row.usage.output_tokens == 1  # message_delta never came
    assert not provider.release.is_set()


async def raw_post(gateway: Gateway) -> SocketStream:
    """A request written by hand on a new connection (no client library's state to close)."""
    port = int(gateway.base_url.rsplit(":", 1)[1])
    stream = await anyio.connect_tcp("127.0.0.1", port)
    body = json.dumps(BODY).encode()
    await stream.send(b"POST " + MESSAGES.encode() + b" HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                      b"x-api-key: " + gateway.placeholder.encode() + b"\r\n"
                      b"content-type: application/json\r\ncontent-length: "
                      + str(len(body)).encode() + b"\r\n\r\n" + body)
    return stream




async def test_a_session_that_leaves_mid_stream_ends_the_relay_and_its_row(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "wait"
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        raw = await raw_post(gateway)
        received = b""
        while b"message_start" not in received:
            received += await raw.receive()
        await raw.aclose()
        arrived = anyio.Event()
        gate.on_row = arrived.set
        provider.release.set()  # the rest now meets a closed connection
        with anyio.fail_after(5):
            await arrived.wait()
        assert (await post(gateway)).status_code == 200  # the gateway goes on
    first = gate.rows[0]
    assert first.status == 200 and first.message_id == wire.MESSAGE_ID


async def test_a_gate_that_cannot_record_ends_the_gateway_with_its_error(
        provider: LoopbackProvider, api_key: Credentials) -> None:
    class Full(Gate):
        async def observed(self, request: Any) -> None:
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        async with open_upstream(provider.url, api_key) as upstream, \
                open_gateway(upstream, Full()) as gateway:
            assert (await post(gateway)).status_code == 200  # its row comes at its end
            with anyio.fail_after(5):
                await anyio.sleep(10)  # cancelled by the gate's failure, well before 5 s
    assert provider.requests
