"""The figures of a `Grading`: shares, differences from the reference arm, probes pooled.

Per graded probe and arm: the satisfied share ``satisfied / recorded`` (the denominator is
the recorded sessions; a not-observed session is never a pass and is counted apart beside
the share) with its Wilson score 95% interval. Per probe and arm other than the reference
(the plan's first arm): the difference of shares, arm minus reference, with Newcombe's
hybrid score 95% interval and Fisher's exact two-sided p of the table
``[[arm satisfied, arm not], [reference satisfied, reference not]]``; a *win* when the
interval lies above 0, a *loss* when it lies below, else a *tie*; no outcome (untested)
when either side has no recorded session (the one rule, `campaign.stats.tally_probes`).
Across probes, per arm: the Mantel-Haenszel common odds ratio of those tables, probes as
strata, with the Robins-Breslow-Greenland 95% interval (`campaign.stats.mantel_haenszel`;
docs/statistics.md says how zero cells are handled), and the wins, losses, ties and untested
probes counted. Pure: counts in, figures out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from campaign.stats import (
    CommonOddsRatio,
    Interval,
    WinsLossesTies,
    fisher_exact,
    mantel_haenszel,
    newcombe,
    tally_probes,
    wilson,
)

if TYPE_CHECKING:
    from ._model import CellGrade, Grading

Outcome = Literal["win", "loss", "tie"]


@dataclass(frozen=True, slots=True)
class Share:
    """One probe and arm: its counts, and the satisfied share with its Wilson interval."""

    cell: CellGrade
    share: float | None
    """``satisfied / recorded``; None when nothing is recorded."""
    interval: Interval | None


@dataclass(frozen=True, slots=True)
class Difference:
    """One probe, one arm against the reference arm."""

    arm: str
    difference: float | None
    """Arm's share minus the reference's; None when either has no recorded session."""
    interval: Interval | None
    """Newcombe's hybrid score 95% interval of the difference."""
    fisher_p: float | None
    outcome: Outcome | None


@dataclass(frozen=True, slots=True)
class ProbeFigures:
    """A graded probe: one `Share` per arm (plan order), one `Difference` per arm but the
    reference."""

    probe: str
    shares: tuple[Share, ...]
    differences: tuple[Difference, ...]


@dataclass(frozen=True, slots=True)
class Pooled:
    """One arm against the reference across the graded probes (probes as strata)."""

    arm: str
    odds: CommonOddsRatio
    tally: WinsLossesTies
    """Wins, losses, ties and untested probes (`campaign.stats.tally_probes`)."""


@dataclass(frozen=True, slots=True)
class Figures:
    """Every figure the ``grade`` command prints, from one `Grading`."""

    reference: str
    probes: tuple[ProbeFigures, ...]
    """The graded probes, in the plan's order."""
    ungraded: tuple[str, ...]
    """The plan's probes that declare no expectations."""
    pooled: tuple[Pooled, ...]


def table(arm: CellGrade, reference: CellGrade) -> tuple[int, int, int, int]:
    """``(a, b, c, d)``: arm satisfied, arm not satisfied, reference satisfied, reference not
    (not satisfied = unsatisfied or not observed: recorded minus satisfied)."""
    return (arm.satisfied, arm.recorded - arm.satisfied,
            reference.satisfied, reference.recorded - reference.satisfied)


def share_of(cell: CellGrade) -> Share:
    """The cell's satisfied share and Wilson interval."""
    n = cell.recorded
    return Share(cell, cell.satisfied / n if n else None, wilson(cell.satisfied, n))


def difference_of(arm: CellGrade, reference: CellGrade) -> Difference:
    """``arm`` against ``reference`` on one probe (module docstring)."""
    interval = newcombe(arm.satisfied, arm.recorded, reference.satisfied, reference.recorded)
    if interval is None:
        return Difference(arm.arm, None, None, None, None)
    a, b, c, d = table(arm, reference)
    outcome: Outcome = ("win" if interval.low > 0 else "loss" if interval.high < 0 else "tie")
    return Difference(arm.arm, a / (a + b) - c / (c + d), interval, fisher_exact(a, b, c, d),
                      outcome)


def figures(grading: Grading) -> Figures:
    """The figures of ``grading`` (module docstring)."""
    reference = grading.arms[0]
    probes: list[ProbeFigures] = []
    for probe in grading.probes:
        cells = [grading.cell(probe, arm) for arm in grading.arms]
        if any(c is None for c in cells):
            continue
        known = [c for c in cells if c is not None]
        probes.append(ProbeFigures(
            probe, tuple(share_of(c) for c in known),
            tuple(difference_of(c, known[0]) for c in known[1:])))
    pooled = []
    for i, arm in enumerate(grading.arms[1:], start=1):
        intervals = [p.differences[i - 1].interval for p in probes]
        tables = [table(p.shares[i].cell, p.shares[0].cell) for p in probes]
        pooled.append(Pooled(arm, mantel_haenszel(tables), tally_probes(intervals)))
    return Figures(reference, tuple(probes),
                   tuple(p for p in grading.probes if p not in grading.expectations),
                   tuple(pooled))
