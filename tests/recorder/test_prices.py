"""The shipped price table (recorder/_prices.py): a response's usage priced exactly (RC-14).

Every expected figure is worked out by hand from the published per-million prices the
module docstring names, never taken from the code's output.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from recorder import PRICE_TABLE, PRICE_TABLE_DATE, price_usage, priced_model
from sandbox.gateway import Usage


def test_the_table_names_the_date_its_figures_were_taken() -> None:
    assert dt.date.fromisoformat(PRICE_TABLE_DATE).isoformat() == PRICE_TABLE_DATE


def test_every_figure_is_an_exact_decimal() -> None:
    for prices in PRICE_TABLE.values():
        for figure in (prices.input, prices.output, prices.cache_write_5m,
                       prices.cache_write_1h, prices.cache_read):
            assert type(figure) is Decimal and figure > 0


def test_the_demo_model_is_priced_in_both_its_forms() -> None:
    """The demo plan's ``claude-opus-4-8`` and the served ``claude-opus-4-8-20261101`` of the
    example scripts: 100 in, 20 out at $5/M and $25/M is 500 + 500 = 1000 per million."""
    usage = Usage(input_tokens=100, output_tokens=20)
    assert price_usage("claude-opus-4-8", usage) == Decimal("0.001")
    assert price_usage("claude-opus-4-8-20261101", usage) == Decimal("0.001")


def test_a_dated_id_prices_as_its_undated_model() -> None:
    assert priced_model("claude-sonnet-4-5-20250929") == "claude-sonnet-4-5"
    assert priced_model("claude-sonnet-4-5") == "claude-sonnet-4-5"
    assert priced_model("claude-sonnet-4-5-2025092") is None  # not a date: not the model
    assert priced_model("claude-sonnet-4-5-x-20250929") is None


def test_every_kind_of_token_is_priced_at_its_own_rate() -> None:
    """claude-sonnet-4-5: $3 in, $15 out, $3.75 5-minute write, $6 1-hour write, $0.30 read.
    1000 in = 3000; 200 out = 3000; 400 written of which 100 for 5 minutes and 200 for an
    hour, the 100 unaccounted at the 5-minute rate: 200 x 3.75 = 750 and 200 x 6 = 1200;
    10000 read = 3000. Sum 10950 per million = $0.01095."""
    usage = Usage(input_tokens=1000, output_tokens=200, cache_creation_input_tokens=400,
                  cache_read_input_tokens=10_000, cache_creation_5m_tokens=100,
                  cache_creation_1h_tokens=200)
    assert price_usage("claude-sonnet-4-5-20250929", usage) == Decimal("0.01095")


def test_cache_writes_without_a_split_are_priced_for_five_minutes() -> None:
    """claude-haiku-4-5: 1000 cache-write tokens at $1.25/M = $0.00125 (not $2/M)."""
    usage = Usage(cache_creation_input_tokens=1000)
    assert price_usage("claude-haiku-4-5", usage) == Decimal("0.00125")


def test_one_million_output_tokens_of_opus_4_1_cost_its_list_price() -> None:
    assert price_usage("claude-opus-4-1-20250805",
                       Usage(output_tokens=1_000_000)) == Decimal(75)


def test_a_model_the_table_lacks_prices_unknown_not_zero() -> None:
    usage = Usage(input_tokens=1, output_tokens=1)
    assert price_usage("claude-scripted", usage) is None
    assert price_usage(None, usage) is None
    assert price_usage("claude-opus-4-8", Usage()) == 0


def test_a_count_that_is_not_a_non_negative_int_is_refused() -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        price_usage("claude-opus-4-8", Usage(input_tokens=-1))
    with pytest.raises(ValueError, match="non-negative integer"):
        price_usage("claude-opus-4-8", Usage(output_tokens=1.5))  # type: ignore[arg-type]
