"""The provider gateway: a session's only provider, outside its sandbox (RC-03).

Interface only until the gateway lands; see docs/gateway.md for what it does.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .._config import Credentials
from ._types import GatewayStats, KeyVariable, SpendGate

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Upstream:
    """The batch's one way to the provider: its URL, its TLS trust, the real credential.

    Made once per batch by `open_upstream`; every session's gateway forwards through it.
    """

    url: str
    """The provider's base URL (``https://api.anthropic.com``, or a scripted provider's)."""
    key_variable: KeyVariable
    """Where each session finds its placeholder (from the kind of the host's credential)."""


class Gateway:
    """One session's gateway: a loopback listener that takes only this session's placeholder."""

    base_url: str
    """``http://127.0.0.1:<port>``: the session's ``ANTHROPIC_BASE_URL``."""
    placeholder: str
    """The session's random placeholder key (no secret: it is worth nothing elsewhere)."""
    key_variable: KeyVariable
    """The variable the placeholder goes in (`Upstream.key_variable`)."""

    def stats(self) -> GatewayStats:
        """The counts so far (final once the harness has exited)."""
        raise NotImplementedError


@asynccontextmanager
async def open_upstream(url: str, credentials: Credentials, *,
                        ca_file: Path | None = None) -> AsyncIterator[Upstream]:
    """The batch's `Upstream` to ``url`` with ``credentials``, closed on exit.

    Raises:
        ValueError: ``url`` is not an ``http(s)://`` URL with a host.
        CredentialsMissing: the credentials cannot be read.
    """
    raise NotImplementedError
    yield Upstream()  # pragma: no cover


@asynccontextmanager
async def open_gateway(upstream: Upstream, gate: SpendGate, *,
                       max_connections: int | None = None) -> AsyncIterator[Gateway]:
    """One session's `Gateway` on host loopback, listening until exit.

    Raises:
        OSError: the listener cannot be bound.
    """
    raise NotImplementedError
    yield Gateway()  # pragma: no cover
