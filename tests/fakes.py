"""Small fakes passed as parameters where a test needs no real part (no module is patched).

* `FakeAttempts`: an `AttemptRunner` for `Supervisor(run_attempt=...)` that writes the two
  ledger records a real attempt writes, and ends each session as its script says, without
  a seal, a sandbox or a harness.
* `supervisor_context`: the one field of a `BatchContext` the supervisor itself reads.
* `FakeUpstream`, `FakeGateway`, `FakeGateways`: the batch's upstream and each attempt's
  provider gateway as the campaign sees them (`sandbox.gateway`'s interface), without a
  listener or a provider: `FakeGateways` is a `GatewayOpener` whose gateways replay the
  requests a test gives them through the attempt's gate (its budget asked first, as the
  real gateway asks it) and count as a test says.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import SimpleNamespace
from typing import Literal, TypeAlias, cast

import anyio

from campaign.batch import FinalRecord, GatewayCounts, Journal, SessionKey, StartedRecord
from campaign.supervisor import BatchContext, SessionSpec
from campaign.supervisor._spend import BatchSpend
from campaign.supervisor._writes import HostWriteRefused
from recorder import Event, SessionState
from recorder._vocab import state_retryable
from sandbox.gateway import GatewayStats, KeyVariable, ProviderRequest, SpendGate, Upstream

Behaviour: TypeAlias = SessionState | Literal["bug", "write-refused", "hang", "login-failure"]
"""How a fake attempt ends: in that state (a ``recorded`` one carries an empty event; a
``harness-error`` is a provider's, worth another attempt), by
an unexpected error (``bug``: RuntimeError), by the host refusing its workspace's write
after its started record (``write-refused``, as `HostWriteRefused`: no final record), or
running until the runner cancels it (``hang``: then written ``killed``, not counted), or as
an attempt whose gateway could not use the host's login (``login-failure``: a
``harness-error``, not retryable, whose ``gateway`` counts say `LOGIN_FAILURE`)."""
LOGIN_FAILURE = "the host's login expired at 2026-12-01T00:00:00Z"
STARTED_AT = "2026-12-01T00:00:00Z"
COST_USD = Decimal("0.01")
"""Each fake attempt that ran costs this (USD), as its result line would say."""


@dataclass
class FakeAttempts:
    """An `AttemptRunner` whose sessions end as ``script`` says, by session name.

    Attributes:
        script: session name (``s1``...) -> `Behaviour`.
        refused_after_s: how long a ``write-refused`` attempt runs before the refusal.
        ran: every (session key, attempt) run, in the order they started.
    """

    script: Mapping[str, Behaviour]
    refused_after_s: float = 0.2
    ran: list[tuple[SessionKey, int]] = field(default_factory=list)

    async def __call__(self, spec: SessionSpec, attempt: int, ctx: BatchContext,
                       journal: Journal, *, why_stopped: Callable[[], str],
                       spend: BatchSpend) -> FinalRecord:
        """Write ``started``, then end as scripted (see `Behaviour`)."""
        key = spec.key
        self.ran.append((key, attempt))
        ref = _Ref(key, spec.repetition, attempt, ctx.invocation)
        await journal.record(StartedRecord(arm=key.arm, probe=key.probe, session=key.session,
                                           repetition=spec.repetition, attempt=attempt,
                                           invocation=ctx.invocation, position=spec.position))
        behaviour = self.script[key.session]
        if behaviour == "bug":
            raise RuntimeError("a bug in the runner")
        if behaviour == "write-refused":
            await anyio.sleep(self.refused_after_s)
            raise HostWriteRefused("the session's workspace", OSError(errno.ENOSPC, "No space"))
        if behaviour == "hang":
            try:
                await anyio.sleep(3600)
            except anyio.get_cancelled_exc_class():
                await journal.record(_final(
                    ref, state="killed", reason=f"killed: the runner stopped ({why_stopped()})",
                    retryable=True, counts=False))
                raise
            raise AssertionError("a hanging fake attempt was never cancelled")
        if behaviour == "login-failure":
            failed = _final(ref, state="harness-error", reason="harness-error: login",
                            retryable=False, cost_known=True).model_copy(update={
                "gateway": GatewayCounts(forwarded=0, refused={"login": 1},
                                         provider_cost_usd=Decimal(0), prices="none",
                                         login_failure=LOGIN_FAILURE)})
            await journal.record(failed)
            return failed
        # A harness-error here is the provider's (a 529): worth another attempt.
        retryable = behaviour == "harness-error" or state_retryable(behaviour)
        record = _final(ref, state=behaviour, reason="scripted", retryable=retryable,
                        cost_known=True,
                        event=(Event(probe=key.probe, session=key.session, calls=[],
                                     produced=[], answer=None)
                               if behaviour == "recorded" else None))
        await journal.record(record)
        return record


def _final(ref: _Ref, *, state: SessionState, reason: str, retryable: bool,
           counts: bool = True, cost_known: bool = False,
           event: Event | None = None) -> FinalRecord:
    return FinalRecord(arm=ref.key.arm, probe=ref.key.probe, session=ref.key.session,
                       repetition=ref.repetition, attempt=ref.attempt,
                       invocation=ref.invocation, started_at=STARTED_AT, state=state,
                       reason=reason, retryable=retryable,
                       cost_usd=COST_USD if cost_known else None, cost_known=cost_known,
                       counts=counts, event=event)


@dataclass(frozen=True)
class _Ref:
    key: SessionKey
    repetition: int
    attempt: int
    invocation: int


def supervisor_context(invocation: int = 1) -> BatchContext:
    """A stand-in `BatchContext` for a supervisor whose attempts are fake: the supervisor
    reads only ``invocation`` of it (every other field is the attempt runner's)."""
    return cast(BatchContext, SimpleNamespace(invocation=invocation))


@dataclass
class FakeUpstream:
    """The batch's `sandbox.gateway.Upstream` as the campaign reads it (its URL and key
    variable); it forwards nothing."""

    url: str = "https://provider.invalid"
    key_variable: KeyVariable = "ANTHROPIC_API_KEY"


@dataclass
class FakeGateway:
    """One session's `sandbox.gateway.Gateway` as the campaign reads it."""

    base_url: str
    placeholder: str
    key_variable: KeyVariable
    counted: GatewayStats = field(default_factory=GatewayStats)

    def stats(self) -> GatewayStats:
        """What the test says this gateway counted."""
        return self.counted


@dataclass
class FakeGateways:
    """A `GatewayOpener` whose gateways replay ``requests`` through each attempt's gate.

    On open, each request is offered as the real gateway offers one: the gate's budget is
    asked first (`SpendGate.refusal`); a refused one becomes a ``budget`` refusal row and
    is counted, a forwarded one is handed on as given; every row goes to
    `SpendGate.observed`. ``stats`` adds to what the gateway counts (a login failure).

    Attributes:
        opened: each gateway opened and its gate, in order.
        max_connections: the cap each open was given.
        peer_uids: the users each open was told to take connections of.
    """

    requests: tuple[ProviderRequest, ...] = ()
    stats: GatewayStats = field(default_factory=GatewayStats)
    unbound: OSError | None = None
    """Raised on open, as a listener that cannot be bound raises it."""
    opened: list[tuple[FakeGateway, SpendGate]] = field(default_factory=list)
    max_connections: list[int | None] = field(default_factory=list)
    peer_uids: list[frozenset[int] | None] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def __call__(self, upstream: Upstream, gate: SpendGate, *,
                       max_connections: int | None = None,
                       peer_uids: frozenset[int] | None = None) -> AsyncIterator[FakeGateway]:
        """Open one fake gateway for ``gate`` (see the class)."""
        if self.unbound is not None:
            raise self.unbound
        n = len(self.opened) + 1
        gateway = FakeGateway(base_url=f"http://127.0.0.1:{40000 + n}",
                              placeholder=f"placeholder-{n}",
                              key_variable=upstream.key_variable)
        self.opened.append((gateway, gate))
        self.max_connections.append(max_connections)
        self.peer_uids.append(peer_uids)
        forwarded, refused, budget = 0, dict(self.stats.refused), 0
        for request in self.requests:
            if gate.refusal() is not None:
                budget += 1
                refused["budget"] = refused.get("budget", 0) + 1
                await gate.observed(ProviderRequest(at=request.at, method=request.method,
                                                    path=request.path, status=400,
                                                    refused="budget"))
                continue
            forwarded += 1
            await gate.observed(request)
        gateway.counted = GatewayStats(forwarded=forwarded + self.stats.forwarded,
                                       refused=refused,
                                       budget_refused=budget + self.stats.budget_refused,
                                       login_failure=self.stats.login_failure)
        yield gateway
