"""One batch read for the report: its plan and config, who holds it, its ledger folded once.

`read_for_report` reads the batch the one way every command does
(`campaign.batch.read_batch`: ``ledger.jsonl`` streamed record by record, one
line in memory, through the batch's own fold) and, beside it, keeps what the report needs of
each session's *last* final record and nothing more: the answer, the number
of calls, which examined documents it read (a bit per document), the served
model, the Claude Code version, the network mode and what it produced (each
artifact's path, cites and findings, RC-11). Events are never kept, so memory
grows by a few hundred bytes per session (more for one that writes many
files), never with the length of its stream. Costs are summed per probe and
arm as they pass, over every attempt (RC-14's rule, each attempt by its source:
`campaign.batch.attempt_cost`), and per arm the system prompts its recorded
sessions met are counted per digest from the ``request`` rows (`campaign.batch.PromptTally`:
one count per digest, a set only per attempt in flight). A batch being written is
read as it stands: a last line without its newline is still being appended and
is skipped.
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from campaign.batch import (
    BatchFileError,
    BatchFold,
    FinalRecord,
    LedgerCorrupt,
    PromptTally,
    RequestRecord,
    SessionKey,
    SpendSum,
    StartedRecord,
    attempt_cost,
    read_batch,
)
from recorder import Call, is_recorded

from ._errors import NotABatch

if TYPE_CHECKING:
    from pathlib import Path

    from campaign.batch import BatchConfig, BatchReading, LedgerRecord
    from campaign.plan import Plan
    from recorder.transcript import Artifact

READ_TOOL: Final = "Read"
"""The tool whose calls count as reading a document (its argument is the workspace path)."""


@dataclass(frozen=True, slots=True)
class Made:
    """One artifact a recorded session produced (RC-11), as the report keeps it."""

    path: str
    cites: tuple[str, ...] | None
    """The corpus ids it cites; None when the event has no ``cites`` key for it."""
    findings: tuple[str, ...] | None
    """The rules that reported over it; None when nothing checked it (no ``findings`` key)."""


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
    produced: tuple[Made, ...] | None = None
    """The event's ``produced`` artifacts; None when not recorded or no ``produced`` key."""


@dataclass(slots=True)
class ReportReading:
    """One batch as the report reads it: the batch's reading and what the report keeps
    beside it. Build with `read_for_report`."""

    batch: BatchReading
    outcomes: dict[SessionKey, Outcome] = field(default_factory=dict)
    spend: dict[tuple[str, str], SpendSum] = field(default_factory=dict)
    """(arm, probe) -> every attempt's cost, by its source."""
    prompts: dict[str, PromptTally] = field(default_factory=dict)
    """arm -> the system-prompt digests its recorded sessions met."""
    first_s: float | None = None
    """The earliest ``at`` of a started or final record, seconds since the epoch."""
    last_s: float | None = None
    """The latest ``at`` of a started or final record, seconds since the epoch."""

    @property
    def path(self) -> Path:
        """The batch directory."""
        return self.batch.path

    @property
    def config(self) -> BatchConfig:
        """Its config.yaml."""
        return self.batch.config

    @property
    def plan(self) -> Plan:
        """Its plan.yaml."""
        return self.batch.plan

    @property
    def holder(self) -> int | None:
        """The pid holding the batch's lock (0: held, pid not written yet); None: not running."""
        return self.batch.holder

    @property
    def fold(self) -> BatchFold:
        """Its ledger folded."""
        return self.batch.fold

    @property
    def running(self) -> bool:
        """A process holds the batch now: it is still being written."""
        return self.batch.running


