"""`build_report`: batches read, grouped, tallied and turned into one `Report`.

Several batches are merged into one set of columns when their plan members
(tree, lock, selection, read set, seed, harness: the planner's version) and
their arms (each with its identity) agree; otherwise the report is refused,
naming the member that differs, unless the caller asks for them side by
side, each batch in columns of its own. A grading (`campaign.grade.Grading`, made by the
caller) adds the grader's counts per column (`_graded`); without one the report says why it
is ungraded.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Final

from campaign.batch import cents_text, resume_advice, session_order
from campaign.plan import Plan
from campaign.stats import Z

from ._errors import BatchesDiffer, SameBatchTwice
from ._figures import columns_of, figures, rfc3339
from ._graded import graded_probes
from ._model import BatchStanding, Outstanding, Report
from ._reading import read_for_report
from ._tally import tally_group
from ._warnings import condition_warnings, corpus_warnings

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from campaign.batch import BudgetStopRecord, SessionLog
    from campaign.grade import Grading
    from campaign.plan import Plan

    from ._model import Layout
    from ._reading import ReportReading

MEMBERS: Final = tuple(m for m in Plan.COMPARABLE if m != "arm_specs")
"""The plan members that must agree for batches to merge, besides the arms (`Plan.COMPARABLE`,
the one list; the JSON form's ``members``)."""


def build_report(paths: Sequence[Path], *, side_by_side: bool = False,
                 grading: Grading | None = None, ungraded: str | None = None) -> Report:
    """The report over the batches at ``paths`` (each resolved), in the order given.

    Args:
        paths: One or more batch directories.
        side_by_side: Show each batch in columns of its own instead of merging.
        grading: The grader's verdicts over these batches (`campaign.grade.grade_batches`);
            its sessions are counted in the column of their batch and arm. None: ungraded.
        ungraded: Without a grading, why (``no corpus at PATH``), said in its place.

    Raises:
        NotABatch: a path is not a readable batch.
        SameBatchTwice: a batch is named twice.
        BatchesDiffer: batches to merge differ in a plan member or their arms.
    """
    seen: set[Path] = set()
    for path in paths:
        if path in seen:
            raise SameBatchTwice(path)
        seen.add(path)
    readings = [read_for_report(path) for path in paths]
    groups = [[r] for r in readings] if side_by_side else [_mergeable(readings)]
    layout: Layout = ("single" if len(readings) == 1 else
                      "side-by-side" if side_by_side else "merged")
    plans = [group[0].plan for group in groups]
    columns = columns_of(plans, prefixed=len(groups) > 1)
    tallies = [tally_group(group) for group in groups]
    probes, arms = figures(plans, tallies, columns)
    probes, grading_facts = graded_probes(probes, columns, [[r.path for r in group]
                                                            for group in groups],
                                          grading, ungraded)
    standings = tuple(_standing(r, g) for g, group in enumerate(groups) for r in group)
    return Report(layout=layout, batches=standings, columns=columns, probes=probes, arms=arms,
                  warnings=(*condition_warnings(columns, tallies),
                            *corpus_warnings(columns, [(str(g[0].path), g[0].plan.tree)
                                                       for g in groups])),
                  z=Z, grading=grading_facts)


def _mergeable(readings: list[ReportReading]) -> list[ReportReading]:
    """``readings`` when every one is the first's measurement (`Plan.first_difference`: the
    plan's members, the arms, the model passed); else `BatchesDiffer`."""
    first = readings[0]
    for other in readings[1:]:
        if (differs := first.plan.first_difference(other.plan)) is not None:
            raise BatchesDiffer(differs[0], first.path, other.path, differs[1], differs[2])
    return readings


def _standing(reading: ReportReading, group: int) -> BatchStanding:
    fold, plan, facts = reading.fold, reading.plan, reading.config.facts
    stopped = fold.stopped
    budget = fold.budget_stop
    outstanding = sorted((log for log in fold.outstanding()),
                         key=lambda log: (log.key.arm, *session_order(log.key)))
    return BatchStanding(
        path=str(reading.path), group=group, command=reading.config.options.command,
        tier=plan.tier, members={Plan.key(m): getattr(plan, m) for m in MEMBERS},
        model=plan.model,
        harness_version=facts.harness_version, network=facts.network,
        provider_note=facts.provider_note, running=reading.running, pid=reading.holder or None,
        invocations=fold.invocation.number if fold.invocation else 0,
        stopped=(stopped.reason, stopped.detail) if stopped else None,
        budget_stop=_budget_stop(budget) if budget else None,
        outstanding=tuple(Outstanding(arm=log.key.arm, probe=log.key.probe,
                                      session=log.key.session,
                                      why=_why(log, running=reading.running))
                          for log in outstanding),
        resume=resume_advice(reading.path, fold, reading.config).text(),
        first_at=rfc3339(reading.first_s) if reading.first_s is not None else None,
        last_at=rfc3339(reading.last_s) if reading.last_s is not None else None,
    )


def _budget_stop(stop: BudgetStopRecord) -> str:
    """The ledger's ``budget-stop`` record in words, each figure with its unit: cents as the
    console and the gateway's refusal name them (`campaign.batch.cents_text`), or seconds."""
    if stop.budget == "cost":
        return (f"the cost budget of {stop.limit:g} cent{'' if stop.limit == 1 else 's'} "
                f"stopped the batch: {cents_text(Decimal(repr(stop.used)))} spent, "
                f"{cents_text(Decimal(repr(stop.projection)))} projected per session in "
                "flight and for the next one")
    return (f"the wall-clock budget stopped the batch: {stop.used:.0f} s elapsed of "
            f"{stop.limit:g} s, {stop.projection:.0f} s projected for the next session")


def _why(log: SessionLog, *, running: bool) -> str:
    if log.running:
        return "running" if running else "interrupted"
    if log.interrupted:
        return "interrupted"
    if log.state is None:
        return "not started"
    return f"{log.state} (worth another attempt)"
