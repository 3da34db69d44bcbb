"""The scripted provider as a real one is reached: over TLS, and taking one credential only.

A provider gateway forwards to its provider over TLS with the real credential in place of the
session's placeholder (docs/gateway.md), so the tests of the gateway need a scripted provider
that serves HTTPS with a certificate they made (trustme) and refuses any other credential: a
client that trusts the test's CA gets the scripted turn, one that does not is refused by the
handshake, and a plain-HTTP provider is unchanged; with ``credential``, only that key (or
that bearer token with the OAuth beta, as the Messages API wants) is answered.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import pytest
import trustme

from demo import Script, ScriptedProvider

SERVED = "claude-opus-4-8-20261101"
TASK = "TASK-TLS say hello"


def _scripts() -> list[Script]:
    return [Script.model_validate({
        "match": "TASK-TLS", "model": SERVED, "name": "tls",
        "turns": [{"blocks": [{"type": "text", "text": "hello over tls"}],
                   "usage": {"input_tokens": 321, "output_tokens": 12}}]})]  # fmt: skip


def _body() -> bytes:
    return json.dumps({"model": "claude-opus-4-8", "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "text", "text": TASK}]}]}).encode()


def _post(url: str, context: ssl.SSLContext,
          headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    connection = http.client.HTTPSConnection(parts.hostname, parts.port, context=context,
                                             timeout=10)  # fmt: skip
    try:
        connection.request("POST", "/v1/messages?beta=true", body=_body(),
                           headers={"content-type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


def test_a_client_that_trusts_the_ca_gets_the_scripted_turn(
        ca: trustme.CA, server_context: ssl.SSLContext) -> None:
    client = ssl.create_default_context()
    ca.configure_trust(client)
    with ScriptedProvider(_scripts(), tls=server_context) as provider:
        assert provider.url.startswith("https://127.0.0.1:")
        status, message = _post(provider.url, client)
        assert provider.requests == {"tls": 1}
    assert status == 200
    assert message["model"] == SERVED
    assert message["content"] == [{"type": "text", "text": "hello over tls"}]
    assert message["usage"]["input_tokens"] == 321
    assert message["usage"]["output_tokens"] == 12


def test_a_client_without_the_ca_fails_its_handshake_and_the_provider_serves_on(
        ca: trustme.CA, server_context: ssl.SSLContext) -> None:
    untrusting = ssl.create_default_context()  # the system's trust: not the test's CA
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    with ScriptedProvider(_scripts(), tls=server_context) as provider:
        with pytest.raises(ssl.SSLCertVerificationError):
            _post(provider.url, untrusting)
        status, _ = _post(provider.url, trusting)
        assert provider.requests == {"tls": 1}
    assert status == 200


def test_a_plain_http_client_gets_no_answer_from_a_tls_provider(
        server_context: ssl.SSLContext) -> None:
    with ScriptedProvider(_scripts(), tls=server_context) as provider:
        parts = urlsplit(provider.url)
        assert parts.port is not None
        with socket.create_connection(("127.0.0.1", parts.port), timeout=10) as raw:
            raw.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            try:
                answer = raw.recv(4096)
            except ConnectionResetError:
                answer = b""
        assert b"HTTP/1." not in answer  # the handshake failed: no HTTP response was sent
        assert provider.requests == {"tls": 0}


def test_without_tls_the_provider_is_plain_http() -> None:
    with ScriptedProvider(_scripts()) as provider:
        assert provider.url.startswith("http://127.0.0.1:")
        parts = urlsplit(provider.url)
        assert parts.hostname is not None and parts.port is not None
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        try:
            connection.request("POST", "/v1/messages", body=_body())
            response = connection.getresponse()
            assert response.status == 200
            assert json.loads(response.read())["model"] == SERVED
        finally:
            connection.close()


@pytest.mark.parametrize(("headers", "taken"), [
    ({"x-api-key": "sk-real"}, True),
    ({"authorization": "Bearer sk-real", "anthropic-beta": "claude-code-20250219,oauth-2025-04-20"},
     True),
    ({"authorization": "Bearer sk-real", "anthropic-beta": "claude-code-20250219"}, False),
    ({"x-api-key": "sk-placeholder"}, False),
    ({"authorization": "Bearer sk-placeholder", "anthropic-beta": "oauth-2025-04-20"}, False),
    ({"x-api-key": "sk-real-and-more"}, False),
    ({}, False),
], ids=["key", "bearer-with-oauth-beta", "bearer-without-it", "other-key", "other-bearer",
        "longer-key", "none"])
def test_with_a_credential_only_it_is_answered(
        ca: trustme.CA, server_context: ssl.SSLContext, headers: dict[str, str],
        taken: bool) -> None:
    client = ssl.create_default_context()
    ca.configure_trust(client)
    with ScriptedProvider(_scripts(), tls=server_context, credential="sk-real") as provider:
        status, message = _post(provider.url, client, headers)
        assert provider.refused_credentials == (0 if taken else 1)
        assert provider.requests == {"tls": 1 if taken else 0}
        assert "sk-real" not in repr(provider)
    if taken:
        assert status == 200 and message["model"] == SERVED
    else:
        assert status == 401
        assert message == {"type": "error", "error": {"type": "authentication_error",
                                                      "message": "invalid x-api-key"}}


def test_without_a_credential_any_key_is_answered(
        ca: trustme.CA, server_context: ssl.SSLContext) -> None:
    client = ssl.create_default_context()
    ca.configure_trust(client)
    with ScriptedProvider(_scripts(), tls=server_context) as provider:
        status, _ = _post(provider.url, client, {"x-api-key": "anything"})
        assert provider.refused_credentials == 0
    assert status == 200
