"""The report's figures as frozen values: what every renderer shows, computed once.

A `Report` holds, for one or more batches, the columns (one per arm; with
``--side-by-side`` one per batch and arm), per probe a `Cell` per column, per
column an `ArmSummary` over the batch, the condition warnings, and each
batch's standing. Shares are fractions in [0, 1], differences of shares are
in [-1, 1]; costs are whole US cents. The verdicts come from the grader
(`campaign.grade`); the report only counts them per column (docs/report.md,
"The summary").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from campaign.stats import SIGNIFICANCE

if TYPE_CHECKING:
    from campaign.stats import Interval, Quartiles

Layout: TypeAlias = Literal["single", "merged", "side-by-side"]
"""One batch; several merged into one set of columns; several, each in columns of its own."""
Direction: TypeAlias = Literal["higher", "lower", "unclear"]
"""A graded share against the reference's: the 95% Newcombe interval of the difference lies
wholly above 0, wholly below it, or includes it (or cannot be taken)."""
WarningKind: TypeAlias = Literal["not-recorded-rate", "retry-rate", "served-versions",
                                 "start-times", "harness-versions", "network-modes", "corpora"]


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the report: an arm of a group of merged batches."""

    id: str
    """``present``; side by side, ``<batch number>:<arm>`` (``2:absent``)."""
    arm: str
    group: int
    """0-based index of the group (one batch, or batches merged) the column belongs to."""
    reference: str
    """The id of the column this one's differences are taken against (itself for the reference:
    ``present``, else the tier's first arm)."""

    @property
    def is_reference(self) -> bool:
        """True for the group's reference column."""
        return self.reference == self.id


@dataclass(frozen=True, slots=True)
class AnswerShare:
    """One answer (a declared one, or None for ``null``) among a column's answered sessions."""

    answer: str | None
    count: int
    share: float | None
    """``count / answered``; None when no session was answered."""
    interval: Interval | None
    """The 95% Wilson score interval of ``share``."""


@dataclass(frozen=True, slots=True)
class Difference:
    """The share of a declared answer in a column minus its share in the reference column."""

    answer: str
    difference: float | None
    """None when either column has no answered session."""
    interval: Interval | None
    """The 95% Newcombe hybrid score interval (no continuity correction)."""

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies wholly above or below 0."""
        return self.interval is not None and self.interval.excludes_zero()


@dataclass(frozen=True, slots=True)
class ReadShare:
    """How many recorded sessions with calls read one examined document (a Read of its path)."""

    path: str
    sessions: int
    of: int
    """Recorded sessions whose calls were watched (the denominator)."""
    share: float | None


@dataclass(frozen=True, slots=True)
class Cost:
    """RC-14's rule over a set of attempts: ceiling(100 x the exact sum of their USD), in cents."""

    cents: int
    unknown_attempts: int
    """Attempts whose cost is unknown: they add nothing, and ``cents`` is then a lower bound."""
    per_recorded_cents: int | None
    """ceiling(100 x sum / recorded sessions), rounded once; None with no recorded session."""
    tenths: int = 0
    """ceiling(1000 x sum): the same figure in tenths of a cent, for the screen (`cost_text`:
    whole cents, each rounded up alone, could show a sum that is not the figures' sum)."""
    per_recorded_tenths: int | None = None
    """ceiling(1000 x sum / recorded sessions), tenths of a cent; None with none recorded."""
    unpriced_requests: int = 0
    """Provider requests priced as unknown (a served model the price table lacks, or no
    usage read): they add nothing, and ``cents`` is then a lower bound."""
    unpriced_models: tuple[str, ...] = ()
    """The served models the price table lacked, as the provider sent them (untrusted)."""

    @property
    def lower_bound(self) -> bool:
        """True when some attempt's cost is unknown or some request was priced as unknown."""
        return self.unknown_attempts > 0 or self.unpriced_requests > 0


@dataclass(frozen=True, slots=True)
class Count:
    """A value and how many sessions of a column hold it (a path, an id, a rule)."""

    value: str
    sessions: int


@dataclass(frozen=True, slots=True)
class Produced:
    """What a column's recorded sessions produced (RC-11: the events' ``produced``)."""

    watched: int
    """Recorded sessions whose event has a ``produced`` key (the denominator)."""
    paths: tuple[Count, ...]
    """Each produced path, with the sessions that produced it; most sessions first."""
    cites: tuple[Count, ...]
    """Each corpus id some artifact cites, with the sessions that cite it; most first."""
    findings: tuple[Count, ...]
    """Each rule that reported over some artifact, with its sessions; most first."""
    clean: int
    """Sessions with at least one artifact, every one with ``findings: []``."""
    unchecked: int
    """Sessions with an artifact that has no ``findings`` key (nothing checked it)."""


