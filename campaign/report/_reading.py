"""One batch read for the report: its plan and config, who holds it, its ledger folded once.

`read_batch` streams ``ledger.jsonl`` record by record (one line in memory)
through the batch's own fold (`campaign.batch._fold.BatchFold`, the reading
``status`` and ``resume`` use) and, beside it, keeps what the report needs of
each session's *last* final record and nothing more: the answer, the number
of calls, which examined documents it read (a bit per document), the served
model, the Claude Code version and the network mode. Events are never kept,
so memory grows by a few hundred bytes per session, never with the length of
its stream. Costs are summed per probe and arm as they pass, over every
attempt (RC-14's rule). A batch being written is read as it stands: a last
line without its newline is still being appended and is skipped.
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any, Final

from campaign.batch import (
    LEDGER_NAME,
    BatchFileError,
    BatchFold,
    FinalRecord,
    LedgerCorrupt,
    SessionKey,
    StartedRecord,
    lock_holder,
    read_ledger,
)
from campaign.batch import read_batch as read_batch_files
from campaign.supervisor import planned_sessions
from recorder import NOTHING_SPENT, decimal_cost, is_recorded

from ._errors import NotABatch

if TYPE_CHECKING:
    from pathlib import Path

    from campaign.batch import BatchConfig
    from campaign.plan import Plan

_SUM_PRECISION: Final = 200
"""Decimal digits kept while summing USD: the sum is exact, as RC-14 asks."""
READ_TOOL: Final = "Read"
"""The tool whose calls count as reading a document (its argument is the workspace path)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the report keeps of a session's last final record (beyond the fold's log)."""

    answered: bool
    """The event has an ``answer`` key (null or a declared answer); False when not recorded."""
    answer: str | None
    calls: int | None
    """How many calls the event has; None when not recorded or no ``calls`` key (unwatched)."""
    reads: int
    """Bit i set: a Read call's argument was the probe's i-th examined path."""
    served_model: str | None
    """The served model of a recorded session; None otherwise."""
    claude_code_version: str | None
    network: str | None


@dataclass(slots=True)
class Spend:
    """Known USD summed exactly over attempts, and how many attempts had an unknown cost."""

    usd: Decimal = field(default_factory=Decimal)
    unknown: int = 0

    def add(self, usd: Decimal | None, *, unknown: bool) -> None:
        """Add one attempt: its cost, or (``unknown``) nothing but the count."""
        if usd is not None:
            with localcontext() as ctx:
                ctx.prec = _SUM_PRECISION
                self.usd += usd
        elif unknown:
            self.unknown += 1


@dataclass(slots=True)
class BatchReading:
    """One batch as the report reads it. Build with `read_batch`."""

    path: Path
    config: BatchConfig
    plan: Plan
    holder: int | None
    """The pid holding the batch's lock now (0: held, pid not written yet); None: not running."""
    fold: BatchFold
    outcomes: dict[SessionKey, Outcome] = field(default_factory=dict)
    spend: dict[tuple[str, str], Spend] = field(default_factory=dict)
    """(arm, probe) -> every attempt's cost."""
    first_s: float | None = None
    """The earliest ``at`` of a started or final record, seconds since the epoch."""
    last_s: float | None = None
    """The latest ``at`` of a started or final record, seconds since the epoch."""

    @property
    def running(self) -> bool:
        """A process holds the batch now: it is still being written."""
        return self.holder is not None


def epoch_s(stamp: str) -> float:
    """Seconds since the epoch of an RFC 3339 time (``2026-12-01T09:30:30Z``).

    Raises:
        ValueError: not an ISO 8601 time.
    """
    moment = dt.datetime.fromisoformat(stamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def read_batch(path: Path) -> BatchReading:
    """Read the batch at ``path`` (resolved): plan, config, lock holder, the ledger folded.

    Reads only; a torn last line is skipped, never repaired.

    Raises:
        NotABatch: plan.yaml or config.yaml missing or unreadable, or a ledger line the
            runner did not write.
    """
    try:
        config, plan = read_batch_files(path)
    except BatchFileError as exc:
        raise NotABatch(path, str(exc)) from exc
    holder = lock_holder(path)
    planned = () if config.options.command == "record" else planned_sessions(plan)
    reading = BatchReading(path=path, config=config, plan=plan, holder=holder,
                           fold=BatchFold(planned))
    examined = {p.id: {e.path: bit for bit, e in enumerate(p.examines)} for p in plan.probes}
    try:
        for record in read_ledger(path / LEDGER_NAME):
            _interrupted(reading, reading.fold.apply(record))
            if isinstance(record, FinalRecord):
                _final(reading, record, examined.get(record.probe, {}))
            elif isinstance(record, StartedRecord):
                _seen(reading, record.at)
    except LedgerCorrupt as exc:
        raise NotABatch(path, str(exc)) from exc
    if holder is None:
        _interrupted(reading, reading.fold.runner_gone())
    return reading


def _interrupted(reading: BatchReading, gone: list[tuple[SessionKey, int]]) -> None:
    """Attempts whose runner died mid-session: each one's cost is unknown (RC-14)."""
    for key, _ in gone:
        reading.spend.setdefault((key.arm, key.probe), Spend()).add(None, unknown=True)


def _seen(reading: BatchReading, stamp: str) -> None:
    try:
        at = epoch_s(stamp)
    except ValueError:
        return  # a time the runner did not write cannot place the session; the rest still can
    if reading.first_s is None or at < reading.first_s:
        reading.first_s = at
    if reading.last_s is None or at > reading.last_s:
        reading.last_s = at


def _final(reading: BatchReading, record: FinalRecord, examined: dict[str, int]) -> None:
    _seen(reading, record.at)
    cost = decimal_cost(record.cost_usd)
    unknown = cost is None and not record.cost_known and record.state not in NOTHING_SPENT
    reading.spend.setdefault((record.arm, record.probe), Spend()).add(cost, unknown=unknown)
    recorded = is_recorded(record.state)
    event = record.event if recorded and isinstance(record.event, dict) else {}
    calls = event.get("calls")
    key = SessionKey(record.arm, record.probe, record.session)
    key = reading.fold.sessions[key].key  # the fold's own key: its strings are shared
    reading.outcomes[key] = Outcome(
        answered="answer" in event,
        answer=_interned(event.get("answer")),
        calls=len(calls) if isinstance(calls, list) else None,
        reads=_reads(calls, examined) if isinstance(calls, list) else 0,
        served_model=_interned(record.served_model) if recorded else None,
        claude_code_version=_interned(record.claude_code_version),
        network=_interned(record.network),
    )


def _reads(calls: list[Any], examined: dict[str, int]) -> int:
    """The examined documents (as bits) some Read call of ``calls`` names by path."""
    mask = 0
    for call in calls:
        if isinstance(call, dict) and call.get("tool") == READ_TOOL:
            argument = call.get("argument")
            bit = examined.get(argument) if isinstance(argument, str) else None
            if bit is not None:
                mask |= 1 << bit
    return mask


def _interned(value: object) -> str | None:
    """One string object per distinct value across 10,000 sessions."""
    return sys.intern(value) if isinstance(value, str) else None
