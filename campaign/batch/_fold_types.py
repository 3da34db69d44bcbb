"""The fold's shapes: a session's key and log, an arm's counts, the snapshot for display.

What `campaign.batch._fold.BatchFold` keeps per session and per arm, and the frozen
`BatchStatistics` it gives the live view and ``status``; small and plain, so a
10,000-session batch holds a few hundred bytes per session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ._records import BudgetStopRecord, StoppedRecord


class SessionKey(NamedTuple):
    """One session of a batch: (arm, probe, session name)."""

    arm: str
    probe: str
    session: str


@dataclass(slots=True)
class SessionLog:
    """What the ledger says of one session so far."""

    key: SessionKey
    repetition: int
    planned: bool = False
    """The plan names it (``record``'s sessions are not planned)."""
    attempts: int = 0
    """Attempts started, over every invocation."""
    running: bool = False
    """The last attempt started and has no final record (running, or the runner died)."""
    state: str | None = None
    """The state of the last final record; None before any. (Its reason stays in the
    ledger: nothing reads it here, and a batch held one string per session.)"""
    retryable: bool = False
    outside_paths: int = 0
    started_at: str | None = None
    """The first attempt's start (RFC 3339 UTC)."""
    first_state: str | None = None
    """The state of attempt 1's final record when it counts (first-attempt outcomes apart
    from retried ones); None while it has none: running, or interrupted (it never got a final
    record, or its runner wrote it ``killed`` with ``counts: false``)."""
    interrupted: bool = False
    """The last attempt was cut short by its runner: the runner died before its final
    record, or it stopped (a signal, a refused write) and wrote it ``killed`` with
    ``counts: false``. Its cost is unknown (the harness may have spent), and the
    session is outstanding, where its previous final record left it."""
    rows_usd: Decimal | None = None
    """The priced ``request`` rows of the last attempt (USD), while it has no final record:
    realized spend if it is interrupted (RC-14). Cleared when the attempt ends."""

    @property
    def standing(self) -> str:
        """Where the session is counted (its arm's `ArmCounts`, and the report's tallies).

        ``running`` while its last attempt runs; else the state of its last final record,
        which stays the last word on the session until a new final record lands, even when
        a later attempt was interrupted; else ``interrupted`` (an attempt ended with no
        final record of its own) or ``not-started`` (docs/batch.md, "Session states").
        """
        if self.running:
            return "running"
        if self.state is not None:
            return self.state
        return "interrupted" if self.interrupted else "not-started"

    @property
    def finished(self) -> bool:
        """A final state that nothing reruns: recorded, or not retryable."""
        return self.state is not None and not self.running and not self.retryable

    @property
    def outstanding(self) -> bool:
        """Not finished: never started, running or interrupted, or last ended retryable."""
        return not self.finished


@dataclass(slots=True)
class ArmCounts:
    """Per-arm counts of the sessions by `SessionLog.standing`, kept as records arrive;
    every denominator is ``planned``."""

    planned: int = 0
    recorded: int = 0
    refused: int = 0
    failed: int = 0
    """Final in a state that is neither recorded nor refused (retryable ones included)."""
    running: int = 0
    retried: int = 0
    """Sessions with more than one attempt."""
    cost_usd: Decimal = field(default_factory=Decimal)
    """Sum of every known attempt cost of the arm, USD (RC-14's source per attempt:
    `campaign.batch._spend`)."""
    cost_unknown: int = 0
    """Attempts whose cost is unknown (the figure is then a lower bound)."""
    interrupted: int = 0
    """Sessions whose last attempt was interrupted (`SessionLog.interrupted`) and that have no
    earlier final record; one that has is counted where that record left it."""
    unpriced_requests: int = 0
    """Provider requests priced as unknown (a model the price table lacks): a lower bound."""

    @property
    def lower_bound(self) -> bool:
        """The arm's cost may be higher: an attempt of unknown cost, or an unpriced request."""
        return self.cost_unknown > 0 or self.unpriced_requests > 0

    @property
    def final(self) -> int:
        """Sessions whose last attempt is final (recorded, refused or failed)."""
        return self.recorded + self.refused + self.failed

    @property
    def queued(self) -> int:
        """Planned sessions not final, not running and not interrupted: never started."""
        return max(0, self.planned - self.final - self.running - self.interrupted)


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed or refused attempt, for the live view."""

    key: SessionKey
    attempt: int
    state: str
    reason: str


@dataclass(frozen=True, slots=True)
class BatchStatistics:
    """A frozen snapshot of the fold for the live view and ``status`` (no internals)."""

    arms: dict[str, ArmCounts]
    last_failures: tuple[Failure, ...]
    spend_usd: Decimal
    """Every known attempt cost of the batch, USD."""
    cost_unknown: int
    max_cost_cents: int | None
    """The budget of the latest invocation, cents."""
    invocations: int
    last_invocation_pid: int | None
    stopped: StoppedRecord | None
    """The latest invocation's end, None while it runs (or when it was killed)."""
    budget_stop: BudgetStopRecord | None
    harness_versions: tuple[tuple[str, int], ...] = ()
    """(``claude_code_version``, attempts whose init line named it), sorted by version."""
    unpriced_requests: int = 0
    """Provider requests of the batch priced as unknown (the spend is then a lower bound)."""
    provider_priced: int = 0
    """Final attempts priced from the provider's usage by the shipped price table (RC-14)."""
    harness_priced: int = 0
    """Final attempts of known cost priced by the harness's ``total_cost_usd`` (written before
    the gateway)."""
    price_dates: tuple[str, ...] = ()
    """The price tables' dates the provider-priced attempts name, sorted."""

    @property
    def lower_bound(self) -> bool:
        """The spend may be higher: an attempt of unknown cost, or an unpriced request."""
        return self.cost_unknown > 0 or self.unpriced_requests > 0
