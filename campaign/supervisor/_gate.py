"""One attempt's side of its provider gateway: prices, ledger rows, counts, and its verdict.

`AttemptGate` is the `sandbox.gateway.SpendGate` the campaign binds to each attempt: the
gateway asks it before forwarding a request (the batch's budget, `BatchSpend`) and hands
it every request once its response has ended; it prices the row (`Prices`), adds it to
the batch's realized spend, writes it to the ledger as a ``request`` record (docs/batch.md
"The ledger") and keeps the attempt's sums for its final record's ``gateway`` counts.
Once the harness has exited, `AttemptGate.verdict` says what the gateway's refusals make
of the attempt (docs/batch.md "Session states"): a budget refusal ends it
``budget-stopped``; a login the gateway could not use ends it ``harness-error``, not
retried, with how to log in again.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Final, Protocol

import recorder
from campaign.batch import GatewayCounts, RequestRecord, TokenUsage
from campaign.supervisor._writes import refused_write
from sandbox.gateway import LOGIN_FIX, MAX_TEXT

if TYPE_CHECKING:
    from campaign.batch import Journal, SessionKey
    from recorder import SessionState
    from sandbox.gateway import GatewayStats, ProviderRequest, Usage

    from ._spend import BatchSpend

UNPRICED_MODELS_KEPT: Final = 20
"""Served models the price table lacks that one attempt's counts name (further ones are
still counted in ``unpriced_requests``)."""
LOGIN_HOW: Final = ("log in again with Claude Code on the host (`claude`, then /login), or "
                    "pass --api-key-env NAME; a long batch needs a login that outlasts it, "
                    "or an API key")
"""How to get a usable credential, for a reason that names a login failure."""
REFUSED_ROWS_KEPT: Final = 1_000
"""Rows of refused requests the ledger takes per attempt. A session controls how many
requests it sends its gateway, each refused one a row of the batch's ledger on the host
(outside the session's disk quota): past this many, each is still counted in the final
record's ``gateway.refused`` and the row is not written (``refused_rows_not_written``).
Forwarded requests always get their row: each is priced, and the provider bounds them."""


def cut_short(request: ProviderRequest) -> bool:
    """Whether a forwarded request's response ended before its final usage (RC-14's lower
    bound): the provider answered 200 and its message began (usage read) but no stop reason
    came, which a whole message always has; the stream broke off, or the session left. Its
    usage is then the first event's (the input, a few output tokens): the known part is
    priced and the request counts in ``unpriced_requests``, the output generated after it
    being unknown."""
    return (request.refused is None and request.status == 200 and request.usage is not None
            and request.stop_reason is None)


def login_reason(failure: str) -> str:
    """The gateway's login failure without the fix it ends with (`sandbox.gateway.LOGIN_FIX`,
    which the harness is told): the record keeps the reason, bounded, and every message
    that shows it adds `LOGIN_HOW` once."""
    return failure.removesuffix(f": {LOGIN_FIX}")


class Prices(Protocol):
    """A price table: what a provider request cost, from the provider's own usage (RC-14)."""

    @property
    def date(self) -> str:
        """The table's date, ``YYYY-MM-DD`` (a ``request`` record's ``prices``)."""
        ...

    def cost_usd(self, request: ProviderRequest) -> Decimal | None:
        """The request's cost, exact USD; None when unknown (no usage read, a model the
        table lacks)."""
        ...


class ProductPrices:
    """The price table that ships with the product (`recorder.price_usage`, dated
    `recorder.PRICE_TABLE_DATE`; RC-14). A request without usage, or whose counts the table
    refuses, is priced unknown (None), never zero; so is a model the table lacks."""

    date: str = recorder.PRICE_TABLE_DATE
    """The table's date, ``YYYY-MM-DD``."""

    def cost_usd(self, request: ProviderRequest) -> Decimal | None:
        """The request's exact USD from its served model and usage; None when unknown."""
        if request.usage is None:
            return None
        try:
            return recorder.price_usage(request.model, request.usage)
        except ValueError:  # a count the table refuses: unknown, never a broken gateway
            return None


