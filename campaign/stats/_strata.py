"""The Mantel-Haenszel common odds ratio over strata, with the RBG interval. Pure.

Each stratum (for the grader: a probe) is a 2x2 table ``(a, b, c, d) =
[[a, b], [c, d]]``, rows the arm and the reference arm, columns satisfied and
not satisfied. The definitions (docs/statistics.md says each in words):

* the estimate (Mantel and Haenszel 1959) is ``sum(R_i) / sum(S_i)`` with
  ``R_i = a_i d_i / n_i`` and ``S_i = b_i c_i / n_i``;
* the 95% interval is ``exp(log OR +- z sqrt(V))``, with the variance of the
  log of the estimate by Robins, Breslow and Greenland (1986)::

      V = sum(P R) / (2 R+^2) + sum(P S + Q R) / (2 R+ S+) + sum(Q S) / (2 S+^2)

  where ``P_i = (a_i + d_i) / n_i``, ``Q_i = (b_i + c_i) / n_i``, ``R+ = sum(R_i)``
  and ``S+ = sum(S_i)``.

Zero cells, without any continuity correction: a stratum with ``n <= 1`` or
an empty row or column is uninformative (its ``R_i`` and ``S_i`` are both 0,
so it moves neither the estimate nor the variance) and is not counted in
`CommonOddsRatio.strata`. With no informative stratum there is no estimate.
``S+ = 0`` (no stratum where the reference arm did better in the cross
product) gives the estimate ``math.inf`` and ``R+ = 0`` gives ``0.0``; in both
cases the RBG variance divides by zero and no interval is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ._scores import Interval, Z


@dataclass(frozen=True, slots=True)
class CommonOddsRatio:
    """The Mantel-Haenszel common odds ratio of an arm against the reference arm.

    Attributes:
        estimate: ``sum(a d / n) / sum(b c / n)`` over the informative strata;
            ``math.inf`` when the denominator is 0, ``0.0`` when the
            numerator is, None when no stratum is informative.
        interval: The 95% interval of the odds ratio (on the ratio scale, so
            ``low`` and ``high`` are positive odds ratios, not proportions) by
            the Robins-Breslow-Greenland variance; None whenever the estimate
            is None, 0 or infinite.
        strata: How many strata were informative (``n >= 2``, no empty row
            or column).
    """

    estimate: float | None
    interval: Interval | None
    strata: int


def _informative(table: tuple[int, int, int, int]) -> bool:
    """True when the table has ``n >= 2`` and no empty row or column."""
    a, b, c, d = table
    return a + b > 0 and c + d > 0 and a + c > 0 and b + d > 0


def mantel_haenszel(tables: Sequence[tuple[int, int, int, int]], *,
                    z: float = Z) -> CommonOddsRatio:
    """The Mantel-Haenszel common odds ratio of ``tables`` with the RBG 95% interval.

    Args:
        tables: One ``(a, b, c, d)`` per stratum, the table ``[[a, b], [c, d]]``
            with rows arm / reference arm and columns satisfied / not.
        z: The normal quantile (95% by default).

    Returns:
        The estimate, its interval and the number of informative strata; see
        the module's docstring for zero cells and uninformative strata.

    Raises:
        ValueError: a negative cell.
    """
    for table in tables:
        if min(table) < 0:
            raise ValueError(f"a 2x2 table has no negative cells: {list(table)}")
    kept = [t for t in tables if _informative(t)]
    if not kept:
        return CommonOddsRatio(None, None, 0)
    r_sum = s_sum = pr = ps_qr = qs = 0.0
    for a, b, c, d in kept:
        n = a + b + c + d
        p, q = (a + d) / n, (b + c) / n
        r, s = a * d / n, b * c / n
        r_sum += r
        s_sum += s
        pr += p * r
        ps_qr += p * s + q * r
        qs += q * s
    if s_sum == 0:
        return CommonOddsRatio(math.inf, None, len(kept))
    if r_sum == 0:
        return CommonOddsRatio(0.0, None, len(kept))
    estimate = r_sum / s_sum
    variance = (pr / (2 * r_sum**2) + ps_qr / (2 * r_sum * s_sum)
                + qs / (2 * s_sum**2))
    half = z * math.sqrt(variance)
    log = math.log(estimate)
    return CommonOddsRatio(estimate, Interval(math.exp(log - half), math.exp(log + half)),
                           len(kept))
