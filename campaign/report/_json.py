"""``report --json``: the `Report` as one stable, versioned JSON object (docs/report.md).

The object's ``format`` is `REPORT_FORMAT`; a change that removes or
renames a key, or changes what a value means, makes a new format. Adding a
key does not. Shares and interval ends are fractions rounded to
`DIGITS` decimal places; costs are whole cents; times are RFC 3339 UTC.
Format 2 added the grading (``grading``, each probe's ``task``,
``expectations`` and ``verdicts``, each cell's ``graded`` and ``produced``)
and dropped format 1's ``describes_only`` (the report no longer grades
nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from campaign.stats import CONFIDENCE

from ._summary import most_frequent

if TYPE_CHECKING:
    from campaign.stats import Interval, Quartiles

    from ._model import (
        ArmSummary,
        BatchStanding,
        Cell,
        ConditionWarning,
        Cost,
        Graded,
        ProbeFigures,
        Produced,
        Report,
    )

REPORT_FORMAT: Final = 2
"""Version of the JSON object's shape."""
KIND: Final = "headwater-campaign report"
DIGITS: Final = 6
"""Decimal places of every share, difference and interval end."""


def report_json(report: Report) -> dict[str, Any]:
    """The JSON object of ``report`` (plain types only: ``json.dumps`` takes it as is)."""
    return {
        "format": REPORT_FORMAT,
        "kind": KIND,
        "layout": report.layout,
        "grading": {"grader": report.grading.grader, "corpus": report.grading.corpus,
                    "moved_read_set": report.grading.moved_read_set,
                    "ungraded": report.grading.ungraded},
        "confidence": CONFIDENCE,
        "z": report.z,
        "batches": [_batch(b) for b in report.batches],
        "columns": [{"id": c.id, "arm": c.arm, "group": c.group, "reference": c.reference}
                    for c in report.columns],
        "probes": [_probe(p) for p in report.probes],
        "arms": [_arm(a) for a in report.arms],
        "warnings": [_warning(w) for w in report.warnings],
    }


def _probe(probe: ProbeFigures) -> dict[str, Any]:
    frequent = most_frequent(probe)
    return {
        "id": probe.id, "title": probe.title, "task": probe.task, "answers": list(probe.answers),
        "examines": list(probe.examines), "graded": probe.graded,
        "most_frequent": (None if frequent is None or not probe.cells
                          else probe.cells[0].answers[frequent].answer),
        "expectations": [{"key": k, "target": t} for k, t in probe.expectations],
        "verdicts": [{"key": v.key, "target": v.target,
                      "counts": [{"satisfied": c.satisfied, "unsatisfied": c.unsatisfied,
                                  "not_observed": c.not_observed} for c in v.counts]}
                     for v in probe.verdicts],
        "cells": [_cell(c) for c in probe.cells],
    }


def _graded(graded: Graded | None) -> dict[str, Any] | None:
    if graded is None:
        return None
    return {"satisfied": graded.satisfied, "unsatisfied": graded.unsatisfied,
            "not_observed": graded.not_observed, "recorded": graded.recorded,
            "apart": dict(graded.apart), "share": _round(graded.share),
            "interval": _interval(graded.interval), "difference": _round(graded.difference),
            "difference_interval": _interval(graded.difference_interval),
            "direction": graded.direction,
            "fisher_p": _round(graded.fisher_p), "unconfirmed": graded.unconfirmed}


def _produced(produced: Produced) -> dict[str, Any]:
    return {"watched": produced.watched,
            "paths": [{"path": c.value, "sessions": c.sessions} for c in produced.paths],
            "cites": [{"id": c.value, "sessions": c.sessions} for c in produced.cites],
            "findings": [{"rule": c.value, "sessions": c.sessions} for c in produced.findings],
            "clean": produced.clean, "unchecked": produced.unchecked}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _interval(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [round(interval.low, DIGITS),
                                          round(interval.high, DIGITS)]


def _quartiles(q: Quartiles | None) -> dict[str, Any] | None:
    return None if q is None else {"n": q.n, "q1": q.q1, "median": q.median, "q3": q.q3}


def _cost(cost: Cost) -> dict[str, Any]:
    return {"cents": cost.cents, "per_recorded_cents": cost.per_recorded_cents,
            "unknown_attempts": cost.unknown_attempts, "lower_bound": cost.lower_bound,
            "unpriced_requests": cost.unpriced_requests,
            "unpriced_models": list(cost.unpriced_models)}


def _cell(cell: Cell) -> dict[str, Any]:
    return {
        "column": cell.column, "in_plan": cell.in_plan, "planned": cell.planned,
        "recorded": cell.recorded, "states": dict(cell.states), "running": cell.running,
        "interrupted": cell.interrupted, "not_started": cell.not_started,
        "answered": cell.answered,
        "answers": [{"answer": a.answer, "count": a.count, "share": _round(a.share),
                     "interval": _interval(a.interval)} for a in cell.answers],
        "differences": None if cell.differences is None else [
            {"answer": d.answer, "difference": _round(d.difference),
             "interval": _interval(d.interval), "excludes_zero": d.excludes_zero}
            for d in cell.differences],
        "calls": _quartiles(cell.calls),
        "reads": [{"path": r.path, "sessions": r.sessions, "of": r.of, "share": _round(r.share)}
                  for r in cell.reads],
        "outside_paths": {"total": cell.outside_paths, "sessions": cell.outside_path_sessions,
                          "of": cell.final},
        "cost": _cost(cell.cost),
        "graded": _graded(cell.graded),
        "produced": _produced(cell.produced),
    }


def _arm(arm: ArmSummary) -> dict[str, Any]:
    return {
        "column": arm.column, "planned": arm.planned, "recorded": arm.recorded,
        "refused": arm.refused, "failed": arm.failed, "running": arm.running,
        "not_started": arm.not_started, "retried": arm.retried, "spend": _cost(arm.spend),
        "first_attempt": dict(arm.first_attempt), "after_retry": dict(arm.after_retry),
        "served_versions": dict(arm.served_versions),
        "harness_versions": dict(arm.harness_versions), "networks": dict(arm.networks),
        "median_start": arm.median_start,
        "system_prompts": {"sessions": arm.system_prompt_sessions,
                           "digests": dict(arm.system_prompts)},
    }


def _batch(batch: BatchStanding) -> dict[str, Any]:
    return {
        "path": batch.path, "group": batch.group, "command": batch.command, "tier": batch.tier,
        "members": dict(batch.members), "model": batch.model,
        "harness_version": batch.harness_version, "network": batch.network,
        "provider_note": batch.provider_note, "running": batch.running, "pid": batch.pid,
        "invocations": batch.invocations,
        "stopped": (None if batch.stopped is None else
                    {"reason": batch.stopped[0], "detail": batch.stopped[1]}),
        "budget_stop": batch.budget_stop,
        "outstanding": [{"arm": o.arm, "probe": o.probe, "session": o.session, "why": o.why}
                        for o in batch.outstanding],
        "first_at": batch.first_at, "last_at": batch.last_at,
    }


def _warning(warning: ConditionWarning) -> dict[str, Any]:
    return {"kind": warning.kind, "columns": list(warning.columns), "message": warning.message,
            "p_value": warning.p_value}
