"""Wins, losses and ties across probes: the sign of an interval that excludes 0."""

from __future__ import annotations

from campaign.stats import Interval, WinsLossesTies, newcombe, probe_outcome, tally_probes


def test_each_probe_is_a_win_a_loss_a_tie_or_untested_by_its_interval() -> None:
    differences = [Interval(0.05, 0.33), Interval(-0.4, -0.01), Interval(-0.2, 0.3),
                   Interval(0.1, 0.2), None]
    assert tally_probes(differences) == WinsLossesTies(wins=2, losses=1, ties=1, untested=1)


def test_an_end_exactly_at_zero_is_a_tie() -> None:
    # The interval must exclude 0 to decide; [0, 0.4] and [-0.4, 0] hold it.
    assert tally_probes([Interval(0.0, 0.4), Interval(-0.4, 0.0)]) == WinsLossesTies(0, 0, 2, 0)


def test_newcombes_examples_tally_by_their_published_intervals() -> None:
    # Newcombe (1998), Table II, method 10: 56/70-48/80 is [0.0524, 0.3339] (a win),
    # 0/10-0/20 is [-0.1611, 0.2775] (a tie); reversed, 48/80-56/70 is a loss; and a
    # side with no sessions has no interval.
    differences = [newcombe(56, 70, 48, 80), newcombe(0, 10, 0, 20), newcombe(48, 80, 56, 70),
                   newcombe(3, 5, 0, 0)]
    assert tally_probes(differences) == WinsLossesTies(1, 1, 1, 1)


def test_no_probes_tally_to_nothing() -> None:
    assert tally_probes([]) == WinsLossesTies(0, 0, 0, 0)


def test_one_probes_outcome_is_the_side_of_0_its_interval_lies_on() -> None:
    assert probe_outcome(Interval(0.0524, 0.3339)) == "win"
    assert probe_outcome(Interval(-0.3339, -0.0524)) == "loss"
    assert probe_outcome(Interval(-0.1611, 0.2775)) == "tie"
    assert probe_outcome(Interval(0.0, 0.2775)) == "tie"
    assert probe_outcome(Interval(-0.2775, 0.0)) == "tie"
    assert probe_outcome(None) is None
