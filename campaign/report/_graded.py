"""The grader's verdicts laid over the report's columns: counts, shares, differences. Pure.

`graded_probes` takes the probes' figures and a `campaign.grade.Grading` (or
none) and returns the figures with, per probe that declares expectations,
its expectations, a verdict row per expectation and, per column, a `Graded`
of its recorded sessions: satisfied, unsatisfied, not observed (counted
apart, never as either side), the satisfied share over every recorded
session with its 95% Wilson interval, and its difference from the reference
column's with the 95% Newcombe interval. The report never decides a verdict:
it counts the grader's, per column (a column is an arm of one group of
batches, so the sessions are matched by batch, arm and probe).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from campaign.grade import Apart, SessionGrade, Verdict
from campaign.stats import fisher_exact, newcombe, wilson

from ._model import Graded, GradingFacts, ProbeFigures, VerdictCounts, VerdictRow

if TYPE_CHECKING:
    from collections.abc import Sequence

    from campaign.expect import Expectations
    from campaign.grade import Grading

    from ._model import Column

_Item = TypeVar("_Item", SessionGrade, Apart)

LIST_KEYS: Final = ("opened", "not_opened", "cites")
"""The expectations that hold a list: one verdict (and one row) per target."""


def expectation_targets(expectations: Expectations) -> tuple[tuple[str, str | None], ...]:
    """(key, target) of each declared expectation, in the model's key order: ``answered``
    with its value, one per document or id of a list, ``clean`` with None."""
    targets: list[tuple[str, str | None]] = []
    for key in expectations.keys():  # noqa: SIM118  (a model's method, not a dict's)
        value = getattr(expectations, key)
        if key in LIST_KEYS:
            targets.extend((key, str(v)) for v in value)
        else:
            targets.append((key, str(value) if key == "answered" else None))
    return tuple(targets)


def graded_probes(probes: tuple[ProbeFigures, ...], columns: tuple[Column, ...],
                  groups: Sequence[Sequence[Path]], grading: Grading | None,
                  ungraded: str | None) -> tuple[tuple[ProbeFigures, ...], GradingFacts]:
    """``probes`` with the grader's counts per column, and how the report is graded.

    Args:
        probes: The figures, one per probe (cells in column order).
        columns: The report's columns.
        groups: Per group, its batches' paths (resolved), as the columns number them.
        grading: The grader's verdicts over the batches; None: ungraded.
        ungraded: Why there is no grading (shown in its place); ignored with a grading.
    """
    if grading is None:
        return probes, GradingFacts(grader=None, corpus=None, moved_read_set=False,
                                    ungraded=ungraded or "no grading was asked for")
    group_of = {path: g for g, paths in enumerate(groups) for path in paths}
    sessions = _index(grading.sessions, group_of)
    apart = _index(grading.apart, group_of)
    out = []
    for probe in probes:
        expectations = grading.expectations.get(probe.id)
        if expectations is None:
            out.append(probe)
            continue
        targets = expectation_targets(expectations)
        per_column = [sessions.get((c.group, c.arm, probe.id), []) for c in columns]
        counts = [_counts(s) for s in per_column]
        reference = {c.id: i for i, c in enumerate(columns)}
        cells = tuple(dataclasses.replace(cell, graded=_graded(
            counts[i], counts[reference[c.reference]], c.is_reference,
            apart.get((c.group, c.arm, probe.id), [])))
            for i, (c, cell) in enumerate(zip(columns, probe.cells, strict=True)))
        rows = tuple(VerdictRow(key=key, target=target,
                                counts=tuple(_verdicts(s, key, target) for s in per_column))
                     for key, target in targets)
        out.append(dataclasses.replace(probe, cells=cells, expectations=targets,
                                       verdicts=rows))
    return tuple(out), GradingFacts(grader=grading.grader, corpus=str(grading.corpus),
                                    moved_read_set=grading.moved_read_set, ungraded=None)


def _index(items: Sequence[_Item], group_of: dict[Path, int],
           ) -> dict[tuple[int, str, str], list[_Item]]:
    """(group, arm, probe) -> the items of that column and probe (an unknown batch: none)."""
    resolved: dict[Path, int | None] = {}
    out: dict[tuple[int, str, str], list[_Item]] = defaultdict(list)
    for item in items:
        if item.batch not in resolved:
            batch = Path(item.batch)
            resolved[item.batch] = group_of.get(batch, group_of.get(batch.resolve()))
        group = resolved[item.batch]
        if group is not None:
            out[group, item.arm, item.probe].append(item)
    return out


def _counts(sessions: list[SessionGrade]) -> Counter[Verdict]:
    return Counter(s.verdict for s in sessions)


def _graded(counts: Counter[Verdict], ref: Counter[Verdict], is_reference: bool,
            apart: list[Apart]) -> Graded:
    k, n = counts[Verdict.SATISFIED], sum(counts.values())
    k_ref, n_ref = ref[Verdict.SATISFIED], sum(ref.values())
    takes = not is_reference and n > 0 and n_ref > 0
    return Graded(
        satisfied=k, unsatisfied=counts[Verdict.UNSATISFIED],
        not_observed=counts[Verdict.NOT_OBSERVED],
        apart=dict(sorted(Counter(a.state for a in apart).items())),
        share=k / n if n else None, interval=wilson(k, n),
        difference=k / n - k_ref / n_ref if takes else None,
        difference_interval=newcombe(k, n, k_ref, n_ref) if takes else None,
        fisher_p=fisher_exact(k, n - k, k_ref, n_ref - k_ref) if takes else None)


def _verdicts(sessions: list[SessionGrade], key: str, target: str | None) -> VerdictCounts:
    """How the sessions' verdicts of expectation ``key`` (``target``) fell."""
    seen: Counter[Verdict] = Counter()
    for session in sessions:
        for verdict in session.verdicts:
            if verdict.key == key and verdict.target == target:
                seen[verdict.verdict] += 1
    return VerdictCounts(satisfied=seen[Verdict.SATISFIED],
                         unsatisfied=seen[Verdict.UNSATISFIED],
                         not_observed=seen[Verdict.NOT_OBSERVED])
