"""From tallies to figures: shares with Wilson intervals, differences with Newcombe's, quartiles.

`figures` turns the groups' tallies into one `ProbeFigures` per probe (a
`Cell` per column) and one `ArmSummary` per column. Every share is a count
over its stated denominator: answers over the recorded sessions whose event
has an answer key, reads and calls over the recorded sessions whose calls
were watched. Differences are taken within a group, each column against
the group's reference column (``present``, else the tier's first arm).
"""

from __future__ import annotations

import datetime as dt
import statistics
from typing import TYPE_CHECKING, Final

from campaign.stats import newcombe, quartiles, wilson
from recorder import STATES, is_recorded

from ._model import (
    AnswerShare,
    ArmSummary,
    Cell,
    Column,
    Count,
    Difference,
    ProbeFigures,
    Produced,
    ReadShare,
)
from ._tally import ArmTally, CellTally, cost_of

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Iterable

    from campaign.plan import Plan, PlanProbe

    from ._tally import GroupTally

REFERENCE_ARM: Final = "present"
"""The reference arm when the tier has it; otherwise the tier's first arm."""
NON_RECORDED: Final = tuple(s for s in STATES if not is_recorded(s))
"""Every state but ``recorded``, in the vocabulary's order (a cell counts each)."""


def columns_of(plans: list[Plan], *, prefixed: bool) -> tuple[Column, ...]:
    """One column per arm of each group's plan, in the tier's order.

    Args:
        plans: One plan per group (the first batch's).
        prefixed: Name columns ``<group number>:<arm>`` (side by side).
    """
    columns = []
    for group, plan in enumerate(plans):
        prefix = f"{group + 1}:" if prefixed else ""
        reference = REFERENCE_ARM if REFERENCE_ARM in plan.arms else plan.arms[0]
        for arm in plan.arms:
            columns.append(Column(id=prefix + arm, arm=arm, group=group,
                                  reference=prefix + reference))
    return tuple(columns)


def probe_list(plans: list[Plan]) -> list[PlanProbe]:
    """Every probe of the plans, each once: the first plan's order, then later plans' new ones."""
    seen: dict[str, PlanProbe] = {}
    for plan in plans:
        for probe in plan.probes:
            seen.setdefault(probe.id, probe)
    return list(seen.values())


def figures(plans: list[Plan], tallies: list[GroupTally],
            columns: tuple[Column, ...]) -> tuple[tuple[ProbeFigures, ...],
                                                  tuple[ArmSummary, ...]]:
    """The per-probe figures and the per-column summaries (module docstring)."""
    probes = []
    planned = [{p.id for p in plan.probes} for plan in plans]
    for probe in probe_list(plans):
        raw = {c.id: tallies[c.group].cells.get((probe.id, c.arm), CellTally()) for c in columns}
        planned_in = {c.id: probe.id in planned[c.group] for c in columns}
        order = _answer_order(probe.answers, raw.values())
        cells = tuple(_cell(c, raw[c.id], raw[c.reference], probe, order, planned_in[c.id])
                      for c in columns)
        probes.append(ProbeFigures(id=probe.id, title=probe.title, answers=probe.answers,
                                   examines=tuple(e.path for e in probe.examines), cells=cells,
                                   task=probe.task))
    arms = tuple(_summary(c, tallies[c.group].arms.get(c.arm, ArmTally())) for c in columns)
    return tuple(probes), arms


def _answer_order(declared: tuple[str, ...],
                  tallies: Iterable[CellTally]) -> tuple[str | None, ...]:
    """Declared answers, then any other answer some column gave (sorted), then null."""
    others: set[str] = set()
    for tally in tallies:
        others.update(a for a in tally.answers if a is not None and a not in declared)
    return (*declared, *sorted(others), None)


def _cell(column: Column, tally: CellTally, ref: CellTally, probe: PlanProbe,
          order: tuple[str | None, ...], in_plan: bool) -> Cell:
    answers = tuple(_share(a, tally.answers[a], tally.answered) for a in order)
    differences = None
    if not column.is_reference:
        differences = tuple(_difference(a, tally, ref) for a in probe.answers)
    return Cell(
        column=column.id, in_plan=in_plan, planned=tally.planned, recorded=tally.recorded,
        states={s: tally.states[s] for s in NON_RECORDED}, running=tally.running,
        interrupted=tally.interrupted, not_started=tally.not_started, answered=tally.answered,
        answers=answers, differences=differences, calls=quartiles(tally.calls),
        reads=tuple(ReadShare(path=e.path, sessions=tally.reads[e.path], of=tally.watched,
                              share=tally.reads[e.path] / tally.watched if tally.watched
                              else None)
                    for e in probe.examines),
        outside_paths=tally.outside_paths, outside_path_sessions=tally.outside_path_sessions,
        final=tally.final, cost=cost_of(tally.spend, tally.recorded),
        produced=Produced(watched=tally.produced_watched, paths=_counts(tally.made),
                          cites=_counts(tally.cited), findings=_counts(tally.found),
                          clean=tally.clean, unchecked=tally.unchecked),
    )


def _counts(counter: Counter[str]) -> tuple[Count, ...]:
    """Most sessions first, then by value (a stable order for every form)."""
    return tuple(Count(value=v, sessions=n)
                 for v, n in sorted(counter.items(), key=lambda item: (-item[1], item[0])))


def _share(answer: str | None, count: int, of: int) -> AnswerShare:
    return AnswerShare(answer=answer, count=count, share=count / of if of else None,
                       interval=wilson(count, of))


def _difference(answer: str, tally: CellTally, ref: CellTally) -> Difference:
    k1, n1, k2, n2 = tally.answers[answer], tally.answered, ref.answers[answer], ref.answered
    if not n1 or not n2:
        return Difference(answer=answer, difference=None, interval=None)
    return Difference(answer=answer, difference=k1 / n1 - k2 / n2,
                      interval=newcombe(k1, n1, k2, n2))


def _summary(column: Column, arm: ArmTally) -> ArmSummary:
    return ArmSummary(
        column=column.id, planned=arm.planned, recorded=arm.recorded, refused=arm.refused,
        failed=arm.failed, running=arm.running, not_started=arm.not_started,
        retried=arm.retried, spend=cost_of(arm.spend, arm.recorded),
        first_attempt=dict(sorted(arm.first_attempt.items())),
        after_retry=dict(sorted(arm.after_retry.items())),
        served_versions=dict(arm.served.most_common()),
        harness_versions=dict(arm.harness.most_common()),
        networks=dict(arm.networks.most_common()),
        median_start=rfc3339(statistics.median(arm.starts)) if arm.starts else None,
        system_prompts=dict(sorted(arm.prompts.digests.items(),
                                   key=lambda item: (-item[1], item[0]))),
        system_prompt_sessions=arm.prompts.sessions,
    )


def rfc3339(epoch_s: float) -> str:
    """``2026-12-01T09:30:30Z`` for seconds since the epoch (rounded to the second)."""
    moment = dt.datetime.fromtimestamp(round(epoch_s), dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
