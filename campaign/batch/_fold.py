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
from decimal import Decimal
from typing import TYPE_CHECKING, Final

from recorder import is_failure, is_recorded, is_refusal

from ._fold_types import ArmCounts as ArmCounts
from ._fold_types import BatchStatistics as BatchStatistics
from ._fold_types import Failure as Failure
from ._fold_types import SessionKey as SessionKey
from ._fold_types import SessionLog as SessionLog
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
        self.provider_priced = 0
        """Final attempts priced from the provider's usage (their record has ``gateway``)."""
        self.harness_priced = 0
        """Final attempts of known cost priced by the harness's figure (written before the
        gateway)."""
        self.price_dates: dict[str, None] = {}
        """The price tables' dates (``YYYY-MM-DD``) the provider-priced attempts name."""
        self.in_flight_usd = Decimal(0)
        """The priced ``request`` rows of the attempts still running (not in `spend_usd`
        until their final record, or their interruption, settles them)."""
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
        """The running attempt of ``log`` ended with no final record of its own, or one
        with no cost known (``rows``): its cost is unknown, its priced ``request`` rows
        realized spend. With ``rows`` False its final record's cost is known (`_stopped_by_runner`
        adds it): neither unknown nor its rows are counted."""
        counts = self.arms[log.key.arm]
        counts.running -= 1
        log.running = False
        log.interrupted = True
        self._count(log, counts)
        counts.interrupted += log.state is None
        if rows:
            counts.cost_unknown += 1
            self.cost_unknown += 1
        spent = self._take_rows(log)
        if rows and spent:
            counts.cost_usd += spent
            self.spend_usd += spent
            self._gone_usd[(log.key, log.attempts)] = spent

    def _take_rows(self, log: SessionLog) -> Decimal | None:
        """The priced rows of ``log``'s attempt, which has ended: no longer in flight."""
        spent, log.rows_usd = log.rows_usd, None
        if spent:
            self.in_flight_usd -= spent
        return spent

    @property
    def realized_usd(self) -> Decimal:
        """Every known attempt cost (`spend_usd`) and the priced rows of the attempts still
        running: what the batch has spent so far, USD (a budget's view of it)."""
        return self.spend_usd + self.in_flight_usd

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
        self.in_flight_usd += record.cost_usd

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
        self._take_rows(log)
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
        if cost.provider:
            self.provider_priced += 1
            if cost.prices:
                self.price_dates[cost.prices] = None
        elif cost.usd is not None:
            self.harness_priced += 1
        if not record.counts:  # the runner stopped it: not an outcome of the session
            self._stopped_by_runner(log, record, counts)
            return
        self._take_rows(log)  # the final record's cost replaces its rows'
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
        (`_interrupt`), except that a cost its final record knows (RC-14's source for it: its
        gateway's sum, which replaces its rows') is added and is not unknown, as the
        transcripts and the report count it."""
        log.attempts = max(log.attempts, record.attempt)
        known = attempt_cost(record).usd
        if log.running:
            self._interrupt(log, rows=known is None)
        else:  # a final without a started record in view (a hand-made ledger)
            counts.interrupted += log.state is None and not log.interrupted
            log.interrupted = True
            if known is None:
                counts.cost_unknown += 1
                self.cost_unknown += 1
        self._take_rows(log)
        if known is not None:
            counts.cost_usd += known
            self.spend_usd += known
            if self.largest_attempt_usd is None or known > self.largest_attempt_usd:
                self.largest_attempt_usd = known  # a known cost of one attempt: it projects

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
            provider_priced=self.provider_priced, harness_priced=self.harness_priced,
            price_dates=tuple(sorted(self.price_dates)),
        )
