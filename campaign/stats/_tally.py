"""Wins, losses and ties of an arm against the reference arm, across probes. Pure.

A probe is a win when the Newcombe interval of the arm's satisfied share
minus the reference arm's lies wholly above 0, a loss when it lies wholly
below 0, and a tie when it holds 0 (an end exactly at 0 is a tie: the
interval does not exclude it). A probe without an interval (a side with no
recorded session) is none of the three: it is counted as untested.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ._scores import Interval

Outcome = Literal["win", "loss", "tie"]
"""What one probe is for an arm against the reference arm."""


def probe_outcome(difference: Interval | None) -> Outcome | None:
    """One probe's outcome from the interval of its difference (the module's rule).

    Args:
        difference: The 95% Newcombe interval of the arm's share minus the
            reference arm's, or None when `newcombe` gave none.

    Returns:
        ``"win"`` when the interval lies above 0, ``"loss"`` when it lies
        below 0, ``"tie"`` when it holds 0 (an end at 0 included), None
        (untested) when there is no interval.
    """
    if difference is None:
        return None
    if difference.low > 0:
        return "win"
    if difference.high < 0:
        return "loss"
    return "tie"


@dataclass(frozen=True, slots=True)
class WinsLossesTies:
    """How many probes an arm won, lost and tied against the reference arm.

    Attributes:
        wins: Probes whose interval of the difference lies above 0.
        losses: Probes whose interval of the difference lies below 0.
        ties: Probes whose interval holds 0.
        untested: Probes with no interval (a side with no recorded session).
    """

    wins: int
    losses: int
    ties: int
    untested: int


def tally_probes(differences: Iterable[Interval | None]) -> WinsLossesTies:
    """Count the wins, losses, ties and untested probes of one arm against the reference.

    Args:
        differences: Per probe, the 95% Newcombe interval of the arm's share
            minus the reference arm's (as `newcombe` gives it), or None when
            `newcombe` gave none.

    Returns:
        The four counts; they sum to the number of probes given.
    """
    outcomes = [probe_outcome(interval) for interval in differences]
    return WinsLossesTies(outcomes.count("win"), outcomes.count("loss"), outcomes.count("tie"),
                          outcomes.count(None))
