"""What the provider gateway observes and reports: one row per request, a session's counts.

These shapes are the gateway's whole interface to the rest of the runner: the gateway
(`sandbox.gateway.open_gateway`) fills them from what crosses it, outside every sandbox;
the campaign prices them, writes them to the ledger and holds the budget (`SpendGate`).
Every string in them came from the session or the provider, so it is untrusted wherever
it is shown, and each is bounded (`MAX_TEXT`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, TypeAlias

MAX_TEXT: Final = 200
"""Characters kept of any string the gateway reports (a path, a model, a request id)."""

Refusal: TypeAlias = Literal["placeholder", "path", "budget", "login", "malformed",
                             "too-large", "over-cap"]
"""Why the gateway answered a request itself instead of forwarding it:

* ``placeholder`` - no key, or not this session's placeholder (another session's, a guess);
* ``path``        - a method and path the pinned harness does not need;
* ``budget``      - the batch's cost budget is reached (`SpendGate.refusal`);
* ``login``       - the host's login is expired or unreadable (never refreshed here);
* ``malformed``   - not an HTTP/1.1 request the gateway can read;
* ``too-large``   - a request body over the gateway's bound;
* ``over-cap``    - the session already holds its most connections at once.
"""

KeyVariable: TypeAlias = Literal["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]
"""Where the session finds its placeholder: an API key (sent as ``x-api-key``) when the
host's credential is an API key; a bearer token (``Authorization: Bearer``) when it is the
host's login."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one response, as the provider reported it (counts of tokens).

    ``message_start`` gives the first figures and ``message_delta`` the final ones: a field
    a later event carries replaces the earlier value (the provider's counts are cumulative).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_5m_tokens: int | None = None
    """``usage.cache_creation.ephemeral_5m_input_tokens`` when the provider splits it."""
    cache_creation_1h_tokens: int | None = None
    """``usage.cache_creation.ephemeral_1h_input_tokens`` when the provider splits it."""


@dataclass(frozen=True, slots=True)
class ProviderRequest:
    """One request a session sent to the gateway, and how it ended (a ledger row).

    Attributes:
        at: When the request arrived, RFC 3339 UTC, second precision.
        method: The request's method (``POST``), at most `MAX_TEXT` characters.
        path: Its target as sent (path and query), at most `MAX_TEXT` characters.
        status: The status the session was answered with (the provider's, or the
            gateway's own for a refusal); None when no response began (the session left).
        refused: Why the gateway answered itself; None when it forwarded the request.
        request_id: The provider's ``request-id`` response header.
        message_id: ``message.id`` of the response's ``message_start``: the stream's
            assistant lines carry the same id, which ties a row to a line.
        model: The served model, ``message.model`` of ``message_start``.
        requested_model: The request body's ``model``.
        usage: The response's token usage; None when it carried none.
        stop_reason: ``delta.stop_reason`` of the last ``message_delta``.
        latency_s: Seconds from the request's arrival to the provider's response headers.
        duration_s: Seconds from the request's arrival to the end of its response.
        system_digest: ``sha256:<hex>`` of the request's system prompt with its date line
            taken out (docs/gateway.md says exactly what is hashed), so the report can show
            that every session of an arm met the same system prompt; None without one.
        upstream_error: Why the provider could not be reached or its response broke off.
    """

    at: str
    method: str
    path: str
    status: int | None
    refused: Refusal | None = None
    request_id: str | None = None
    message_id: str | None = None
    model: str | None = None
    requested_model: str | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    latency_s: float | None = None
    duration_s: float = 0.0
    system_digest: str | None = None
    upstream_error: str | None = None


@dataclass(frozen=True, slots=True)
class GatewayStats:
    """What one session's gateway counted, final once its harness has exited.

    Attributes:
        forwarded: Requests forwarded to the provider.
        refused: What was refused -> count; a name is the refusal's kind, with the path for
            ``path`` (``"path POST /v1/complete"``), so the prose can list each.
        budget_refused: Requests refused because the budget was reached (also in ``refused``).
        login_failure: Why the host's login could not be used (expired, unreadable,
            refused by the provider: a 401), with how to log in again; None when it could.
    """

    forwarded: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    budget_refused: int = 0
    login_failure: str | None = None


class SpendGate(Protocol):
    """The batch's side of the gateway: the budget it holds and where the rows go.

    One object per attempt (the campaign binds it to the attempt's ledger name), all of a
    batch's sharing one budget; its methods run on the runner's event loop and must not
    block it.
    """

    def refusal(self) -> str | None:
        """None to forward a new request; else why not, in words (the budget is reached)."""
        ...

    async def observed(self, request: ProviderRequest) -> None:
        """One request has ended (forwarded or refused): price it, count it, record it."""
        ...
