"""Sizing before spending: the smallest difference a plan's repetitions can tell from noise.

Two arms, ``n`` sessions each of one probe; the reference arm's satisfied share is the base
rate ``p``; the other arm's is ``p + d`` or ``p - d``. The test is the one the report applies
to a difference (two-sided, significance `SIGNIFICANCE`): the *detectable difference* is
the smallest ``d`` at which that test rejects "no difference" with probability at least
``power`` (80% by default).

* ``n <= EXACT_MAX_N``: Fisher's exact test (`fisher_exact`), its power computed exactly by
  enumerating every pair of counts ``(x1, x2)``: the sum of
  ``Binom(x1; n, p) Binom(x2; n, p +- d)`` over the pairs whose p-value is below
  `SIGNIFICANCE`. Fisher's test is conservative at small ``n``: with 2 sessions per arm no
  table reaches it (the most extreme has p = 1/3), so no difference is detectable.
* above: the normal approximation of the pooled two-proportion z test without continuity
  correction (Fleiss 1981, *Statistical Methods for Rates and Proportions*, 2nd ed., ch. 3):
  ``power = Phi((|d| sqrt(n) - z_a sqrt(2 pbar qbar)) / sqrt(p1 q1 + p2 q2))`` with
  ``pbar = (p1 + p2) / 2``, ``z_a`` the two-sided normal quantile.

Both directions are tried and the smaller difference is given (with ``p = 0.5`` they are
equal, and the upward one is given). The difference is found by bisection to `TOLERANCE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist
from typing import Final

from ._scores import SIGNIFICANCE, fisher_exact

POWER: Final = 0.8
"""The power a detectable difference is sized at."""
EXACT_MAX_N: Final = 60
"""Up to this many sessions per arm the power is Fisher's, enumerated exactly."""
TOLERANCE: Final = 1e-6
"""The bisection's width on ``d``."""
_STEPS: Final = 200
"""The exact power is scanned on this many steps of ``d`` before the bisection (the power of
a discrete test is not monotone in ``d`` at every step; the scan finds the first crossing)."""


@dataclass(frozen=True, slots=True)
class Detectable:
    """The smallest detectable difference at ``n`` sessions per arm, or why there is none."""

    n: int
    """Sessions per arm (the tier's repetitions)."""
    base_rate: float
    method: str
    """``fisher-exact`` (enumerated) or ``normal-pooled-z`` (the approximation)."""
    difference: float | None
    """The smallest ``|d|`` detected with the power asked; None: none, even at 0 or 1."""
    other: float | None
    """The other arm's share at that difference (``base_rate +- difference``)."""


@cache
def _rejections(n: int, alpha: float) -> tuple[tuple[int, ...], ...]:
    """For each ``x2`` in ``0..n``, the ``x1`` whose table ``[[x1, n-x1], [x2, n-x2]]`` Fisher's
    test rejects at ``alpha`` (p-value below it)."""
    return tuple(tuple(x1 for x1 in range(n + 1)
                       if fisher_exact(x1, n - x1, x2, n - x2) < alpha)
                 for x2 in range(n + 1))


def _pmf(n: int, p: float) -> list[float]:
    return [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]


def fisher_power(n: int, p1: float, p2: float, *, alpha: float = SIGNIFICANCE) -> float:
    """The probability that Fisher's two-sided exact test rejects at ``alpha`` (p-value below
    it) with ``n`` sessions per arm of shares ``p1`` and ``p2``, by enumeration.

    Raises:
        ValueError: ``n < 1``, or a share outside [0, 1].
    """
    _check(n, p1, p2)
    b1, b2 = _pmf(n, p1), _pmf(n, p2)
    return sum(b2[x2] * sum(b1[x1] for x1 in row)
               for x2, row in enumerate(_rejections(n, alpha)))


def normal_power(n: int, p1: float, p2: float, *, alpha: float = SIGNIFICANCE) -> float:
    """The power of the pooled two-proportion z test without continuity correction, by its
    normal approximation (module doc; Fleiss 1981), ``n`` sessions per arm.

    Raises:
        ValueError: ``n < 1``, or a share outside [0, 1].
    """
    _check(n, p1, p2)
    z_a = NormalDist().inv_cdf(1 - alpha / 2)
    mean = (p1 + p2) / 2
    spread = math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    if spread == 0:
        return 1.0 if p1 != p2 else 0.0
    return NormalDist().cdf((abs(p2 - p1) * math.sqrt(n)
                             - z_a * math.sqrt(2 * mean * (1 - mean))) / spread)


