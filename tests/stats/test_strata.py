"""The Mantel-Haenszel common odds ratio and its Robins-Breslow-Greenland interval.

Published figures: the penicillin-and-rabbits strata (Mantel 1963, as
tabulated by Agresti 1990, Categorical Data Analysis, pp. 231-237), whose
Mantel-Haenszel estimate is 7 and whose RBG 95% interval R's
``mantelhaen.test`` (the worked example of its manual page, which uses the
Robins, Breslow and Greenland 1986 variance) prints as 1.026713 to 47.725133;
the arithmetic is also written out below from the definitions. And the
Berkeley admissions by department (Bickel, Hammel and O'Connell 1975,
Science 187:398-404; R's UCBAdmissions), whose common odds ratio of admission,
male against female, the same manual page prints as 0.9046968 with the
interval 0.7719074 to 1.0603298. The zero-cell rules are the ones
docs/statistics.md states.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaign.stats import CommonOddsRatio, Z, mantel_haenszel

# (a, b, c, d) = [[a, b], [c, d]]: rows immediate / delayed injection, columns cured / died.
RABBITS = [(0, 6, 0, 5), (3, 3, 0, 6), (6, 0, 2, 4), (5, 1, 6, 0), (2, 0, 5, 0)]


def test_rabbits_match_the_published_estimate_and_interval() -> None:
    result = mantel_haenszel(RABBITS)
    # By hand: strata 1 and 5 have an empty column (nobody cured; nobody died) and drop out.
    # R_i = a d / n: 3*6/12 = 1.5, 6*4/12 = 2, 5*0/12 = 0     -> R+ = 3.5
    # S_i = b c / n: 3*0/12 = 0,   0*2/12 = 0, 1*6/12 = 0.5   -> S+ = 0.5, estimate 7.
    assert result.estimate == pytest.approx(7.0, rel=1e-12)
    assert result.strata == 3
    assert result.interval is not None
    assert round(result.interval.low, 6) == 1.026713
    assert round(result.interval.high, 6) == 47.725133


# (admitted, rejected) rows male / female, per department A to F.
BERKELEY = [(512, 313, 89, 19), (353, 207, 17, 8), (120, 205, 202, 391), (138, 279, 131, 244),
            (53, 138, 94, 299), (22, 351, 24, 317)]


def test_berkeley_admissions_match_the_published_estimate_and_interval() -> None:
    # R's tables are [[admitted male, admitted female], [rejected male, rejected female]];
    # the transpose used here has the same a d and b c, so the same estimate and variance.
    result = mantel_haenszel(BERKELEY)
    assert result.strata == 6
    assert result.estimate is not None and round(result.estimate, 7) == 0.9046968
    assert result.interval is not None
    assert (round(result.interval.low, 7), round(result.interval.high, 7)) == (0.7719074, 1.0603298)


def test_rabbits_interval_is_the_rbg_variance_written_out() -> None:
    # P = (a+d)/n, Q = (b+c)/n per informative stratum (n = 12 each):
    # P = 9/12, 10/12, 5/12;  Q = 3/12, 2/12, 7/12.
    sum_pr = 9 / 12 * 1.5 + 10 / 12 * 2                       # 2.791667
    sum_ps_qr = 3 / 12 * 1.5 + 2 / 12 * 2 + 5 / 12 * 0.5      # 0.916667
    sum_qs = 7 / 12 * 0.5                                     # 0.291667
    variance = sum_pr / (2 * 3.5**2) + sum_ps_qr / (2 * 3.5 * 0.5) + sum_qs / (2 * 0.5**2)
    assert variance == pytest.approx(0.959184, abs=1e-6)
    half = Z * math.sqrt(variance)
    interval = mantel_haenszel(RABBITS).interval
    assert interval is not None
    assert (interval.low, interval.high) == pytest.approx((7 * math.exp(-half), 7 * math.exp(half)))


@pytest.mark.parametrize("table", [(10, 5, 4, 9), (1, 1, 1, 1), (30, 2, 7, 11)])
def test_one_stratum_is_the_sample_odds_ratio_with_woolfs_interval(
        table: tuple[int, int, int, int]) -> None:
    # With one stratum RBG's V reduces to P/R + Q/S = 1/a + 1/b + 1/c + 1/d (Woolf 1955).
    a, b, c, d = table
    odds = a * d / (b * c)
    half = Z * math.sqrt(1 / a + 1 / b + 1 / c + 1 / d)
    result = mantel_haenszel([table])
    assert result.estimate == pytest.approx(odds, rel=1e-12)
    assert result.interval is not None
    assert (result.interval.low, result.interval.high) == pytest.approx(
        (odds * math.exp(-half), odds * math.exp(half)))
    assert result.strata == 1


def test_the_estimate_is_the_ratio_of_summed_cross_products_over_n() -> None:
    # Two strata of different sizes: (2*8/20 + 9*1/15) / (5*5/20 + 3*2/15) = (0.8+0.6)/(1.25+0.4).
    result = mantel_haenszel([(2, 5, 5, 8), (9, 3, 2, 1)])
    assert result.estimate == pytest.approx(1.4 / 1.65, rel=1e-12)
    assert result.strata == 2


@pytest.mark.parametrize("table", [(0, 0, 3, 4), (3, 4, 0, 0), (0, 3, 0, 4), (3, 0, 4, 0),
                                   (1, 0, 0, 0), (0, 0, 0, 0)])
def test_a_stratum_with_an_empty_row_or_column_adds_nothing(
        table: tuple[int, int, int, int]) -> None:
    base = [(10, 5, 4, 9), (6, 6, 3, 7)]
    assert mantel_haenszel([*base, table]) == mantel_haenszel(base)
    assert mantel_haenszel([table]) == CommonOddsRatio(None, None, 0)


def test_no_strata_give_no_estimate() -> None:
    assert mantel_haenszel([]) == CommonOddsRatio(None, None, 0)


def test_a_zero_denominator_is_infinite_and_a_zero_numerator_is_zero_without_interval() -> None:
    # Every informative stratum has b c = 0 (the reference arm never beat the arm in a cross
    # product): sum(S) = 0, the odds ratio is infinite; RBG divides by S+, so no interval.
    assert mantel_haenszel([(3, 0, 1, 2), (4, 1, 0, 5)]) == CommonOddsRatio(math.inf, None, 2)
    # The mirror: a d = 0 in every informative stratum.
    assert mantel_haenszel([(0, 3, 2, 1), (1, 4, 5, 0)]) == CommonOddsRatio(0.0, None, 2)


def test_a_negative_cell_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        mantel_haenszel([(1, 2, 3, 4), (1, -1, 0, 2)])


_tables = st.lists(st.tuples(*[st.integers(0, 30)] * 4), max_size=8)


@settings(max_examples=300, deadline=None)
@given(_tables)
def test_the_estimate_equals_its_definition_in_exact_fractions(
        tables: list[tuple[int, int, int, int]]) -> None:
    # sum(a d / n) / sum(b c / n) over every table with n > 0, in exact arithmetic: the
    # uninformative tables add 0 to both sums, so dropping them changes nothing.
    numerator = sum((Fraction(a * d, a + b + c + d) for a, b, c, d in tables if a + b + c + d),
                    Fraction(0))
    denominator = sum((Fraction(b * c, a + b + c + d) for a, b, c, d in tables if a + b + c + d),
                      Fraction(0))
    estimate = mantel_haenszel(tables).estimate
    if numerator == denominator == 0:
        assert estimate is None
    elif denominator == 0:
        assert estimate == math.inf
    else:
        assert estimate == pytest.approx(float(numerator / denominator), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(_tables)
def test_swapping_the_arms_inverts_the_estimate_and_the_interval(
        tables: list[tuple[int, int, int, int]]) -> None:
    # Rows swapped: (a, b, c, d) -> (c, d, a, b), so R and S trade places, and P, Q do not move.
    forward = mantel_haenszel(tables)
    backward = mantel_haenszel([(c, d, a, b) for a, b, c, d in tables])
    assert backward.strata == forward.strata
    if forward.interval is None:
        assert backward.interval is None
        return
    assert forward.estimate is not None and backward.estimate is not None
    assert backward.estimate == pytest.approx(1 / forward.estimate, rel=1e-9)
    assert backward.interval is not None
    assert (backward.interval.low, backward.interval.high) == pytest.approx(
        (1 / forward.interval.high, 1 / forward.interval.low), rel=1e-9)
