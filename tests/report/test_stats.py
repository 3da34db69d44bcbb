"""The statistics against published values and against their definitions (tests/report/definitions).

Published values: Newcombe (1998a, Statistics in Medicine 17:857, Table I,
method 3: Wilson) and (1998b, 17:873, Table II, method 10: the hybrid score
interval without continuity correction); Fisher's exact test on Fisher's
tea-tasting table (p = 0.4857) and on the 2x2 of Wikipedia's worked example
(p = 0.002759).
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
    (0, 10, 0, 20, -0.1611, 0.2775), (10, 10, 0, 20, 0.6791, 1.0000)])
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