def epoch_s(stamp: str) -> float:
    """Seconds since the epoch of an RFC 3339 time (``2026-12-01T09:30:30Z``).

    Raises:
        ValueError: not an ISO 8601 time.
    """
    moment = dt.datetime.fromisoformat(stamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def read_for_report(path: Path) -> ReportReading:
    """Read the batch at ``path`` (resolved): `read_batch`, keeping the report's outcomes.

    Reads only; a torn last line is skipped, never repaired.

    Raises:
        NotABatch: plan.yaml or config.yaml missing or unreadable, or a ledger line the
            runner did not write.
    """
    watcher: _Keeper | None = None

    def watch(plan: Plan) -> _Keeper:
        nonlocal watcher
        watcher = _Keeper(plan)
        return watcher

    try:
        batch = read_batch(path, watch=watch)
    except (BatchFileError, LedgerCorrupt) as exc:
        raise NotABatch(path, str(exc)) from exc
    assert watcher is not None  # made once the plan was read
    return ReportReading(batch=batch, outcomes=watcher.outcomes, spend=watcher.spend,
                         prompts=watcher.prompts, first_s=watcher.first_s,
                         last_s=watcher.last_s)


class _Keeper:
    """What the report keeps of the pass (a `campaign.batch.LedgerWatcher`)."""

    def __init__(self, plan: Plan) -> None:
        self.examined = {p.id: {e.path: bit for bit, e in enumerate(p.examines)}
                         for p in plan.probes}
        self.outcomes: dict[SessionKey, Outcome] = {}
        self.spend: dict[tuple[str, str], SpendSum] = {}
        self.prompts: dict[str, PromptTally] = {}
        self.first_s: float | None = None
        self.last_s: float | None = None
        self._fold: BatchFold | None = None
        """The pass's fold (given with every record): what an interrupted attempt's priced
        rows came to."""

    def record(self, record: LedgerRecord, fold: BatchFold) -> None:
        self._fold = fold
        if isinstance(record, FinalRecord):
            _final(self, record, fold, self.examined.get(record.probe, {}))
        elif isinstance(record, RequestRecord):
            self.prompts.setdefault(record.arm, PromptTally()).request(
                fold.key_of(record), record.system_digest)
        elif isinstance(record, StartedRecord):
            _seen(self, record.at)
            self.prompts.setdefault(record.arm, PromptTally()).started(fold.key_of(record))

    def interrupted(self, gone: list[tuple[SessionKey, int]]) -> None:
        """Attempts whose runner died mid-session: each one's cost is unknown (RC-14), its
        priced ``request`` rows realized spend."""
        for key, attempt in gone:
            rows = self._fold.interrupted_usd(key, attempt) if self._fold else None
            self.spend.setdefault((key.arm, key.probe), SpendSum()).add_interrupted(rows)


def _seen(reading: _Keeper, stamp: str) -> None:
    try:
        at = epoch_s(stamp)
    except ValueError:
        return  # a time the runner did not write cannot place the session; the rest still can
    if reading.first_s is None or at < reading.first_s:
        reading.first_s = at
    if reading.last_s is None or at > reading.last_s:
        reading.last_s = at


def _final(reading: _Keeper, record: FinalRecord, fold: BatchFold,
           examined: dict[str, int]) -> None:
    _seen(reading, record.at)
    reading.spend.setdefault((record.arm, record.probe), SpendSum()).add(attempt_cost(record))
    recorded = is_recorded(record.state)
    event = record.event if recorded else None
    calls = event.calls if event is not None else None
    key = fold.key_of(record)  # the fold's own key: its strings are shared
    reading.prompts.setdefault(record.arm, PromptTally()).final(
        key, recorded=recorded and record.counts)
    reading.outcomes[key] = Outcome(
        answered=event is not None and "answer" in event.model_fields_set,
        answer=_interned(event.answer if event is not None else None),
        calls=len(calls) if calls is not None else None,
        reads=_reads(calls, examined) if calls is not None else 0,
        served_model=_interned(record.served_model) if recorded else None,
        claude_code_version=_interned(record.claude_code_version),
        network=_interned(record.network),
        produced=_made(event.produced) if event is not None and event.produced is not None
        else None,
    )


def _made(produced: list[Artifact]) -> tuple[Made, ...]:
    """What the report keeps of an event's ``produced`` (strings interned: paths repeat)."""
    return tuple(Made(path=sys.intern(a.path),
                      cites=None if a.cites is None else tuple(sys.intern(c) for c in a.cites),
                      findings=None if a.findings is None else tuple(sys.intern(f)
                                                                     for f in a.findings))
                 for a in produced)


def _reads(calls: list[Call], examined: dict[str, int]) -> int:
    """The examined documents (as bits) some Read call of ``calls`` names by path."""
    mask = 0
    for call in calls:
        if call.tool == READ_TOOL:
            bit = examined.get(call.argument)
            if bit is not None:
                mask |= 1 << bit
    return mask


def _interned(value: object) -> str | None:
    """One string object per distinct value across 10,000 sessions."""
    return sys.intern(value) if isinstance(value, str) else None
