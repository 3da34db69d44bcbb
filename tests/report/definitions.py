"""The report's statistics written from their definitions, independently of campaign.report.

Each is the textbook statement, in a different form from the code where one
exists: Wilson's interval as the two roots of its quadratic, Fisher's test
by enumerating every table with the observed margins in exact fractions,
the inclusive quartiles by linear interpolation between order statistics.
The tests compare the report's figures with these, never with the code.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from statistics import NormalDist

Z = NormalDist().inv_cdf(0.975)


def wilson(k: int, n: int) -> tuple[float, float]:
    """The p with (p_hat - p)^2 = z^2 p (1 - p) / n: the roots of a p^2 + b p + c = 0."""
    p_hat = k / n
    a = 1 + Z * Z / n
    b = -(2 * p_hat + Z * Z / n)
    c = p_hat * p_hat
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """Newcombe (1998), method 10: the hybrid score interval of p1 - p2, no correction."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1)
    l2, u2 = wilson(k2, n2)
    d = p1 - p2
    return (d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
            d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def fisher(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher: the summed probability of the tables no more likely than the one seen."""
    r1, r2, c1 = a + b, c + d, a + c
    n = r1 + r2

    def prob(x: int) -> Fraction:
        return Fraction(math.comb(r1, x) * math.comb(r2, c1 - x), math.comb(n, c1))

    seen = prob(a)
    tables = range(max(0, c1 - r2), min(r1, c1) + 1)
    return float(sum((prob(x) for x in tables if prob(x) <= seen), Fraction(0)))


def quartiles(values: list[int]) -> tuple[float, float, float]:
    """Q1, median, Q3 by the inclusive method: x[h] interpolated at h = (n - 1) q."""
    xs = sorted(values)
    out = []
    for q in (0.25, 0.5, 0.75):
        h = (len(xs) - 1) * q
        lo = math.floor(h)
        hi = min(lo + 1, len(xs) - 1)
        out.append(xs[lo] + (h - lo) * (xs[hi] - xs[lo]))
    return out[0], out[1], out[2]


def cents(usd: list[str], *, per: int = 1) -> int:
    """RC-14: ceiling(100 x the exact decimal sum), once, after summing (divided by ``per``)."""
    total = sum((Decimal(u) for u in usd), Decimal(0))
    return int((total * 100 / per).to_integral_value(rounding=ROUND_CEILING))
