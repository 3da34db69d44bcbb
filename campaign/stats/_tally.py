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

from ._scores import Interval


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
    wins = losses = ties = untested = 0
    for interval in differences:
        if interval is None:
            untested += 1
        elif interval.low > 0:
            wins += 1
        elif interval.high < 0:
            losses += 1
        else:
            ties += 1
    return WinsLossesTies(wins, losses, ties, untested)
