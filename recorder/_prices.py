"""The price table that ships with the product: a provider response's usage priced (RC-14).

With the provider gateway on, an attempt's cost is the sum of its requests' prices: the
token usage the provider itself reported (``message_start`` and ``message_delta``, read by
the gateway outside the sandbox) times the figures below. The table names the date its
figures were taken (`PRICE_TABLE_DATE`), and every priced figure carries that date
(the ledger's ``prices``), so a batch says which prices it was costed with.

Where the figures come from: Anthropic's published per-million-token list prices for its
Claude models (the pricing page of its documentation: base input, output, 5-minute cache
write, 1-hour cache write, cache read), as known on `PRICE_TABLE_DATE`; the facts (the
numbers), not the page's text, were carried over. ``claude-opus-4-8``, the model of the
demo plan and of the scripted provider's example scripts, is priced as the pinned CLI was
observed to price it (tests/fixtures/captures/STREAM_JSON_FACTS.md: $5/M input, $25/M
output, cache reads billed at $0.50/M), with the published cache-write multipliers of its
tier (1.25x input for 5 minutes, 2x for 1 hour). Long-context surcharges (a request
over 200K input tokens with the 1M context window) and batch-API discounts are not in the
table: the runner sends neither kind, and a figure for them would be a guess.

The rule, exact (no float anywhere: every figure is a `Decimal` from its text):

``cost = input x p_in + output x p_out + cache_5m x p_5m + cache_1h x p_1h
+ cache_read x p_read``, each ``p`` the price per million tokens / 1,000,000. The
cache-write tokens are split as the provider split them
(``usage.cache_creation.ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``);
tokens of ``cache_creation_input_tokens`` the split does not account for (or all of them,
when the provider gave no split) are priced at the 5-minute rate, the provider's default
cache lifetime.

A served model is found by its exact id, or by its dated form: a trailing
``-YYYYMMDD`` is taken off (``claude-sonnet-4-5-20250929`` prices as
``claude-sonnet-4-5``). A model the table lacks prices as unknown (None): the caller's
figure then becomes a lower bound that names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Final, Protocol

from ._cost import SUM_PRECISION

__all__ = ["PRICE_TABLE", "PRICE_TABLE_DATE", "ModelPrices", "TokenCounts", "price_usage",
           "priced_model"]

PRICE_TABLE_DATE: Final = "2025-11-24"
"""The date the table's figures were taken (``YYYY-MM-DD``): the date a priced row names."""

_PER_TOKEN: Final = Decimal(1_000_000)
"""Tokens per quoted price: the table is written per million tokens."""
_DATED: Final = re.compile(r"\A(?P<base>.+)-\d{8}\Z")


@dataclass(frozen=True, slots=True)
class ModelPrices:
    """One model's list prices, USD per million tokens (exact decimals).

    Attributes:
        input: Base input tokens.
        output: Output tokens.
        cache_write_5m: Cache-write tokens with the 5-minute lifetime.
        cache_write_1h: Cache-write tokens with the 1-hour lifetime.
        cache_read: Cache-hit (read) tokens.
    """

    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal


def _prices(input_: str, output: str, write_5m: str, write_1h: str, read: str) -> ModelPrices:
    return ModelPrices(Decimal(input_), Decimal(output), Decimal(write_5m), Decimal(write_1h),
                       Decimal(read))


_OPUS_4_5_TIER: Final = _prices("5", "25", "6.25", "10", "0.50")
_OPUS_4_TIER: Final = _prices("15", "75", "18.75", "30", "1.50")
_SONNET_TIER: Final = _prices("3", "15", "3.75", "6", "0.30")

PRICE_TABLE: Final[dict[str, ModelPrices]] = {
    "claude-opus-4-8": _OPUS_4_5_TIER,
    "claude-opus-4-5": _OPUS_4_5_TIER,
    "claude-opus-4-1": _OPUS_4_TIER,
    "claude-opus-4": _OPUS_4_TIER,
    "claude-sonnet-4-5": _SONNET_TIER,
    "claude-sonnet-4": _SONNET_TIER,
    "claude-3-7-sonnet": _SONNET_TIER,
    "claude-haiku-4-5": _prices("1", "5", "1.25", "2", "0.10"),
    "claude-3-5-haiku": _prices("0.80", "4", "1", "1.6", "0.08"),
    "claude-3-haiku": _prices("0.25", "1.25", "0.30", "0.50", "0.03"),
}
"""Model id (undated) -> its list prices, USD per million tokens, as of `PRICE_TABLE_DATE`."""


class TokenCounts(Protocol):
    """A response's token usage (`sandbox.gateway.Usage`, the ledger's ``usage``): counts."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_creation_input_tokens(self) -> int: ...
    @property
    def cache_read_input_tokens(self) -> int: ...
    @property
    def cache_creation_5m_tokens(self) -> int | None: ...
    @property
    def cache_creation_1h_tokens(self) -> int | None: ...


def priced_model(model: str) -> str | None:
    """The table's id for a served model: itself, or its undated form; None when neither."""
    if model in PRICE_TABLE:
        return model
    dated = _DATED.match(model)
    if dated is not None and dated["base"] in PRICE_TABLE:
        return dated["base"]
    return None


def price_usage(model: str | None, usage: TokenCounts) -> Decimal | None:
    """The exact USD price of one response's usage for ``model`` (module docstring's rule).

    Args:
        model: The served model id (``message.model`` of ``message_start``); None when the
            response named none.
        usage: Its token counts, each a non-negative int.

    Returns:
        USD as a `Decimal` (exact: `SUM_PRECISION` digits); None when the table lacks the
        model (or none was named): the price is unknown, never zero.

    Raises:
        ValueError: a count is negative or not an int (a provider figure the gateway should
            not have passed on).
    """
    found = priced_model(model) if model is not None else None
    if found is None:
        return None
    p = PRICE_TABLE[found]
    written = _count(usage.cache_creation_input_tokens)
    split_5m = _count(usage.cache_creation_5m_tokens or 0)
    split_1h = _count(usage.cache_creation_1h_tokens or 0)
    rest_5m = max(0, written - split_5m - split_1h)
    with localcontext() as ctx:
        ctx.prec = SUM_PRECISION
        per_million = (_count(usage.input_tokens) * p.input
                       + _count(usage.output_tokens) * p.output
                       + (split_5m + rest_5m) * p.cache_write_5m
                       + split_1h * p.cache_write_1h
                       + _count(usage.cache_read_input_tokens) * p.cache_read)
        return per_million / _PER_TOKEN


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a token count is a non-negative integer, not {value!r}")
    return value