@dataclass(frozen=True, slots=True)
class Graded:
    """One graded probe in one column: its recorded sessions by verdict (`campaign.grade`).

    The share is ``satisfied / recorded`` (the grader's denominator, every recorded
    session); ``not_observed`` is shown apart and never counted as either side.
    """

    satisfied: int
    unsatisfied: int
    not_observed: int
    apart: dict[str, int]
    """State -> sessions of the plan outside the denominator (not recorded, not run)."""
    share: float | None
    """``satisfied / recorded``; None with no recorded session."""
    interval: Interval | None
    """The 95% Wilson score interval of ``share``."""
    difference: float | None
    """``share`` minus the reference column's; None in the reference column or when a side
    has no recorded session."""
    difference_interval: Interval | None
    """The 95% Newcombe hybrid score interval of ``difference``."""
    fisher_p: float | None = None
    """Fisher's exact two-sided p of the satisfied / not table against the reference column;
    None where ``difference`` is."""

    @property
    def recorded(self) -> int:
        """The denominator: recorded sessions, whatever their verdict."""
        return self.satisfied + self.unsatisfied + self.not_observed

    @property
    def direction(self) -> Direction:
        """``higher``/``lower`` when the difference's interval lies wholly above/below 0."""
        interval = self.difference_interval
        if interval is None or not interval.excludes_zero():
            return "unclear"
        return "higher" if interval.low > 0 else "lower"

    @property
    def unconfirmed(self) -> bool:
        """A ``higher`` or ``lower`` that Fisher's exact test does not confirm (p at or above
        `campaign.stats.SIGNIFICANCE`): too few sessions to be sure (docs/statistics.md)."""
        return (self.direction != "unclear" and self.fisher_p is not None
                and self.fisher_p >= SIGNIFICANCE)


@dataclass(frozen=True, slots=True)
class VerdictCounts:
    """One expectation's verdicts over one column's recorded sessions."""

    satisfied: int
    unsatisfied: int
    not_observed: int


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """One expectation (a key and, for a list, one target) of a probe, per column."""

    key: str
    """``answered``, ``opened``, ``not_opened``, ``cites`` or ``clean``."""
    target: str | None
    """The value, document or id; None for ``clean``."""
    counts: tuple[VerdictCounts, ...]
    """One per column, in column order."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One probe in one column."""

    column: str
    in_plan: bool
    """False when this column's batch does not plan the probe (side by side only)."""
    planned: int
    recorded: int
    states: dict[str, int]
    """Sessions whose last attempt ended in each non-recorded state (every state, zeros too)."""
    running: int
    """Sessions with an attempt started and not final while a process holds the batch."""
    interrupted: int
    """The same while nobody holds it: a runner stopped without writing their end."""
    not_started: int
    answered: int
    """Recorded sessions whose event has an answer key (the answers' denominator)."""
    answers: tuple[AnswerShare, ...]
    """Each declared answer in the plan's order, then any other answer seen, then null."""
    differences: tuple[Difference, ...] | None
    """Per declared answer, against the reference column; None in the reference column."""
    calls: Quartiles | None
    """Calls per recorded session whose calls were watched; None when there is none."""
    reads: tuple[ReadShare, ...]
    """One per document the probe examines, in the plan's order."""
    outside_paths: int
    """RC-08's counts summed over the last attempt of every session with a final record."""
    outside_path_sessions: int
    """Of those, sessions that named at least one outside path."""
    final: int
    """Sessions whose last attempt has a final record (recorded or not)."""
    cost: Cost
    produced: Produced
    graded: Graded | None = None
    """The grader's counts; None when the probe is ungraded (no expectations, no grading)."""


@dataclass(frozen=True, slots=True)
class ProbeFigures:
    """One probe of the plan(s) and its cells, one per column in the report's column order."""

    id: str
    title: str
    answers: tuple[str, ...]
    """The declared answers."""
    examines: tuple[str, ...]
    cells: tuple[Cell, ...]
    task: str = ""
    """The ``## Task`` text the sessions were given (the plan's), word for word."""
    expectations: tuple[tuple[str, str | None], ...] = ()
    """(key, target) of each declared expectation, as the grader read it; empty: ungraded."""
    verdicts: tuple[VerdictRow, ...] = ()
    """One per expectation, in ``expectations``' order."""

    @property
    def graded(self) -> bool:
        """True when the grader graded this probe (it declares expectations)."""
        return bool(self.expectations)


