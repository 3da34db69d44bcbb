"""The sizing `plan` prints: the smallest difference a tier's repetitions detect (stats._power).

Expected values come from a published table and from the definition worked by hand, never
from the code's own output.
"""

from __future__ import annotations

import math

import pytest

from campaign.stats import (
    POWER,
    SIGNIFICANCE,
    detectable_difference,
    fisher_power,
    normal_power,
    repetitions_needed,
    sessions_needed,
)


def test_sessions_needed_matches_fleiss_without_continuity_correction() -> None:
    # Fleiss (1981), Statistical Methods for Rates and Proportions, 2nd ed., ch. 3: the
    # sample size per group without continuity correction for p1 = 0.50, p2 = 0.60,
    # alpha 0.05 two-sided, power 0.80 is 388 (387.3 before rounding up); with the
    # correction (Table A.3) it is 408 = 388 + about 2/|p2 - p1|.
    assert sessions_needed(0.5, 0.6) == 388
    assert sessions_needed(0.6, 0.5) == 388  # the formula is symmetric in the two shares


def test_detectable_difference_at_388_is_about_the_fleiss_difference() -> None:
    # Above EXACT_MAX_N the normal approximation: 388 per arm detect 0.10 from 0.5, 387 not.
    at_388 = detectable_difference(388)
    assert at_388.method == "normal-pooled-z"
    assert at_388.difference is not None and at_388.difference <= 0.1
    at_387 = detectable_difference(387)
    assert at_387.difference is not None and at_387.difference > 0.1
    assert normal_power(388, 0.5, 0.6) >= POWER > normal_power(387, 0.5, 0.6)


def test_two_repetitions_detect_nothing_whatever_the_difference() -> None:
    # n = 2 per arm: the most extreme table [[2, 0], [0, 2]] has p = 2 / C(4, 2) = 1/3, above
    # 0.05, so Fisher's test never rejects: power 0 even at shares 0 and 1.
    assert fisher_power(2, 0.0, 1.0) == 0.0
    found = detectable_difference(2)
    assert found.difference is None and found.method == "fisher-exact"


def test_exact_power_at_four_per_arm_by_hand() -> None:
    # n = 4 per arm: only [[4, 0], [0, 4]] and [[0, 4], [4, 0]] have p = 2/70 < 0.05 (the
    # next, [[4, 0], [1, 3]], has p = 8/56). So power = p1^4 q2^4 + q1^4 p2^4.
    for p1, p2 in ((0.5, 1.0), (0.5, 0.9), (0.3, 0.8)):
        by_hand = p1**4 * (1 - p2) ** 4 + (1 - p1) ** 4 * p2**4
        assert math.isclose(fisher_power(4, p1, p2), by_hand, rel_tol=1e-12)
    # From 0.5 the power is at most 1/16: nothing is detectable at 80%.
    assert detectable_difference(4).difference is None


def test_exact_difference_is_the_first_with_the_power_asked() -> None:
    # From the definition: at the difference given the power is at least 80%, and a hair
    # below it less (n = 20, base rate 0.5, two-sided 0.05).
    found = detectable_difference(20)
    assert found.method == "fisher-exact" and found.difference is not None
    assert found.other == pytest.approx(0.5 + found.difference)
    assert fisher_power(20, 0.5, 0.5 + found.difference) >= POWER
    assert fisher_power(20, 0.5, 0.5 + found.difference - 1e-4) < POWER
    assert SIGNIFICANCE == 0.05


def test_base_rate_near_one_looks_downwards() -> None:
    # From 0.95 an increase of at most 0.05 cannot be detected with 30 per arm, a decrease can.
    found = detectable_difference(30, base_rate=0.95)
    assert found.difference is not None and found.other is not None
    assert found.other < 0.95


def test_refuses_shares_outside_the_open_unit_interval() -> None:
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        detectable_difference(10, base_rate=1.0)
    with pytest.raises(ValueError, match="at least one session"):
        detectable_difference(0)


def test_repetitions_needed_is_the_first_n_with_the_power_asked() -> None:
    n, method = repetitions_needed(0.5, 1.0)
    assert method == "fisher-exact"
    assert fisher_power(n, 0.5, 1.0) >= POWER
    assert all(fisher_power(m, 0.5, 1.0) < POWER for m in range(1, n))
    # Past 60 per arm the Fleiss figure again.
    assert repetitions_needed(0.5, 0.6) == (388, "normal-pooled-z")
