"""The gateway's upstream over TLS: a provider with a certificate of the test's own CA
(trustme), trusted through ``ca_file`` and refused without it; plain http only to loopback."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
import trustme

from sandbox.gateway import open_gateway, open_upstream

from .conftest import REAL_KEY, Gate
from .provider import LoopbackProvider

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from sandbox._config import Credentials

pytestmark = pytest.mark.anyio

MESSAGES = "/v1/messages?beta=true"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_provider(ca: trustme.CA) -> Iterator[LoopbackProvider]:
    import ssl
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    served = LoopbackProvider(tls=context)
    try:
        yield served
    finally:
        served.close()


async def ask(base_url: str, placeholder: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base_url, trust_env=False, timeout=20.0) as session:
        return await session.post(MESSAGES, json={"model": "m"},
                                  headers={"x-api-key": placeholder})


async def test_a_provider_of_the_given_ca_is_reached_over_tls(
        tls_provider: LoopbackProvider, ca: trustme.CA, api_key: Credentials, gate: Gate,
        tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    assert tls_provider.url.startswith("https://localhost:")
    async with open_upstream(tls_provider.url, api_key, ca_file=ca_file) as upstream, \
            open_gateway(upstream, gate) as gateway:
        response = await ask(gateway.base_url, gateway.placeholder)
    assert response.status_code == 200
    assert [seen.header("x-api-key") for seen in tls_provider.requests] == [[REAL_KEY]]
    assert gate.rows[0].upstream_error is None


async def test_without_its_ca_the_provider_is_not_trusted_a_502_and_an_upstream_error(
        tls_provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    async with open_upstream(tls_provider.url, api_key) as upstream, \
            open_gateway(upstream, gate) as gateway:
        response = await ask(gateway.base_url, gateway.placeholder)
    assert response.status_code == 502
    assert response.json()["error"]["type"] == "api_error"
    (row,) = gate.rows
    assert row.status == 502 and row.refused is None
    assert row.upstream_error is not None and "could not be reached" in row.upstream_error
    assert "CERTIFICATE_VERIFY_FAILED" in row.upstream_error
    assert tls_provider.requests == []


@pytest.mark.parametrize("url", ["http://api.anthropic.com", "http://10.0.0.1:8080",
                                 "ftp://127.0.0.1", "https://", "api.anthropic.com"])
async def test_plain_http_is_refused_but_to_loopback(url: str, api_key: Credentials) -> None:
    with pytest.raises(ValueError, match="provider URL"):
        async with open_upstream(url, api_key):
            pass


@pytest.mark.parametrize("url", ["http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9",
                                 "https://api.anthropic.com/"])
async def test_loopback_http_and_any_https_are_taken(url: str, api_key: Credentials) -> None:
    async with open_upstream(url, api_key) as upstream:
        assert upstream.url == url.rstrip("/")