@dataclass(frozen=True, slots=True)
class AttemptRef:
    """The attempt a gate's rows belong to (the fields of the ledger's ``SessionRef``)."""

    key: SessionKey
    repetition: int
    attempt: int
    invocation: int


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """What the gateway's refusals make of an attempt: its state, reason and retryable."""

    state: SessionState
    reason: str
    retryable: bool
    only_over: SessionState | None = None
    """The stream's state this verdict replaces, or None for any: a provider the gateway
    could not reach explains a ``harness-error``, never a session that recorded."""


class AttemptGate:
    """The `sandbox.gateway.SpendGate` of one attempt (module docstring).

    Args:
        ref: The attempt its rows name.
        spend: The batch's realized spend and budget, shared by every attempt.
        journal: Where the ``request`` records go.
        prices: The price table (`Prices`).
    """

    def __init__(self, ref: AttemptRef, *, spend: BatchSpend, journal: Journal,
                 prices: Prices) -> None:
        self._ref = ref
        self._spend = spend
        self._journal = journal
        self._prices = prices
        self.cost_usd = Decimal(0)
        """The attempt's priced requests, exact USD."""
        self.unpriced_requests = 0
        self._unpriced_models: set[str] = set()
        self._models: dict[str, str] = {}
        """``message_id`` -> served model, of every row that carried both."""
        self.budget_refusal: str | None = None
        """The first budget refusal this attempt's gateway was given, in words."""
        self.write_error: OSError | None = None
        """The host refused a ``request`` record's write (disk full): the attempt stops."""
        self.unreached: str | None = None
        """Why the gateway could not reach the provider, the first time it could not."""
        self.refused_rows = 0
        """Rows of refused requests written for this attempt (at most `REFUSED_ROWS_KEPT`)."""
        self.refused_rows_not_written = 0
        """Refused requests past `REFUSED_ROWS_KEPT`: counted in ``gateway.refused``, no row."""

    def refusal(self) -> str | None:
        """`SpendGate.refusal`: the batch's budget (`BatchSpend.refusal`)."""
        why = self._spend.refusal()
        if why is not None and self.budget_refusal is None:
            self.budget_refusal = why
        return why

    async def observed(self, request: ProviderRequest) -> None:
        """`SpendGate.observed`: price ``request``, add it to the batch's spend, write its
        ``request`` record, count it.

        A write the host refuses (disk full) is kept in `write_error`, not raised into the
        gateway: the attempt raises it once its harness has exited.

        Raises:
            OSError: any other write failure (a bug, or a broken ledger).
        """
        cost = self._prices.cost_usd(request) if request.refused is None else None
        if cost is not None:
            self.cost_usd += cost
            self._spend.add(self._ref.key, self._ref.attempt, cost)
            if cut_short(request):
                self.unpriced_requests += 1  # priced in part: the figure is a lower bound
        elif request.refused is None:
            self.unpriced_requests += 1
            if request.model is not None and len(self._unpriced_models) < UNPRICED_MODELS_KEPT:
                self._unpriced_models.add(request.model[:MAX_TEXT])
        if (request.refused is None and request.upstream_error is not None
                and request.latency_s is None and self.unreached is None):
            self.unreached = request.upstream_error[:MAX_TEXT]  # no response ever began
        if request.message_id is not None and request.model is not None:
            self._models[request.message_id[:MAX_TEXT]] = request.model[:MAX_TEXT]
        if request.refused is not None:
            if self.refused_rows >= REFUSED_ROWS_KEPT:  # a flood: counted, not each written
                self.refused_rows_not_written += 1
                return
            self.refused_rows += 1
        record = self._record(request, cost)
        try:
            await self._journal.record(record)
        except OSError as exc:
            if not refused_write(exc):
                raise
            self.write_error = self.write_error or exc

    def _record(self, request: ProviderRequest, cost: Decimal | None) -> RequestRecord:
        ref, usage = self._ref, request.usage
        return RequestRecord(
            arm=ref.key.arm, probe=ref.key.probe, session=ref.key.session,
            repetition=ref.repetition, attempt=ref.attempt, invocation=ref.invocation,
            at=request.at, method=request.method[:MAX_TEXT], path=request.path[:MAX_TEXT],
            status=request.status, refused=request.refused,
            request_id=_cut(request.request_id), message_id=_cut(request.message_id),
            model=_cut(request.model), requested_model=_cut(request.requested_model),
            usage=None if usage is None else _token_usage(usage),
            stop_reason=_cut(request.stop_reason), latency_s=request.latency_s,
            duration_s=request.duration_s, system_digest=_cut(request.system_digest),
            upstream_error=_cut(request.upstream_error), cost_usd=cost,
            prices=self._prices.date if cost is not None else None)

    def served_model(self, message_id: str | None) -> str | None:
        """The model the provider served the response ``message_id`` with (its row's), or
        None when no row of this attempt carried that id."""
        return None if message_id is None else self._models.get(message_id[:MAX_TEXT])

    def counts(self, stats: GatewayStats) -> GatewayCounts:
        """The final record's ``gateway``: what the gateway counted (``stats``, final once
        the harness has exited) and what this gate priced."""
        given: dict[str, object] = {
            "forwarded": stats.forwarded, "refused": dict(sorted(stats.refused.items())),
            "provider_cost_usd": self.cost_usd, "prices": self._prices.date}
        if self._unpriced_models:  # the optional keys: written only when they say something
            given["unpriced_models"] = sorted(self._unpriced_models)
        if self.unpriced_requests:
            given["unpriced_requests"] = self.unpriced_requests
        if stats.login_failure is not None:
            given["login_failure"] = login_reason(stats.login_failure)[:MAX_TEXT]
        if self.refused_rows_not_written:
            given["refused_rows_not_written"] = self.refused_rows_not_written
        return GatewayCounts.model_validate(given)

    def verdict(self, stats: GatewayStats) -> GateVerdict | None:
        """What the gateway's refusals make of the attempt, or None (the stream decides).

        A login the gateway could not use ends it ``harness-error``, not retryable (an
        authentication failure: docs/batch.md "Session states"), with how to log in again;
        else a budget refusal ends it ``budget-stopped``, retryable on a resume with a
        larger ``--max-cost-cents``; else a provider the gateway could not reach (no
        response began) names that cause in a ``harness-error``, retryable, and leaves any
        other state as the stream decided it.
        """
        if stats.login_failure is not None:
            return GateVerdict(
                "harness-error",
                f"harness-error: the provider gateway could not use the host's login: "
                f"{login_reason(stats.login_failure)}; an authentication failure is not "
                "retried: "
                f"{LOGIN_HOW}", retryable=False)
        if stats.budget_refused:
            n = stats.budget_refused
            why = self.budget_refusal or "the batch's cost budget is reached"
            return GateVerdict(
                "budget-stopped",
                f"budget-stopped: the provider gateway refused {n} request"
                f"{'' if n == 1 else 's'} of this session because {why}; a resume with a "
                "larger --max-cost-cents runs the session again", retryable=True)
        if self.unreached is not None:  # retryable: a connection error (docs/batch.md)
            return GateVerdict(
                "harness-error",
                f"harness-error: the provider gateway could not reach the provider "
                f"({self.unreached}); check --provider-url, and --provider-ca for a provider "
                "whose certificate a private CA signed", retryable=True,
                only_over="harness-error")
        return None


def _token_usage(usage: Usage) -> TokenUsage:
    """The record's ``usage``: every count, the cache split only when the provider gave it."""
    given = {name: getattr(usage, name) for name in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens",
        "cache_read_input_tokens", "cache_creation_5m_tokens", "cache_creation_1h_tokens")}
    return TokenUsage.model_validate({k: v for k, v in given.items() if v is not None})


def _cut(text: str | None) -> str | None:
    """A string the gateway reported, at most `MAX_TEXT` characters (a record's bound)."""
    return None if text is None else text[:MAX_TEXT]
