"""cost_cents per RC-14.

Rule text: "cost_cents = ceiling(100 x the sum of total_cost_usd of the last
result line of every attempt ..., computed with decimal.Decimal from the JSON
text and rounded once, after summing. ... attempts with unknown cost add
nothing, and the prose then says the figure is a lower bound."

So each expected value below is worked by hand from that sentence: sum the
decimal USD amounts exactly, multiply by 100, round up once.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from recorder._cost import CostFigure, CostUnreadable, cost_cents, decimal_cost
from recorder._harness import parse_line


def test_sum_is_exact_where_float_is_not() -> None:
    # 0.1 + 0.2 = 0.3 USD exactly -> 30 cents. Binary floats give
    # 0.30000000000000004 -> 31 cents; the test would catch a float path.
    assert math.ceil((0.1 + 0.2) * 100) == 31
    assert cost_cents([Decimal("0.1"), Decimal("0.2")]) == CostFigure(
        cents=30, unknown=0, lower_bound=False
    )
    # 1.1 USD -> 110 cents; float 1.1 * 100 = 110.00000000000001 -> 111.
    assert math.ceil(1.1 * 100) == 111
    assert cost_cents([Decimal("1.1")]).cents == 110


def test_ceiling_once_after_summing() -> None:
    # 3 x 0.0033333 = 0.0099999 USD -> 0.99999 cents -> ceiling 1.
    # A ceiling per attempt would give 1 + 1 + 1 = 3.
    assert cost_cents([Decimal("0.0033333")] * 3).cents == 1


@pytest.mark.parametrize(
    ("usd", "cents"),
    [("0", 0), ("0.12", 12), ("0.121", 13), ("0.0000001", 1), ("12.3456", 1235), ("1E-2", 1)],
)
def test_ceiling_of_a_single_amount(usd: str, cents: int) -> None:
    assert cost_cents([Decimal(usd)]).cents == cents


def test_unknown_costs_add_nothing_and_make_a_lower_bound() -> None:
    figure = cost_cents([Decimal("0.05"), None, Decimal("0.051"), None])
    assert figure == CostFigure(cents=11, unknown=2, lower_bound=True)


def test_no_attempts_is_zero_and_exact() -> None:
    assert cost_cents([]) == CostFigure(cents=0, unknown=0, lower_bound=False)


def test_many_small_amounts_sum_exactly() -> None:
    # 10,000 attempts of 0.000123456789012345678 USD = 1.23456789012345678 USD -> 124 cents.
    assert cost_cents([Decimal("0.000123456789012345678")] * 10_000).cents == 124


@pytest.mark.parametrize("bad", [0.1, 1, "0.1"])
def test_cost_cents_refuses_non_decimal(bad: object) -> None:
    with pytest.raises(TypeError, match="Decimal"):
        cost_cents([bad])  # type: ignore[list-item]


@pytest.mark.parametrize("bad", [Decimal("-0.01"), Decimal("NaN"), Decimal("Infinity")])
def test_cost_cents_refuses_negative_or_non_finite(bad: Decimal) -> None:
    with pytest.raises(CostUnreadable):
        cost_cents([bad])


def test_cost_figure_must_be_consistent() -> None:
    with pytest.raises(ValueError, match="inconsistent"):
        CostFigure(cents=1, unknown=1, lower_bound=False)


def test_from_result_lines_to_cents() -> None:
    # Two attempts print 0.1 and 0.2 (as a float sum, 0.30000000000000004 USD: 31 cents);
    # a third never printed a result line.
    lines = [b'{"type":"result","total_cost_usd":0.1}', b'{"type":"result","total_cost_usd":0.2}']
    parsed = [parse_line(line) for line in lines]
    costs = [decimal_cost(obj["total_cost_usd"]) for obj in parsed if obj is not None] + [None]
    assert cost_cents(costs) == CostFigure(cents=30, unknown=1, lower_bound=True)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        (Decimal("0.0123"), Decimal("0.0123")),
        ("0.0123", Decimal("0.0123")),
        (0, Decimal(0)),
        ("1e-3", Decimal("0.001")),
    ],
)
def test_decimal_cost_accepts(raw: object, expected: Decimal | None) -> None:
    assert decimal_cost(raw) == expected


@pytest.mark.parametrize(
    "raw", [0.1, True, "abc", "-1", " 1", "NaN", "0x10", [], Decimal("-1"), Decimal("NaN")]
)
def test_decimal_cost_refuses(raw: object) -> None:
    with pytest.raises(CostUnreadable):
        decimal_cost(raw)
