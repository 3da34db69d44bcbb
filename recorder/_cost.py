"""The realized cost of an arm, in whole US cents (docs/glossary.md RC-14).

``cost_cents = ceiling(100 x sum(total_cost_usd))`` over the last ``result``
line of every attempt of every session of the arm, whatever its final state.
Three rules make the figure exact and reproducible:

* USD amounts are `decimal.Decimal` parsed from the JSON *text* (the
  harness line reader turns every JSON fraction into a `Decimal`), never
  through ``float``: ``0.1 + 0.2`` is 0.3 here.
* The sum comes first and the ceiling once, after it: three attempts of
  $0.0033333 are 1 cent, not 3.
* An attempt with unknown cost (no result line) adds nothing and makes the
  figure a lower bound; the prose then names those attempts.

An attempt that prints several result lines (a background task's notification starts a
new turn after the first result) is priced by its **last** one: ``total_cost_usd`` is
cumulative over the attempt's results on every release the census covers (on 2.1.197
and 2.1.332 the second result's ``total_cost_usd`` and ``modelUsage`` include the first's,
while ``usage`` and 2.1.332's ``model_usage_since_last_result`` hold that result's own
turns: tests/fixtures/cost/). Summing the results would count the first one twice; the
per-result figures are decided ignored (`recorder._resultkeys`).

Errors:

* CostUnreadable (ValueError) - a ``total_cost_usd`` value that is not a
  finite, non-negative JSON number. The caller decides whether that attempt
  counts as unknown; it is never silently zero.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Final

__all__ = ["CENTS_PER_USD", "SUM_PRECISION", "CostFigure", "CostSum", "CostUnreadable",
           "cost_cents", "decimal_cost"]

SUM_PRECISION: Final = 200
"""Decimal digits kept while summing or scaling USD amounts: far above any real cost, so a
sum is exact (RC-14). Every layer that adds or scales costs uses this one figure."""
CENTS_PER_USD: Final = Decimal(100)
"""US cents in one US dollar: the scale from ``total_cost_usd`` to the cents of RC-14."""
_JSON_NUMBER: Final = re.compile(r"\A-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")


class CostUnreadable(ValueError):
    """A ``total_cost_usd`` value is not a finite, non-negative number of USD."""

    def __init__(self, value: object, reason: str) -> None:
        super().__init__(f"total_cost_usd {value!r} unreadable: {reason}")
        self.value = value
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CostFigure:
    """An arm's cost for the identity's ``cost_cents`` and the prose.

    Attributes:
        cents: Whole US cents, ``ceiling(100 x sum)`` of the known USD costs.
        unknown: Number of attempts whose cost is unknown (added nothing).
        lower_bound: True exactly when ``unknown > 0``: the real cost may be higher.
    """

    cents: int
    unknown: int
    lower_bound: bool

    def __post_init__(self) -> None:
        if self.cents < 0 or self.unknown < 0 or self.lower_bound != (self.unknown > 0):
            raise ValueError(f"inconsistent cost figure: {self!r}")


def cost_cents(costs: Iterable[Decimal | None]) -> CostFigure:
    """Sum USD costs exactly, then take one ceiling of 100 x the sum (RC-14).

    Args:
        costs: One entry per attempt: its ``total_cost_usd`` in USD as a
            `Decimal`, or ``None`` when unknown (no result line was read).

    Returns:
        The figure in whole cents, with the count of unknown attempts.

    Raises:
        TypeError: an entry is not a `Decimal` or ``None`` (a ``float`` has
            already lost the JSON text; parse floats as `Decimal`).
        CostUnreadable: an entry is negative, NaN or infinite.
    """
    running = CostSum()
    for cost in costs:
        running.add(cost)
    return running.figure()


@dataclass(slots=True)
class CostSum:
    """`cost_cents` one attempt at a time: the same exact sum, nothing kept per attempt.

    A batch's transcript adds each attempt's cost as its final record arrives; a
    list of every cost held a `Decimal` (about 100 bytes) per attempt for the batch.
    """

    total: Decimal = Decimal(0)
    """The sum of the known costs so far, USD (exact: `SUM_PRECISION` digits)."""
    unknown: int = 0
    """Attempts of unknown cost so far."""

    def add(self, cost: Decimal | None) -> None:
        """Add one attempt's cost (None: unknown).

        Raises:
            TypeError, CostUnreadable: as `cost_cents`.
        """
        if cost is None:
            self.unknown += 1
            return
        with localcontext() as ctx:
            ctx.prec = SUM_PRECISION
            self.total += _checked(cost)

    def figure(self) -> CostFigure:
        """The figure of what was added: one ceiling of 100 x the sum, in whole cents."""
        with localcontext() as ctx:
            ctx.prec = SUM_PRECISION
            cents = int((self.total * CENTS_PER_USD).to_integral_value(rounding=ROUND_CEILING))
        return CostFigure(cents=cents, unknown=self.unknown, lower_bound=self.unknown > 0)


def _checked(cost: object) -> Decimal:
    if not isinstance(cost, Decimal):
        raise TypeError(f"cost must be Decimal or None, not {type(cost).__name__}: {cost!r}")
    if not cost.is_finite() or cost < 0:
        raise CostUnreadable(cost, "not a finite, non-negative amount")
    return cost


def decimal_cost(raw: object) -> Decimal | None:
    """Turn a ``total_cost_usd`` value into exact USD, or ``None`` when absent.

    Args:
        raw: The value from a line parsed with floats as `Decimal` (a `Decimal`
            or ``int``), the ledger's decimal string (e.g. ``"0.0123"``, JSON
            number grammar), or ``None`` for "no cost known".

    Returns:
        The amount in USD as a `Decimal`, or ``None``.

    Raises:
        CostUnreadable: a float, bool, malformed string, negative or
            non-finite amount, or any other type.
    """
    if raw is None:
        return None
    if isinstance(raw, (bool, float)):
        raise CostUnreadable(
            raw, f"{type(raw).__name__}; parse the JSON text with floats as Decimal"
        )
    if isinstance(raw, int):
        raw = Decimal(raw)
    elif isinstance(raw, str):
        if not _JSON_NUMBER.match(raw):
            raise CostUnreadable(raw, "not a JSON number")
        raw = Decimal(raw)
    if not isinstance(raw, Decimal):
        raise CostUnreadable(raw, f"unexpected type {type(raw).__name__}")
    try:
        return _checked(raw)
    except TypeError as exc:  # pragma: no cover - excluded above
        raise CostUnreadable(raw, str(exc)) from exc