@dataclass(frozen=True, slots=True)
class GradingFacts:
    """Whether and how the report is graded (docs/report.md, "The summary")."""

    grader: str | None
    """The grader's version (`campaign.grade.GRADER_VERSION`); None: ungraded."""
    corpus: str | None
    """The corpus whose expectations were read."""
    moved_read_set: bool
    """The read set moved since recording: the verdicts are kept and marked."""
    ungraded: str | None
    """Why nothing is graded (no corpus at the path config.yaml records), or None."""


@dataclass(frozen=True, slots=True)
class ArmSummary:
    """One column over the whole batch (every probe)."""

    column: str
    planned: int
    recorded: int
    refused: int
    failed: int
    """Last attempt final in a state neither recorded nor refused."""
    running: int
    """Started and not final (running or interrupted: see the batch's standing)."""
    not_started: int
    retried: int
    """Sessions with more than one attempt."""
    spend: Cost
    """Every attempt of the column's sessions (``per_recorded_cents`` over its recorded ones)."""
    first_attempt: dict[str, int]
    """State of each session's first attempt (only sessions whose first attempt is final)."""
    after_retry: dict[str, int]
    """Where the retried sessions stand now: their last state, or ``running``."""
    served_versions: dict[str, int]
    """Served model -> recorded sessions."""
    harness_versions: dict[str, int]
    """Claude Code version -> sessions with a final record (as their last one says); empty
    when none says (the batch's own figure is `BatchStanding.harness_version`)."""
    networks: dict[str, int]
    """Network mode -> sessions with a final record (as their last one says); empty when none
    says (the batch's mode is `BatchStanding.network`)."""
    median_start: str | None
    """The median first-attempt start of the column's sessions (RFC 3339 UTC); None: none began."""
    system_prompts: dict[str, int] = field(default_factory=dict)
    """System-prompt digest (the provider gateway's, of each request) -> recorded sessions
    that met it, most first; empty when no recorded session went through the gateway."""
    system_prompt_sessions: int = 0
    """Recorded sessions with at least one digested request (the digests' denominator)."""


@dataclass(frozen=True, slots=True)
class ConditionWarning:
    """Two columns of one group met different conditions (docs/report.md, "Warnings")."""

    kind: WarningKind
    columns: tuple[str, str]
    """The column and the reference column it is compared with."""
    message: str
    p_value: float | None = None
    """Fisher's exact two-sided p-value, for the two rate warnings."""


@dataclass(frozen=True, slots=True)
class Outstanding:
    """A planned session that is not finished, and why."""

    arm: str
    probe: str
    session: str
    why: str
    """``not started``, ``running``, ``interrupted``, or ``<state> (worth another attempt)``."""


@dataclass(frozen=True, slots=True)
class BatchStanding:
    """One batch: its identity, whether it runs, how its last invocation ended."""

    path: str
    group: int
    command: str
    tier: str
    members: dict[str, str | int]
    """The plan members: tree, lock, selection, read_set, seed, harness (the planner's version)."""
    model: str
    harness_version: str
    """config.yaml's Claude Code version (the first line of ``--version``)."""
    network: str
    provider_note: str
    running: bool
    pid: int | None
    invocations: int
    stopped: tuple[str, str] | None
    """The last invocation's end (reason, detail), or None (running, or its runner died)."""
    budget_stop: str | None
    """The last invocation's budget stop in words, or None."""
    outstanding: tuple[Outstanding, ...]
    resume: str
    """How to finish the outstanding sessions, in words (`campaign.batch.resume_advice`):
    a plain ``resume``, or one with the least ``--max-cost-cents`` that starts a session."""
    first_at: str | None
    last_at: str | None


@dataclass(frozen=True, slots=True)
class Report:
    """Everything the report shows, for every renderer."""

    layout: Layout
    batches: tuple[BatchStanding, ...]
    columns: tuple[Column, ...]
    probes: tuple[ProbeFigures, ...]
    arms: tuple[ArmSummary, ...]
    """One per column, in column order."""
    warnings: tuple[ConditionWarning, ...]
    z: float
    """The normal quantile of every interval (95%)."""
    grading: GradingFacts = GradingFacts(grader=None, corpus=None, moved_read_set=False,
                                         ungraded="no grading was asked for")
