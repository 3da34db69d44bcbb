"""Tallies: the sessions of a group of batches counted per probe and arm, and per arm.

`tally_group` walks every session the batches' folds know (planned ones
included, never started or not) once, and puts each into its probe-and-arm
`CellTally` and its arm's `ArmTally` by where it stands
(`SessionLog.standing`, as ``status`` counts it): running, interrupted with
no final record of its own, not started, or the state of its last final
record (recorded, or another). Only recorded sessions give answers, calls and
reads. Costs come from the readings' per-attempt sums (every attempt counts,
RC-14, each attempt by its source: `campaign.batch.attempt_cost`), and each arm's
system prompts from the readings' digest counts. Pure over the readings: no I/O.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING, Final

from campaign.batch import PromptTally, SpendSum
from recorder import CENTS_PER_USD, SUM_PRECISION, cost_cents, is_failure, is_recorded, is_refusal

from ._model import Cost
from ._reading import epoch_s

if TYPE_CHECKING:
    from campaign.batch import SessionLog

    from ._reading import Made, Outcome, ReportReading

_TENTHS_PER_USD: Final = Decimal(1000)
"""Tenths of a cent per US dollar: the screen's figures."""


@dataclass(slots=True)
class CellTally:
    """The sessions of one probe in one arm of a group, counted."""

    planned: int = 0
    recorded: int = 0
    states: Counter[str] = field(default_factory=Counter)
    running: int = 0
    interrupted: int = 0
    not_started: int = 0
    answered: int = 0
    answers: Counter[str | None] = field(default_factory=Counter)
    watched: int = 0
    """Recorded sessions whose calls were watched (a ``calls`` key)."""
    calls: Counter[int] = field(default_factory=Counter)
    """Calls per watched session -> how many sessions."""
    reads: Counter[str] = field(default_factory=Counter)
    """Examined path -> watched sessions with a Read of it."""
    final: int = 0
    outside_paths: int = 0
    outside_path_sessions: int = 0
    spend: SpendSum = field(default_factory=SpendSum)
    produced_watched: int = 0
    """Recorded sessions whose event has a ``produced`` key."""
    made: Counter[str] = field(default_factory=Counter)
    """Produced path -> watched sessions that produced it."""
    cited: Counter[str] = field(default_factory=Counter)
    """Corpus id -> watched sessions some artifact of which cites it."""
    found: Counter[str] = field(default_factory=Counter)
    """Rule -> watched sessions some artifact of which it reported over."""
    clean: int = 0
    """Watched sessions with at least one artifact, each with ``findings: []``."""
    unchecked: int = 0
    """Watched sessions with an artifact that has no ``findings`` key (nothing checked it)."""


@dataclass(slots=True)
class ArmTally:
    """The sessions of one arm of a group over every probe, counted."""

    planned: int = 0
    recorded: int = 0
    refused: int = 0
    failed: int = 0
    running: int = 0
    not_started: int = 0
    final: int = 0
    started: int = 0
    retried: int = 0
    first_attempt: Counter[str] = field(default_factory=Counter)
    after_retry: Counter[str] = field(default_factory=Counter)
    served: Counter[str] = field(default_factory=Counter)
    harness: Counter[str] = field(default_factory=Counter)
    networks: Counter[str] = field(default_factory=Counter)
    starts: list[float] = field(default_factory=list)
    """First-attempt start of each session that began, seconds since the epoch."""
    spend: SpendSum = field(default_factory=SpendSum)
    prompts: PromptTally = field(default_factory=PromptTally)
    """The system-prompt digests the arm's recorded sessions met (every batch's)."""


@dataclass(slots=True)
class GroupTally:
    """A group of batches (one, or several merged) tallied."""

    cells: dict[tuple[str, str], CellTally] = field(default_factory=dict)
    """(probe, arm) -> its tally."""
    arms: dict[str, ArmTally] = field(default_factory=dict)
    first_s: float | None = None
    last_s: float | None = None

    @property
    def span_s(self) -> float:
        """Seconds from the group's first record time to its last (0 before any)."""
        if self.first_s is None or self.last_s is None:
            return 0.0
        return self.last_s - self.first_s


def tally_group(readings: list[ReportReading]) -> GroupTally:
    """Tally every session of ``readings`` (module docstring)."""
    group = GroupTally()
    for reading in readings:
        examined = {p.id: [e.path for e in p.examines] for p in reading.plan.probes}
        for key, log in reading.fold.sessions.items():
            cell = group.cells.setdefault((key.probe, key.arm), CellTally())
            arm = group.arms.setdefault(key.arm, ArmTally())
            outcome = reading.outcomes.get(key)
            _count_cell(cell, log, outcome, examined.get(key.probe, []),
                        running=reading.running)
            _count_arm(arm, log, outcome, running=reading.running)
        for (arm_name, probe), spend in reading.spend.items():
            group.cells.setdefault((probe, arm_name), CellTally()).spend.merge(spend)
            group.arms.setdefault(arm_name, ArmTally()).spend.merge(spend)
        for arm_name, prompts in reading.prompts.items():
            group.arms.setdefault(arm_name, ArmTally()).prompts.merge(prompts)
        for at in (reading.first_s, reading.last_s):
            if at is not None:
                group.first_s = at if group.first_s is None else min(group.first_s, at)
                group.last_s = at if group.last_s is None else max(group.last_s, at)
    return group