def sessions_needed(p1: float, p2: float, *, alpha: float = SIGNIFICANCE,
                    power: float = POWER) -> int:
    """Sessions per arm the pooled z test needs to tell ``p1`` from ``p2`` with ``power``:
    ``ceil((z_a sqrt(2 pbar qbar) + z_b sqrt(p1 q1 + p2 q2))^2 / (p2 - p1)^2)`` (Fleiss 1981,
    without continuity correction).

    Raises:
        ValueError: ``p1 == p2``, or a share outside [0, 1].
    """
    _check(1, p1, p2)
    if p1 == p2:
        raise ValueError("equal shares: no number of sessions tells them apart")
    z_a, z_b = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)
    mean = (p1 + p2) / 2
    root = (z_a * math.sqrt(2 * mean * (1 - mean))
            + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2)))
    return math.ceil(root**2 / (p2 - p1) ** 2 - 1e-9)


def _check(n: int, p1: float, p2: float) -> None:
    if n < 1:
        raise ValueError(f"at least one session per arm, got {n}")
    if not (0.0 <= p1 <= 1.0 and 0.0 <= p2 <= 1.0):
        raise ValueError(f"shares lie in [0, 1], got {p1} and {p2}")


def _smallest(n: int, base: float, sign: int, power: float, alpha: float,
              exact: bool) -> float | None:
    """The smallest ``d`` in ``(0, room]`` with power at least ``power`` towards ``sign``."""
    room = (1.0 - base) if sign > 0 else base
    if room <= 0:
        return None

    def enough(d: float) -> bool:
        other = min(1.0, max(0.0, base + sign * d))
        test = fisher_power if exact else normal_power
        return test(n, base, other, alpha=alpha) >= power

    low, high = 0.0, None
    for step in range(1, _STEPS + 1):  # the first grid point that is enough
        d = room * step / _STEPS
        if enough(d):
            high = d
            break
        low = d
    if high is None:
        return None
    while high - low > TOLERANCE:
        mid = (low + high) / 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def detectable_difference(n: int, *, base_rate: float = 0.5, power: float = POWER,
                          alpha: float = SIGNIFICANCE) -> Detectable:
    """The smallest difference from ``base_rate`` that ``n`` sessions per arm detect with
    ``power`` at two-sided ``alpha`` (module doc: Fisher's exact test enumerated up to
    `EXACT_MAX_N`, the pooled z test's normal approximation above).

    Raises:
        ValueError: ``n < 1``, or ``base_rate`` outside (0, 1).
    """
    if not 0.0 < base_rate < 1.0:
        raise ValueError(f"the base rate lies strictly between 0 and 1, got {base_rate}")
    _check(n, base_rate, base_rate)
    exact = n <= EXACT_MAX_N
    found = [(d, base_rate + sign * d) for sign in (1, -1)
             if (d := _smallest(n, base_rate, sign, power, alpha, exact)) is not None]
    method = "fisher-exact" if exact else "normal-pooled-z"
    if not found:
        return Detectable(n, base_rate, method, None, None)
    d, other = min(found, key=lambda f: f[0] - (TOLERANCE if f[1] > base_rate else 0.0))
    return Detectable(n, base_rate, method, d, min(1.0, max(0.0, other)))


def repetitions_needed(p1: float, p2: float, *, power: float = POWER,
                       alpha: float = SIGNIFICANCE) -> tuple[int, str]:
    """The fewest sessions per arm that tell ``p1`` from ``p2`` with ``power``, and the method:
    the first ``n <= EXACT_MAX_N`` whose Fisher power (`fisher_power`) reaches it
    (``fisher-exact``), else the pooled z test's formula (`sessions_needed`, at least
    ``EXACT_MAX_N + 1``; ``normal-pooled-z``).

    Raises:
        ValueError: ``p1 == p2``, or a share outside [0, 1].
    """
    _check(1, p1, p2)
    if p1 == p2:
        raise ValueError("equal shares: no number of sessions tells them apart")
    for n in range(1, EXACT_MAX_N + 1):
        if fisher_power(n, p1, p2, alpha=alpha) >= power:
            return n, "fisher-exact"
    return max(EXACT_MAX_N + 1, sessions_needed(p1, p2, alpha=alpha, power=power)), \
        "normal-pooled-z"
