"""Score intervals, Fisher's exact test, quartiles. Pure.

Every function here takes counts and returns numbers; none reads a batch.
The definitions (docs/statistics.md says each in words, with its zero cells):

* `wilson` - the Wilson score interval of a proportion k/n (Wilson 1927),
  at ``z = NormalDist().inv_cdf(0.975)`` for 95%.
* `newcombe` - the interval of a difference of two independent proportions
  by Newcombe's hybrid score method without continuity correction (Newcombe
  1998, method 10): each side's Wilson interval, combined by squares.
* `fisher_exact` - the two-sided p-value of Fisher's exact test on a 2x2
  table: the sum of the hypergeometric probabilities of every table with the
  same margins that is no more probable than the one observed. Computed with
  exact integers (`math.comb` and an exact recurrence), so ties are compared
  exactly and no tolerance is needed; a table of 10,000 sessions takes
  milliseconds. A dependency (scipy) would bring tens of MB for these
  twenty lines.
* `quartiles` - the first quartile, median and third quartile of a
  histogram of counts, by `statistics.quantiles` with ``method="inclusive"``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

CONFIDENCE: Final = 0.95
"""The level of every interval of the report."""
Z: Final = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / 2)
"""The standard normal quantile for a two-sided 95% interval (1.959963984540054)."""
SIGNIFICANCE: Final = 0.05
"""A Fisher p-value below this makes a condition warning."""


@dataclass(frozen=True, slots=True)
class Interval:
    """A closed interval ``[low, high]`` of proportions, their differences or odds ratios."""

    low: float
    high: float

    def excludes_zero(self) -> bool:
        """True when 0 lies outside the interval (both ends on the same side of 0)."""
        return self.low > 0 or self.high < 0


def wilson(k: int, n: int, *, z: float = Z) -> Interval | None:
    """The Wilson score interval of the proportion ``k / n``.

    ``centre = (p + z^2/2n) / (1 + z^2/n)``, ``half = z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)``,
    exactly 0 at ``k = 0`` and 1 at ``k = n``.

    Args:
        k: Successes, ``0 <= k <= n``.
        n: Trials.
        z: The normal quantile (95% by default).

    Returns:
        The interval, or None when ``n == 0`` (no proportion to bound).

    Raises:
        ValueError: ``k`` outside ``[0, n]``.
    """
    if not 0 <= k <= n:
        raise ValueError(f"a proportion needs 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # At k = 0 and k = n the bound is exactly 0 (1); floating point leaves a crumb.
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Interval(low, high)


def newcombe(k1: int, n1: int, k2: int, n2: int, *, z: float = Z) -> Interval | None:
    """The hybrid score interval of ``k1/n1 - k2/n2`` (Newcombe's method 10, no correction).

    With ``(l1, u1)`` and ``(l2, u2)`` the Wilson intervals of the two
    proportions and ``d = p1 - p2``: ``low = d - sqrt((p1 - l1)^2 + (u2 - p2)^2)``,
    ``high = d + sqrt((u1 - p1)^2 + (p2 - l2)^2)``.

    Returns:
        The interval, or None when either side has no trials.

    Raises:
        ValueError: a count outside ``[0, n]``.
    """
    w1, w2 = wilson(k1, n1, z=z), wilson(k2, n2, z=z)
    if w1 is None or w2 is None:
        return None
    p1, p2 = k1 / n1, k2 / n2
    d = p1 - p2
    low = d - math.sqrt((p1 - w1.low) ** 2 + (w2.high - p2) ** 2)
    high = d + math.sqrt((w1.high - p1) ** 2 + (p2 - w2.low) ** 2)
    return Interval(low, high)


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """The two-sided p-value of Fisher's exact test on the table ``[[a, b], [c, d]]``.

    With the margins fixed, the top-left cell ``x`` has the hypergeometric
    weight ``w(x) = C(a+b, x) C(c+d, a+c-x)``; the p-value is the sum of
    ``w(x)`` over every ``x`` with ``w(x) <= w(a)``, divided by ``C(n, a+c)``.
    The weights are exact integers, each from the last by
    ``w(x+1) = w(x) (r1 - x)(c1 - x) / ((x + 1)(r2 - c1 + x + 1))``, which
    divides exactly.

    Returns:
        The p-value in [0, 1]; 1.0 when a margin is empty (nothing to test).

    Raises:
        ValueError: a negative cell.
    """
    if min(a, b, c, d) < 0:
        raise ValueError(f"a 2x2 table has no negative cells: {[[a, b], [c, d]]}")
    r1, r2, c1 = a + b, c + d, a + c
    low, high = max(0, c1 - r2), min(r1, c1)
    weight = math.comb(r1, low) * math.comb(r2, c1 - low)
    weights = []
    for x in range(low, high + 1):
        weights.append(weight)
        if x < high:
            weight = weight * (r1 - x) * (c1 - x) // ((x + 1) * (r2 - c1 + x + 1))
    observed = weights[a - low]
    tail = sum(w for w in weights if w <= observed)
    return min(1.0, tail / math.comb(r1 + r2, c1))


@dataclass(frozen=True, slots=True)
class Quartiles:
    """First quartile, median and third quartile of ``n`` values (``method="inclusive"``)."""

    n: int
    q1: float
    median: float
    q3: float


def quartiles(histogram: Mapping[int, int]) -> Quartiles | None:
    """The quartiles of the values a histogram ``{value: how many}`` holds.

    The values are laid out once, sorted, for `statistics.quantiles(data, n=4,
    method="inclusive")`; one value is its own three quartiles.

    Returns:
        The quartiles, or None when the histogram holds no value.
    """
    data = [value for value, count in sorted(histogram.items()) for _ in range(count)]
    if not data:
        return None
    if len(data) == 1:
        only = float(data[0])
        return Quartiles(1, only, only, only)
    q1, median, q3 = statistics.quantiles(data, n=4, method="inclusive")
    return Quartiles(len(data), float(q1), float(median), float(q3))