def _count_cell(cell: CellTally, log: SessionLog, outcome: Outcome | None,
                examined: list[str], *, running: bool) -> None:
    cell.planned += 1
    standing = _standing(log, running=running)
    if standing == "running":
        cell.running += 1
        return
    if standing == "interrupted":  # its runner died mid-attempt, before any final record
        cell.interrupted += 1
        return
    if log.state is None:
        cell.not_started += 1
        return
    cell.final += 1
    cell.outside_paths += log.outside_paths
    cell.outside_path_sessions += log.outside_paths > 0
    if not is_recorded(log.state):
        cell.states[log.state] += 1
        return
    cell.recorded += 1
    if outcome is None:
        return
    if outcome.answered:
        cell.answered += 1
        cell.answers[outcome.answer] += 1
    if outcome.produced is not None:
        _count_produced(cell, outcome.produced)
    if outcome.calls is not None:
        cell.watched += 1
        cell.calls[outcome.calls] += 1
        for bit, path in enumerate(examined):
            if outcome.reads >> bit & 1:
                cell.reads[path] += 1


def _count_produced(cell: CellTally, produced: tuple[Made, ...]) -> None:
    """One watched session's artifacts, each path, id and rule counted once per session."""
    cell.produced_watched += 1
    cell.made.update({a.path for a in produced})
    cell.cited.update({c for a in produced for c in a.cites or ()})
    cell.found.update({f for a in produced for f in a.findings or ()})
    if any(a.findings is None for a in produced):
        cell.unchecked += 1
    elif produced and not any(a.findings for a in produced):
        cell.clean += 1


def first_attempt_state(log: SessionLog, *, running: bool) -> str | None:
    """How a session's attempt 1 ended, for the first-attempt row; None: never started.

    Its final record's state; ``running`` while a runner holding the batch runs it; and
    ``interrupted`` when it never got a final record (its runner died, or a later attempt
    began without one) or its runner stopped it (``killed`` with ``counts: false``): an
    attempt with no outcome of its own (docs/batch.md, "Retries").
    """
    if log.first_state is not None:
        return log.first_state
    if log.attempts == 0:
        return None
    if log.attempts == 1 and log.running and running:
        return "running"
    return "interrupted"


def _count_arm(arm: ArmTally, log: SessionLog, outcome: Outcome | None, *,
               running: bool) -> None:
    arm.planned += 1
    if log.attempts >= 1:
        arm.started += 1
    if log.started_at is not None:
        with contextlib.suppress(ValueError):  # a time the runner did not write places nothing
            arm.starts.append(epoch_s(log.started_at))
    first = first_attempt_state(log, running=running)
    if first is not None:
        arm.first_attempt[first] += 1
    standing = _standing(log, running=running)
    unsettled = standing in ("running", "interrupted")
    if log.attempts > 1:
        arm.retried += 1
        arm.after_retry["running" if unsettled else standing] += 1
    if outcome is not None and not unsettled:
        if outcome.served_model:
            arm.served[outcome.served_model] += 1
        if outcome.claude_code_version:
            arm.harness[outcome.claude_code_version] += 1
        if outcome.network:
            arm.networks[outcome.network] += 1
    if unsettled:
        arm.running += 1
    elif log.state is None:
        arm.not_started += 1
    else:
        arm.final += 1
        arm.recorded += is_recorded(log.state)
        arm.refused += is_refusal(log.state)
        arm.failed += is_failure(log.state)


def cost_of(spend: SpendSum, recorded: int) -> Cost:
    """RC-14's figure for ``spend``, and the same rule per recorded session.

    ``cents = ceiling(100 x usd)`` (one ceiling after the exact sum, `recorder._cost`);
    ``per_recorded_cents = ceiling(100 x usd / recorded)``, None when nothing was recorded.
    The screen's figures (``tenths``, ``per_recorded_tenths``) are in tenths of a cent,
    each rounded to the nearest tenth (half up) on its own, so that figures summed on screen
    stray from the sum's figure by rounding only, with no bias (ceilings each rounded up
    alone made nine probes' "in all" 0.2c more than the arm's spend); a lower bound (some
    attempt's cost unknown, or a request priced as unknown) is rounded down, so that ">="
    stays true (docs/report.md).
    """
    usd = spend.total
    figure = cost_cents([usd, *([None] * spend.unknown)])
    per = per_tenths = None
    with localcontext() as ctx:
        ctx.prec = SUM_PRECISION
        screen = ROUND_FLOOR if spend.lower_bound else ROUND_HALF_UP
        tenths = _rounded(usd * _TENTHS_PER_USD, screen)
        if recorded:
            per = _ceiling(usd * CENTS_PER_USD / recorded)
            per_tenths = _rounded(usd * _TENTHS_PER_USD / recorded, screen)
    return Cost(cents=figure.cents, unknown_attempts=spend.unknown, per_recorded_cents=per,
                tenths=tenths, per_recorded_tenths=per_tenths,
                unpriced_requests=spend.unpriced_requests,
                unpriced_models=tuple(spend.unpriced_models))


def _ceiling(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _rounded(value: Decimal, rounding: str) -> int:
    return int(value.to_integral_value(rounding=rounding))


def _standing(log: SessionLog, *, running: bool) -> str:
    """`SessionLog.standing`, with an attempt left running by a runner that no longer holds
    the batch taken as interrupted (a reading that did not settle it)."""
    standing = log.standing
    if standing == "running" and not running:
        return "interrupted" if log.state is None else log.state
    return standing
