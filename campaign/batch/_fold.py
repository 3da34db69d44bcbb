"""The ledger folded into what a batch knows of each session, one record at a time.

`BatchFold.apply` takes each ledger record in order; the fold keeps, per
session, a few counters and its last final record's small facts (never the
event itself; only the batch's very last final record is kept whole), and
per arm the counts a person watching a batch asks for. It is the one reading
of the ledger: ``resume`` asks it what did not finish, the live view and
``status`` ask it for `BatchStatistics`, and ``record`` asks it for the next
session name and the final record its session got. Pure: no I/O, no clock.
"""

from __future__ import annotations

import sys
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Final, NamedTuple

from recorder import is_failure, is_recorded, is_refusal

from ._records import (
    BudgetStopRecord,
    FinalRecord,
    InvocationRecord,
    RequestRecord,
    StartedRecord,
    StoppedRecord,
)
from ._spend import attempt_cost

if TYPE_CHECKING:
    from ._records import LedgerRecord

LAST_FAILURES: Final = 5
"""Failures the statistics keep for the live view (the newest first)."""


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
    realized spend if it is interrupted (RC-14). Kept until the next ``started``."""

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

    @property
    def lower_bound(self) -> bool:
        """The spend may be higher: an attempt of unknown cost, or an unpriced request."""
        return self.cost_unknown > 0 or self.unpriced_requests > 0


class BatchFold:
    """Folds ledger records into per-session logs and per-arm counts.

    Args:
        planned: The sessions the plan names, with their repetitions; sessions
            seen in the ledger and not planned (``record``'s) are added as seen.
    """

    def __init__(self, planned: Iterable[tuple[SessionKey, int]] = ()) -> None:
        self.sessions: dict[SessionKey, SessionLog] = {}
        self.arms: dict[str, ArmCounts] = {}
        self.spend_usd = Decimal(0)
        self.cost_unknown = 0
        self.unpriced_requests = 0
        """Provider requests priced as unknown, over every final attempt."""
        self.largest_attempt_usd: Decimal | None = None
        """The largest known cost of one attempt so far (the budget's projection)."""
        self.invocation: InvocationRecord | None = None
        self.budget_cents: int | None = None
        """The cost budget of the last invocation that ran the batch (run, demo, resume): a
        ``record`` into the batch has none of its own and does not replace it."""
        self.last_run: InvocationRecord | None = None
        """The record of that invocation (the budget's setter in a batch whose config.yaml
        records no budget: `campaign.batch._config.batch_budget`)."""
        self.stopped: StoppedRecord | None = None
        self.budget_stop: BudgetStopRecord | None = None
        self.last_final: FinalRecord | None = None
        """The last final record folded, whole: the one record the fold keeps (``record``
        reports its one session's from it instead of reading the ledger back)."""
        self.harness_versions: Counter[str] = Counter()
        """``claude_code_version`` -> final records (attempts) that name it."""
        self._failures: deque[Failure] = deque(maxlen=LAST_FAILURES)
        self._gone_usd: dict[tuple[SessionKey, int], Decimal] = {}
        """The priced rows of the attempts the last record showed to be interrupted."""
        for key, repetition in planned:
            self._log(key, repetition).planned = True

    def _log(self, key: SessionKey, repetition: int) -> SessionLog:
        log = self.sessions.get(key)
        if log is None:
            log = self.sessions[key] = SessionLog(key, repetition)
            self.arms.setdefault(key.arm, ArmCounts()).planned += 1
        return log

    def key_of(self, record: FinalRecord | StartedRecord | RequestRecord) -> SessionKey:
        """The key the fold holds for ``record``'s session (one object per session for the
        batch, not one per record), or a new one for a session it has not seen."""
        key = SessionKey(record.arm, record.probe, record.session)
        log = self.sessions.get(key)
        return key if log is None else log.key

    def apply(self, record: LedgerRecord) -> list[tuple[SessionKey, int]]:
        """Take the next ledger record (in ledger order).

        Returns:
            The (session, attempt) pairs this record shows to be interrupted: a
            new invocation began while they were running, so their runner died
            (one runner holds a batch at a time). Usually none.
        """
        gone: list[tuple[SessionKey, int]] = []
        self._gone_usd.clear()
        if isinstance(record, StartedRecord):
            gone = self._started(record)
        elif isinstance(record, FinalRecord):
            self._final(record)
        elif isinstance(record, RequestRecord):
            self._request(record)
        elif isinstance(record, InvocationRecord):
            gone = self.runner_gone()
            self.invocation = record
            if record.command != "record":
                self.budget_cents = record.max_cost_cents
                self.last_run = record
            self.stopped = None
            self.budget_stop = None
        elif isinstance(record, StoppedRecord):
            self.stopped = record
        elif isinstance(record, BudgetStopRecord):
            self.budget_stop = record
        return gone

    def runner_gone(self) -> list[tuple[SessionKey, int]]:
        """No runner holds the batch: every attempt still running was interrupted.

        Each one's cost becomes unknown (the spend a lower bound, RC-14) and
        its session goes back to where its last final record left it.

        Returns:
            The (session, attempt) pairs interrupted now.
        """
        gone = []
        self._gone_usd.clear()
        for log in self.sessions.values():
            if log.running:
                self._interrupt(log)
                gone.append((log.key, log.attempts))
        return gone

    def _interrupt(self, log: SessionLog, *, rows: bool = True) -> None:
        """The running attempt of ``log`` ended with no final record of its own: its cost
        is unknown, its priced ``request`` rows (``rows``) realized spend."""
        counts = self.arms[log.key.arm]
        counts.running -= 1
        log.running = False
        log.interrupted = True
        self._count(log, counts)
        counts.interrupted += log.state is None
        counts.cost_unknown += 1
        self.cost_unknown += 1
        if rows and log.rows_usd:
            counts.cost_usd += log.rows_usd
            self.spend_usd += log.rows_usd
            self._gone_usd[(log.key, log.attempts)] = log.rows_usd

    def interrupted_usd(self, key: SessionKey, attempt: int) -> Decimal | None:
        """The priced ``request`` rows of an attempt the last `apply` (or `runner_gone`)
        showed to be interrupted, USD; None when it had none (or is not one of them)."""
        return self._gone_usd.get((key, attempt))

    def _request(self, record: RequestRecord) -> None:
        """A priced provider request of a running attempt: kept until the attempt's final
        record says its cost (then the final record's ``gateway`` sum is the figure)."""
        log = self.sessions.get(SessionKey(record.arm, record.probe, record.session))
        if (log is None or not log.running or record.attempt != log.attempts
                or record.cost_usd is None):
            return
        log.rows_usd = (log.rows_usd or Decimal(0)) + record.cost_usd

    def _started(self, record: StartedRecord) -> list[tuple[SessionKey, int]]:
        key = SessionKey(record.arm, record.probe, record.session)
        log = self._log(key, record.repetition)
        counts = self.arms[key.arm]
        gone = []
        if log.running:  # its earlier attempt never ended: that runner died
            self._interrupt(log)
            gone.append((key, log.attempts))
        self._uncount(log, counts)
        log.interrupted = False
        log.rows_usd = None
        log.attempts = max(log.attempts, record.attempt)
        log.running = True
        log.started_at = log.started_at or sys.intern(record.at)  # shared by a second's starts
        counts.running += 1
        if log.attempts == 2:
            counts.retried += 1
        return gone

    def _final(self, record: FinalRecord) -> None:
        self.last_final = record
        if record.claude_code_version:
            self.harness_versions[record.claude_code_version] += 1
        key = SessionKey(record.arm, record.probe, record.session)
        log = self._log(key, record.repetition)
        counts = self.arms[key.arm]
        cost = attempt_cost(record)
        self.unpriced_requests += cost.unpriced_requests
        counts.unpriced_requests += cost.unpriced_requests
        if not record.counts:  # the runner stopped it: not an outcome of the session
            self._stopped_by_runner(log, record, counts)
            return
        log.rows_usd = None  # the final record's cost replaces its rows'
        self._uncount(log, counts)
        log.interrupted = False
        log.attempts = max(log.attempts, record.attempt)
        log.state, log.retryable = sys.intern(record.state), record.retryable
        log.outside_paths = record.outside_paths
        if record.attempt == 1:
            log.first_state = log.state
        if is_recorded(record.state):
            counts.recorded += 1
        elif is_refusal(record.state):
            counts.refused += 1
        else:
            counts.failed += 1
        if not is_recorded(record.state):
            self._failures.appendleft(Failure(key, record.attempt, record.state, record.reason))
        elif any(f.key == key for f in self._failures):  # a session since recorded: not a failure
            kept = [f for f in self._failures if f.key != key]
            self._failures.clear()
            self._failures.extend(kept)
        if cost.usd is not None:
            counts.cost_usd += cost.usd
            self.spend_usd += cost.usd
            if self.largest_attempt_usd is None or cost.usd > self.largest_attempt_usd:
                self.largest_attempt_usd = cost.usd
        elif cost.unknown:
            counts.cost_unknown += 1
            self.cost_unknown += 1

    def _stopped_by_runner(self, log: SessionLog, record: FinalRecord,
                           counts: ArmCounts) -> None:
        """A ``killed`` attempt the runner ended (``counts: false``): like an interrupted one
        (`_interrupt`), with its cost added when it is known (RC-14's source for it:
        its gateway's sum replaces its rows')."""
        log.attempts = max(log.attempts, record.attempt)
        known = attempt_cost(record).usd
        if log.running:
            self._interrupt(log, rows=known is None)
        else:  # a final without a started record in view (a hand-made ledger)
            counts.interrupted += log.state is None and not log.interrupted
            log.interrupted = True
            counts.cost_unknown += 1
            self.cost_unknown += 1
        log.rows_usd = None
        if known is not None:
            counts.cost_usd += known
            self.spend_usd += known

    @staticmethod
    def _count(log: SessionLog, counts: ArmCounts) -> None:
        """Put the session's last final state back into its arm's counts (`_uncount`'s inverse)."""
        if log.state is None:
            return
        if is_recorded(log.state):
            counts.recorded += 1
        elif is_refusal(log.state):
            counts.refused += 1
        elif is_failure(log.state):
            counts.failed += 1

    @staticmethod
    def _uncount(log: SessionLog, counts: ArmCounts) -> None:
        """Take the session's current standing out of its arm's counts (it is about to move)."""
        if log.running:
            counts.running -= 1
            log.running = False
        elif log.interrupted and log.state is None:
            counts.interrupted -= 1
        elif log.state is not None:
            if is_recorded(log.state):
                counts.recorded -= 1
            elif is_refusal(log.state):
                counts.refused -= 1
            elif is_failure(log.state):
                counts.failed -= 1

    def outstanding(self) -> list[SessionLog]:
        """The sessions that are not finished (``resume`` runs these), in no particular order."""
        return [log for log in self.sessions.values() if log.outstanding]

    def statistics(self) -> BatchStatistics:
        """A frozen copy of the counts for display."""
        arms = {arm: ArmCounts(c.planned, c.recorded, c.refused, c.failed, c.running, c.retried,
                               c.cost_usd, c.cost_unknown, c.interrupted, c.unpriced_requests)
                for arm, c in self.arms.items()}
        inv = self.invocation
        return BatchStatistics(
            arms=arms, last_failures=tuple(self._failures), spend_usd=self.spend_usd,
            cost_unknown=self.cost_unknown,
            max_cost_cents=self.budget_cents,
            invocations=inv.number if inv else 0, last_invocation_pid=inv.pid if inv else None,
            stopped=self.stopped, budget_stop=self.budget_stop,
            harness_versions=tuple(sorted(self.harness_versions.items())),
            unpriced_requests=self.unpriced_requests,
        )
