"""The batch's one way to the provider: one httpx client, the TLS trust, the credential.

`open_upstream` makes it once per batch; every session's gateway forwards through it, so the
batch holds one connection pool and one holder of the host's credential
(`sandbox.gateway._login.CredentialHolder`), whoever the sessions are.
"""

from __future__ import annotations

import ipaddress
import ssl
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

import httpx

from ._login import CredentialHolder

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from .._config import Credentials
    from ._types import KeyVariable

CONNECT_TIMEOUT_S: Final = 30.0
"""Seconds to connect to the provider (and finish TLS) before the session gets a 502."""
READ_TIMEOUT_S: Final = 900.0
"""Seconds without a byte from the provider before a response is given up: long, as the
harness has its own watchdogs; a live stream sends a ping every few seconds."""
WRITE_TIMEOUT_S: Final = 120.0
"""Seconds to send one request (at most the gateway's body bound) to the provider."""
POOL_TIMEOUT_S: Final = 60.0
"""Seconds a request waits for a connection of the pool before the session gets a 502."""
MAX_CONNECTIONS: Final = 512
"""Connections to the provider at once, over the batch (64 sessions at most, a few each)."""
MAX_IN_FLIGHT: Final = 8
"""A session's requests at the provider at once: `MAX_CONNECTIONS` over the 64 sessions a
batch runs at most (``sandbox.users.MAX_POOL_USERS``), so that no session, however many of
its responses it leaves unread, holds a connection of the pool another session needs; a
session's further requests wait for one of its own to end."""
MAX_KEEPALIVE: Final = 64
"""Idle connections kept for reuse."""
KEEPALIVE_S: Final = 30.0
"""Seconds an idle connection is kept."""


class Upstream:
    """The batch's one way to the provider: its URL, its TLS trust, the real credential.

    Made once per batch by `open_upstream`; every session's gateway forwards through it.

    Args:
        url: The provider's base URL, without a trailing ``/``.
        client: The batch's httpx client (its pool, its trust).
        holder: The batch's credential.
    """

    url: str
    """The provider's base URL (``https://api.anthropic.com``, or a scripted provider's)."""
    key_variable: KeyVariable
    """Where each session finds its placeholder (from the kind of the host's credential)."""

    def __init__(self, url: str, client: httpx.AsyncClient, holder: CredentialHolder) -> None:
        self.url = url
        self.client = client
        self.holder = holder
        self.key_variable = holder.key_variable

    def __repr__(self) -> str:
        return f"<Upstream {self.url} {self.holder.kind}>"


def check_url(url: str) -> str:
    """``url`` without its trailing ``/``, once it is a provider URL the gateway may use.

    Raises:
        ValueError: not ``http(s)://`` with a host, or plain ``http://`` to a host that is
            not loopback (only a scripted provider on this host is spoken to in the clear).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the provider URL must be http(s):// with a host, got {url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"the provider URL must have no query or fragment, got {url!r}")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ValueError(f"the provider URL {url!r} is plain http to a host that is not "
                         "loopback: the credential would cross the network in the clear; "
                         "use https://")
    return url.rstrip("/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@asynccontextmanager
async def open_upstream(url: str, credentials: Credentials, *,
                        ca_file: Path | None = None) -> AsyncIterator[Upstream]:
    """The batch's `Upstream` to ``url`` with ``credentials``, closed on exit.

    One httpx client, HTTP/1.1, its pool bounded (`MAX_CONNECTIONS`), connect
    `CONNECT_TIMEOUT_S`, read `READ_TIMEOUT_S`; it trusts the CAs of ``ca_file`` when given
    (a scripted provider's own certificate: ``--provider-ca``), httpx's default bundle
    (certifi's) otherwise. It reads no proxy, certificate or netrc setting from the
    environment: the gateway reaches the provider directly, with the credential it holds.

    Raises:
        ValueError: ``url`` is not an ``http(s)://`` URL with a host, or plain ``http://``
            to a host that is not loopback.
        CredentialsMissing: the credentials cannot be read.
        OSError, ssl.SSLError: ``ca_file`` cannot be read as CA certificates.
    """
    base = check_url(url)
    holder = CredentialHolder(credentials)
    verify: ssl.SSLContext | bool = (ssl.create_default_context(cafile=str(ca_file))
                                     if ca_file is not None else True)
    client = httpx.AsyncClient(
        verify=verify, http1=True, http2=False, trust_env=False, follow_redirects=False,
        timeout=httpx.Timeout(connect=CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S,
                              write=WRITE_TIMEOUT_S, pool=POOL_TIMEOUT_S),
        limits=httpx.Limits(max_connections=MAX_CONNECTIONS,
                            max_keepalive_connections=MAX_KEEPALIVE, keepalive_expiry=KEEPALIVE_S),
    )  # fmt: skip
    async with client:
        yield Upstream(base, client, holder)
