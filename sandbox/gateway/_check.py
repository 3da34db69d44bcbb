"""Doctor's ``gateway`` check: the gateway proven on this host against a throwaway provider.

One gateway on host loopback in front of a provider of the check's own (a thread on
loopback that records what reaches it), with a key of the check's own: the host's real
credential is never read, so nothing secret can be printed. The gateway takes connections
only of this process's user, as a batch's takes only its own users' (so the check fails
where the owner of a connection cannot be read). Three requests: with the
gateway's placeholder (must reach the provider carrying the check's key and not the
placeholder), with another key and to another path (each must be refused, counted, and
never reach the provider).
"""

from __future__ import annotations

import http.server
import os
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import httpx

from .._config import Credentials
from .._report import Check
from .._sync import NestedEventLoop, run_sync
from ._gateway import open_gateway
from ._paths import ALLOWED
from ._peer import diag_answers
from ._types import GatewayStats, ProviderRequest
from ._upstream import open_upstream

CHECK_TIMEOUT_S: Final = 30.0
"""The check takes well under a second; more means something hangs."""
_OTHER_PATH: Final = "/v1/complete"
_FIX: Final = ("the gateway is part of the runner: reinstall it (`make setup`), and see "
               "docs/gateway.md; nothing of the host needs changing for it")


@dataclass
class Observed:
    """What the check saw (no key in it: flags and counts only).

    Attributes:
        statuses: The session's three answers: placeholder, another key, another path.
        upstream_requests: Requests that reached the throwaway provider.
        upstream_had_key: The provider's one request carried the check's key as x-api-key.
        upstream_had_placeholder: The placeholder reached the provider in some header.
        stats: The gateway's counts.
        rows: The rows the gateway handed its gate.
    """

    statuses: tuple[int, int, int]
    upstream_requests: int
    upstream_had_key: bool
    upstream_had_placeholder: bool
    stats: GatewayStats
    rows: list[ProviderRequest] = field(default_factory=list)


def gateway_check(*, timeout_s: float = CHECK_TIMEOUT_S) -> Check:
    """Does the provider gateway work on this host? One doctor answer, named ``gateway``.

    Returns:
        ``ok`` (the placeholder swapped for the key, another key and another path refused
        and counted), ``broken`` (one of those did not hold; ``fix`` says what to do) or
        ``unverified`` (could not tell: loopback cannot be bound, a timeout, a running
        event loop). Never raises for a host problem, never prints a key.
    """
    try:
        with _Provider() as provider:
            observed = run_sync(_observe, provider, timeout_s)
    except TimeoutError:
        return Check("gateway", "unverified", f"the check timed out (bound: {timeout_s:g} s)")
    except httpx.HTTPError as exc:
        return Check("gateway", "broken", f"the gateway on host loopback could not be spoken "
                     f"to: {type(exc).__name__}: {exc}", _FIX)
    except (OSError, NestedEventLoop) as exc:
        return Check("gateway", "unverified", f"not run: {exc}")
    return verdict(observed)


async def _observe(provider: _Provider, timeout_s: float) -> Observed:
    credentials = Credentials(credentials_file=None, api_key_env=None, api_key=provider.key)
    rows: list[ProviderRequest] = []

    class _Gate:
        def refusal(self) -> str | None:
            return None

        async def observed(self, request: ProviderRequest) -> None:
            rows.append(request)

    path = sorted(ALLOWED)[0][1]
    with anyio.fail_after(timeout_s):
        async with open_upstream(provider.url, credentials) as upstream, \
                open_gateway(upstream, _Gate(),
                             peer_uids=frozenset({os.geteuid()})) as gateway, \
                httpx.AsyncClient(base_url=gateway.base_url, trust_env=False) as session:
            own = await session.post(path, json={}, headers={"x-api-key": gateway.placeholder})
            other = await session.post(path, json={}, headers={"x-api-key": "sk-ant-other"})
            wrong = await session.post(_OTHER_PATH, json={},
                                       headers={"x-api-key": gateway.placeholder})
            stats = gateway.stats()
            placeholder = gateway.placeholder
    seen = list(provider.seen)
    return Observed(
        statuses=(own.status_code, other.status_code, wrong.status_code),
        upstream_requests=len(seen),
        upstream_had_key=len(seen) == 1 and seen[0].get("x-api-key") == provider.key,
        upstream_had_placeholder=any(placeholder in value for headers in seen
                                     for value in headers.values()),
        stats=stats, rows=rows)  # fmt: skip


def verdict(observed: Observed) -> Check:
    """The ``gateway`` answer from what the check saw (`Observed`)."""
    problems: list[str] = []
    own, other, wrong = observed.statuses
    if own != 200 or not observed.upstream_had_key:
        problems.append(f"a request with the placeholder was not forwarded with the real key "
                        f"(answered {own})")
    if observed.upstream_had_placeholder:
        problems.append("the placeholder reached the provider")
    if other != 401 or observed.stats.refused.get("placeholder") != 1:
        problems.append(f"a request with another key was not refused and counted (answered "
                        f"{other}, counted {observed.stats.refused})")
    if wrong != 404 or observed.stats.refused.get(f"path POST {_OTHER_PATH}") != 1:
        problems.append(f"a request to {_OTHER_PATH} was not refused and counted (answered "
                        f"{wrong}, counted {observed.stats.refused})")
    if observed.upstream_requests != 1:
        problems.append(f"{observed.upstream_requests} requests reached the provider, not 1")
    if len(observed.rows) != 3:
        problems.append(f"{len(observed.rows)} requests were recorded, not 3")
    if problems:
        return Check("gateway", "broken", "; ".join(problems), _FIX)
    return Check("gateway", "ok",
                 "a gateway on host loopback forwarded its placeholder's request with the real "
                 "key in its place (the placeholder never reached the provider); another key "
                 f"(401) and {_OTHER_PATH} (404) were refused and counted; each request "
                 "recorded; each connection's owner read from the kernel "
                 f"({'sock_diag' if diag_answers() else 'its TCP table, sock_diag not answering'})"
                 " (the check's own provider and key: no credential of the host read)")


class _Provider:
    """A throwaway provider on host loopback that records each request's headers."""

    def __init__(self) -> None:
        self.key = "sk-ant-check-" + secrets.token_urlsafe(16)
        self.seen: list[dict[str, str]] = []

    def __enter__(self) -> _Provider:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.seen = self.seen  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="gateway-check-provider", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"type":"message","id":"msg_check","model":"check","usage":{}}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
