"""Warnings that two arms of a group met different conditions (docs/report.md, "Warnings").

Each column is compared with its group's reference column:

* ``not-recorded-rate`` - sessions whose last attempt ended in a state other
  than recorded, out of the sessions with a final record; and
  ``retry-rate`` - sessions with more than one attempt, out of the sessions
  started: Fisher's exact test, two-sided, warns at p < 0.05;
* ``served-versions``, ``harness-versions``, ``network-modes`` - the sets of
  served models (recorded sessions), Claude Code versions and network modes
  differ (each side has at least one);
* ``start-times`` - the two columns' median first-attempt starts lie more
  than 10% of the group's span apart (the span runs from the group's first
  record time to its last).

Side by side, each batch's reference column is also compared with the first
batch's: ``corpora`` - their plans' ``tree`` digests differ, so the batches
ran over different corpora and their columns measure different documents.

A warning says the comparison may be confounded; it does not say it is,
and the p-values are not corrected for the several comparisons made.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Final

from campaign.stats import SIGNIFICANCE, fisher_exact

from ._model import ConditionWarning
from ._tally import ArmTally

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from ._model import Column, WarningKind
    from ._tally import GroupTally

START_SPREAD: Final = 0.10
"""Median starts further apart than this share of the span make a warning."""


def condition_warnings(columns: tuple[Column, ...],
                       tallies: list[GroupTally]) -> tuple[ConditionWarning, ...]:
    """Every warning of every non-reference column against its reference (module docstring)."""
    warnings: list[ConditionWarning] = []
    for column in columns:
        if column.is_reference:
            continue
        group = tallies[column.group]
        ref_arm = next(c.arm for c in columns if c.id == column.reference)
        this = group.arms.get(column.arm, ArmTally())
        ref = group.arms.get(ref_arm, ArmTally())
        pair = (column.id, column.reference)
        warnings += _rates(pair, this, ref)
        warnings += _sets(pair, this, ref)
        start = _starts(pair, this, ref, group.span_s)
        if start is not None:
            warnings.append(start)
    return tuple(warnings)


def corpus_warnings(columns: tuple[Column, ...],
                    trees: Sequence[tuple[str, str]]) -> tuple[ConditionWarning, ...]:
    """``corpora`` warnings of a side-by-side report: each group whose corpus ``tree`` differs
    from the first group's, naming both digests and both batches.

    Args:
        columns: The report's columns (a group's reference column stands for it).
        trees: Per group, in order, ``(batch path, tree digest)``.
    """
    if len(trees) < 2:
        return ()
    refs = {c.group: c.id for c in columns if c.is_reference}
    first_path, first_tree = trees[0]
    return tuple(
        ConditionWarning(
            kind="corpora", columns=(refs[g], refs[0]),
            message=f"batches {path} and {first_path} ran over different corpora: tree "
                    f"{tree} in {path}, {first_tree} in {first_path}; their columns measure "
                    "different documents")
        for g, (path, tree) in enumerate(trees) if g and tree != first_tree)


def _rates(pair: tuple[str, str], this: ArmTally, ref: ArmTally) -> Iterator[ConditionWarning]:
    rates: tuple[tuple[WarningKind, str, int, int, int, int, str], ...] = (
        ("not-recorded-rate", "ended not recorded", this.final - this.recorded, this.final,
         ref.final - ref.recorded, ref.final, "with a final record"),
        ("retry-rate", "were retried", this.retried, this.started, ref.retried, ref.started,
         "started"))
    for kind, what, x1, n1, x2, n2, among in rates:
        if not n1 or not n2:
            continue
        p = fisher_exact(x1, n1 - x1, x2, n2 - x2)
        if p < SIGNIFICANCE:
            yield ConditionWarning(
                kind=kind, columns=pair, p_value=p,
                message=f"{pair[0]} and {pair[1]} met different conditions: {x1} of {n1} "
                        f"sessions {among} {what} in {pair[0]} ({x1 / n1:.1%}), {x2} of {n2} in "
                        f"{pair[1]} ({x2 / n2:.1%}); Fisher's exact test, two-sided, "
                        f"p = {p:.3g}")


def _sets(pair: tuple[str, str], this: ArmTally, ref: ArmTally) -> Iterator[ConditionWarning]:
    checks: tuple[tuple[WarningKind, str, Mapping[str, int], Mapping[str, int]], ...] = (
        ("served-versions", "served models", this.served, ref.served),
        ("harness-versions", "Claude Code versions", this.harness, ref.harness),
        ("network-modes", "network modes", this.networks, ref.networks))
    for kind, what, mine, theirs in checks:
        if mine and theirs and set(mine) != set(theirs):
            yield ConditionWarning(
                kind=kind, columns=pair,
                message=f"{pair[0]} and {pair[1]} met different conditions: {what} "
                        f"{_listed(mine)} in {pair[0]}, {_listed(theirs)} in {pair[1]}")


def _starts(pair: tuple[str, str], this: ArmTally, ref: ArmTally,
            span_s: float) -> ConditionWarning | None:
    if not this.starts or not ref.starts or span_s <= 0:
        return None
    apart = abs(statistics.median(this.starts) - statistics.median(ref.starts))
    if apart <= START_SPREAD * span_s:
        return None
    return ConditionWarning(
        kind="start-times", columns=pair,
        message=f"{pair[0]} and {pair[1]} met different conditions: their median session "
                f"starts are {apart:.0f} s apart, more than {START_SPREAD:.0%} of the batch's "
                f"span of {span_s:.0f} s (the provider may have changed in between)")


def _listed(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} ({n})" for name, n in sorted(counts.items()))
