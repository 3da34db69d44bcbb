"""The figures of a grading from its counts, by the rules of docs/statistics.md: the share's
denominator is the recorded sessions (a not-observed session is in it, never in the
satisfied count), the table is ``(arm satisfied, arm not, reference satisfied, reference
not)`` with the plan's first arm the reference, and the probes are the strata."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from campaign.expect import Expectations
from campaign.grade import CellGrade, Grading, figures

ARMS = ("present", "absent")


def _grading(cells: dict[tuple[str, str], CellGrade], probes: tuple[str, ...]) -> Grading:
    graded = {p for p, _ in cells}
    return Grading(grader="1", corpus=Path("/c"), batches=(Path("/b"),), arms=ARMS,
                   probes=probes, expectations={p: Expectations(answered="x") for p in graded},
                   moved_read_set=False, sessions=(), apart=(), cells=cells)


def _cell(probe: str, arm: str, sat: int, unsat: int, unobserved: int = 0) -> CellGrade:
    return CellGrade(probe, arm, satisfied=sat, unsatisfied=unsat, not_observed=unobserved)


def test_a_not_observed_session_is_in_the_denominator_never_a_pass() -> None:
    cells = {("P1", "present"): _cell("P1", "present", 1, 4),
             ("P1", "absent"): _cell("P1", "absent", 3, 1, 1)}
    found = figures(_grading(cells, ("P1",)))
    assert found.reference == "present"  # the plan's first arm
    (probe,) = found.probes
    reference, absent = probe.shares
    assert (reference.cell.arm, reference.share) == ("present", 1 / 5)
    assert absent.share == 3 / 5
    (difference,) = probe.differences
    assert difference.arm == "absent" and difference.difference == pytest.approx(2 / 5)
    (pooled,) = figures(_grading(cells, ("P1",))).pooled
    # one stratum: the sample odds ratio a d / b c = (3 * 4) / (2 * 1)
    assert pooled.odds.estimate == pytest.approx(6.0) and pooled.odds.strata == 1


def test_outcomes_follow_the_newcombe_interval_and_ungraded_probes_stay_out() -> None:
    cells = {("P1", "present"): _cell("P1", "present", 0, 10),
             ("P1", "absent"): _cell("P1", "absent", 10, 0),
             ("P2", "present"): _cell("P2", "present", 10, 0),
             ("P2", "absent"): _cell("P2", "absent", 0, 10),
             ("P3", "present"): _cell("P3", "present", 5, 5),
             ("P3", "absent"): _cell("P3", "absent", 5, 5),
             ("P4", "present"): _cell("P4", "present", 0, 0),
             ("P4", "absent"): _cell("P4", "absent", 3, 0)}
    found = figures(_grading(cells, ("P1", "P2", "P3", "P4", "P5")))
    assert [p.probe for p in found.probes] == ["P1", "P2", "P3", "P4"]
    assert found.ungraded == ("P5",)
    outcomes = [p.differences[0].outcome for p in found.probes]
    assert outcomes == ["win", "loss", "tie", None]
    # 10/10 against 0/10: Fisher's two-sided p is 2 / C(20, 10)
    assert found.probes[0].differences[0].fisher_p == pytest.approx(2 / math.comb(20, 10))
    (pooled,) = found.pooled
    tally = pooled.tally
    assert (tally.wins, tally.losses, tally.ties, tally.untested) == (1, 1, 1, 1)
    # strata: P1 (10,0,0,10) R=5 S=0; P2 (0,10,10,0) R=0 S=5; P3 (5,5,5,5) R=S=1.25; P4 drops
    assert pooled.odds.estimate == pytest.approx(1.0) and pooled.odds.strata == 3


def test_a_win_or_loss_fisher_does_not_confirm_says_so() -> None:
    """2 of 2 against 0 of 2: Newcombe's interval (-100 to -7 points) excludes 0, so a loss;
    Fisher's exact p is 1/3 (the two tables as extreme of the six with those margins: 1/6 +
    1/6), so the row adds that the test does not reach 0.05. 2 of 2 against 1 of 2 is a tie:
    nothing is added."""
    from campaign.grade._compare import Difference
    from campaign.grade._text import _difference_row
    from campaign.stats import Interval

    loss = _difference_row(Difference("absent", -1.0, Interval(-1.0, -0.07), 1 / 3, "loss"),
                           "present")
    assert loss.endswith("loss (by the interval; Fisher's exact test does not reach 0.05: too "
                         "few sessions to be sure, see docs/statistics.md)"), loss
    tie = _difference_row(Difference("absent", -0.5, Interval(-0.9, 0.27), 1.0, "tie"),
                          "present")
    assert tie.endswith(": tie"), tie
    sure = _difference_row(Difference("absent", -1.0, Interval(-1.0, -0.6), 0.001, "loss"),
                           "present")
    assert sure.endswith(": loss"), sure
