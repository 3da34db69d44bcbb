"""The statistics against published values and against their definitions (tests/report/definitions).

Published values, each checked to the precision it is printed with:

* Wilson: Newcombe (1998a), "Two-sided confidence intervals for the single
  proportion: comparison of seven methods", Statistics in Medicine 17:857-872,
  Table I, method 3 (81/263, 15/148, 0/20, 1/29).
* Newcombe: Newcombe (1998b), "Interval estimation for the difference between
  independent proportions: comparison of eleven methods", Statistics in
  Medicine 17:873-890, Table II, method 10 (the hybrid score interval without
  continuity correction), its eight examples (a) to (h), four with a zero cell.
* Fisher: Fisher's tea-tasting table [[3, 1], [1, 3]] (Fisher 1935, The
  Design of Experiments, section 2; Agresti 2002, Categorical Data Analysis,
  2nd ed., section 3.5), two-sided p = 34/70 = 0.4857; and [[1, 9], [11, 3]], p =
  0.002759 (the worked example of Wikipedia's "Fisher's exact test").
"""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaign.stats import Z, fisher_exact, newcombe, quartiles, wilson
from tests.report import definitions as d


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718)])
def test_wilson_matches_newcombes_table(k: int, n: int, low: float, high: float) -> None:
    interval = wilson(k, n)
    assert interval is not None
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


@pytest.mark.parametrize(("k1", "n1", "k2", "n2", "low", "high"), [
    (56, 70, 48, 80, 0.0524, 0.3339), (9, 10, 3, 10, 0.1705, 0.8090),
    (6, 7, 2, 7, 0.0582, 0.8062), (5, 56, 0, 29, -0.0381, 0.1926),
    (0, 10, 0, 20, -0.1611, 0.2775), (0, 10, 0, 10, -0.2775, 0.2775),
    (10, 10, 0, 20, 0.6791, 1.0000), (10, 10, 0, 10, 0.6075, 1.0000)])
def test_newcombe_hybrid_matches_newcombes_table(k1: int, n1: int, k2: int, n2: int,
                                                 low: float, high: float) -> None:
    interval = newcombe(k1, n1, k2, n2)
    assert interval is not None
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


def test_z_is_the_975th_normal_quantile() -> None:
    assert statistics.NormalDist().inv_cdf(0.975) == Z
    assert round(Z, 6) == 1.959964


@pytest.mark.parametrize(("table", "p"), [((3, 1, 1, 3), 0.4857), ((1, 9, 11, 3), 0.002759)])
def test_fisher_matches_published_p_values(table: tuple[int, int, int, int], p: float) -> None:
    assert fisher_exact(*table) == pytest.approx(p, abs=5e-5 if p > 0.01 else 5e-7)


def test_fisher_tea_tasting_is_34_of_70() -> None:
    # Margins 4, 4 / 4, 4: C(4,x) C(4,4-x) / C(8,4) for x = 0..4 is 1, 16, 36, 16, 1 over 70.
    # The observed x = 3 has 16/70; no more probable: 1 + 16 + 16 + 1 = 34 of 70.
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(34 / 70, rel=1e-15)


@pytest.mark.parametrize("table", [(0, 0, 3, 4), (3, 4, 0, 0), (0, 3, 0, 4), (3, 0, 4, 0),
                                   (0, 0, 0, 0), (5, 0, 0, 0)])
def test_fisher_with_an_empty_margin_is_one(table: tuple[int, int, int, int]) -> None:
    # An empty row or column leaves one table with those margins: it is the observed one.
    assert fisher_exact(*table) == 1.0


@pytest.mark.parametrize("n", [1, 10, 20, 29, 263])
def test_wilson_at_zero_and_at_n_ends_exactly_at_0_and_1(n: int) -> None:
    # At k = 0 the quadratic's roots are 0 and z^2 / (n + z^2); at k = n, n / (n + z^2) and 1.
    z2 = Z * Z
    zero, every = wilson(0, n), wilson(n, n)
    assert zero is not None and every is not None
    assert zero.low == 0.0 and zero.high == pytest.approx(z2 / (n + z2), rel=1e-12)
    assert every.high == 1.0 and every.low == pytest.approx(n / (n + z2), rel=1e-12)


def test_newcombe_with_both_sides_at_zero_is_the_two_wilson_upper_bounds() -> None:
    # p1 = p2 = 0: low = -u2 and high = u1, with u = z^2 / (n + z^2) (no correction added).
    z2 = Z * Z
    interval = newcombe(0, 10, 0, 20)
    assert interval is not None
    assert interval.low == pytest.approx(-z2 / (20 + z2), rel=1e-12)
    assert interval.high == pytest.approx(z2 / (10 + z2), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 25), st.integers(0, 25), st.integers(0, 25), st.integers(0, 25))
def test_fisher_equals_its_definition(a: int, b: int, c: int, dd: int) -> None:
    if a + b + c + dd == 0:
        assert fisher_exact(a, b, c, dd) == 1.0
        return
    assert fisher_exact(a, b, c, dd) == pytest.approx(d.fisher(a, b, c, dd), rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_equals_the_roots_of_its_quadratic(kn: tuple[int, int]) -> None:
    k, n = kn
    interval = wilson(k, n)
    assert interval is not None
    low, high = d.wilson(k, n)
    assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=2, max_size=80))
def test_quartiles_are_the_inclusive_method(values: list[int]) -> None:
    histogram: dict[int, int] = {}
    for v in values:
        histogram[v] = histogram.get(v, 0) + 1
    q = quartiles(histogram)
    assert q is not None
    assert (q.q1, q.median, q.q3) == pytest.approx(d.quartiles(values))


def test_empty_inputs_give_no_figure_not_a_zero() -> None:
    assert wilson(0, 0) is None and newcombe(1, 2, 0, 0) is None and quartiles({}) is None
    one = quartiles({7: 1})
    assert one is not None and (one.q1, one.median, one.q3) == (7, 7, 7)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(3, 2)
    with pytest.raises(ValueError, match="negative"):
        fisher_exact(-1, 0, 0, 0)


def test_fisher_on_ten_thousand_sessions_is_exact_and_quick() -> None:
    # A large table whose p-value the definition can still give (its support is small).
    assert fisher_exact(4990, 10, 5000, 0) == pytest.approx(d.fisher(4990, 10, 5000, 0),
                                                            rel=1e-12)
    assert 0 < fisher_exact(2500, 2500, 2600, 2400) < 0.05
