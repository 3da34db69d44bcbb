"""The prose's sentences on what the provider's own metadata says (RC-14, RC-16).

Two facts the provider gateway makes visible from outside the sandbox, in words:

* where the arm's ``cost_cents`` came from (`cost_source_line`): the provider's usage priced
  with the shipped, dated price table, or the harness's own ``total_cost_usd`` for attempts
  written before the gateway, and how far the harness's figure stands from the provider's
  over the attempts that have both;
* which system prompts the arm's recorded sessions met (`system_prompts_line`): the
  digests the gateway took of each request's system prompt, its date line taken out.

Every string that came from a session or the provider (a served model, a digest read
back from the ledger) goes through `prose_value`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Final

from .._cost import SUM_PRECISION
from ._literal import prose_value

AGREE_USD: Final = Decimal("0.01")
"""Two figures that differ by less than this (one cent) agree."""
PROMPT_COVERS: Final = (
    " The digest covers the system prompt alone: the harness sends CLAUDE.md and its other "
    "memory files in the conversation's first user message, not in the system prompt, so "
    "arms that differ only in what they load meet the same system prompt."
)
"""Why two arms can show one digest (said after the digests: an arm that loads CLAUDE.md and
one that does not met the same system prompt in the demo, observed with 2.1.332)."""
HARNESS_PLACES: Final = 4
"""Decimal places, at least, of a harness figure beside the provider's (a hundredth of a cent)."""
DIGESTS_LISTED: Final = 10
"""System-prompt digests the prose lists by name; further ones are counted."""

HARNESS_SOURCE: Final = (
    "Cost source: the harness's own computed cost, total_cost_usd of the last result line of "
    "each attempt; not the provider's invoice. cost_cents = {cents}."
)
"""The sentence of an arm none of whose attempts went through the provider gateway."""
_PROVIDER_SOURCE: Final = (
    "Cost source: the provider's own token usage of each request (message_start and "
    "message_delta, read by the provider gateway outside the sandbox), priced with the price "
    "table of {dates} that ships with headwater-campaign and summed exactly{older}, then "
    "rounded up once to whole cents; not the provider's invoice. cost_cents = {cents}."
)
_OLDER: Final = (
    ", and, for {n} written before the gateway, the harness's own computed cost "
    "(total_cost_usd of the last result line)"
)


@dataclass(frozen=True, slots=True)
class CostSource:
    """Where an arm's cost figure came from (the prose's facts; USD exact).

    Attributes:
        provider_attempts: Attempts priced from the provider's usage.
        harness_attempts: Attempts of known cost priced by the harness's figure (written
            before the gateway).
        prices: The price tables' dates those attempts name (``YYYY-MM-DD``), sorted.
        compared: Provider-priced attempts whose harness figure was read too.
        compared_provider: Their provider-priced cost, USD.
        compared_harness: The harness's ``total_cost_usd`` over the same attempts, USD.
        unpriced_requests: Requests priced as unknown (they add nothing).
        unpriced_models: The served models the price table lacked, as the provider sent
            them (untrusted).
        unpriced_more: Further unpriced models, not named.
        interrupted_usd: Priced requests of interrupted attempts, counted in the figure.
    """

    provider_attempts: int = 0
    harness_attempts: int = 0
    prices: tuple[str, ...] = ()
    compared: int = 0
    compared_provider: Decimal = Decimal(0)
    compared_harness: Decimal = Decimal(0)
    unpriced_requests: int = 0
    unpriced_models: tuple[str, ...] = ()
    unpriced_more: int = 0
    interrupted_usd: Decimal = Decimal(0)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def usd_text(usd: Decimal) -> str:
    """Exact USD as the prose writes it: ``$0.0123`` (the `Decimal`'s own digits, no exponent)."""
    return f"${usd:f}"


def _places(value: Decimal) -> int:
    """The decimal places ``value`` is written with (0 for an integer, NaN or infinity)."""
    exponent = value.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def harness_usd_text(usd: Decimal, *, like: Decimal) -> str:
    """A figure of the harness's (its ``total_cost_usd`` summed, or a difference from it), USD,
    to no more decimal places than ``like`` (the provider-priced figure it stands beside) has,
    and at least `HARNESS_PLACES`: rounded half up, with ``(rounded)`` after it when that
    dropped digits.

    The harness prints binary floats (``0.029699999999999997``), read as their exact JSON text
    (RC-14), so their sum carries eighteen places of float noise the provider's figure does
    not; the agreement is decided on the exact values all the same.
    """
    places = max(HARNESS_PLACES, _places(like))
    if _places(usd) <= places:
        return usd_text(usd)
    with localcontext() as ctx:
        ctx.prec = SUM_PRECISION
        rounded = usd.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return f"{usd_text(rounded)} (rounded)"


def cost_source_line(source: CostSource | None, *, cents: int) -> str:
    """The prose's cost-source sentence (before any lower-bound sentence of unknown attempts).

    With no provider-priced attempt (``source`` None, or none counted) it is exactly the
    sentence batches written before the gateway have (`HARNESS_SOURCE`), so their
    transcripts render as they were. Otherwise it names the price table's date(s), how many
    attempts the harness's figure priced, the unpriced models (the figure is then a lower
    bound), the interrupted attempts' priced requests, and the agreement: the harness's own
    figure over the same attempts, and how far the two differ (absolute, and relative to the
    provider's figure); within a cent they agree.
    """
    if source is None or not source.provider_attempts:
        return HARNESS_SOURCE.format(cents=cents)
    dates = " and ".join(source.prices) or "an unnamed date"
    older = (_OLDER.format(n=_plural(source.harness_attempts, "attempt"))
             if source.harness_attempts else "")
    line = _PROVIDER_SOURCE.format(dates=dates, older=older, cents=cents)
    if source.unpriced_requests:
        line += " " + _unpriced(source)
    if source.interrupted_usd:
        line += (f" The requests of interrupted attempts priced before they were cut, "
                 f"{usd_text(source.interrupted_usd)}, are counted.")
    return line + " " + agreement_sentence(source)


def _unpriced(source: CostSource) -> str:
    models = [prose_value(m) for m in source.unpriced_models]
    if source.unpriced_more:
        models.append(f"{source.unpriced_more} more")
    named = (f"; served models the price table lacks: {', '.join(models)}" if models else "")
    return (f"This is a lower bound: {_plural(source.unpriced_requests, 'request')} priced "
            f"as unknown in whole or in part (no usage read, a model the table lacks, or a "
            f"response cut before its final usage, whose known part is counted){named}.")


def agreement_sentence(source: CostSource) -> str:
    """How far the harness's own figure stands from the provider-priced one (same attempts).

    ``agree`` when they differ by less than `AGREE_USD`; else the difference in USD and
    relative to the provider's figure, in percent to one decimal (half up). The harness's
    figure and the difference are written to the provider figure's places
    (`harness_usd_text`); both are decided on the exact sums.
    """
    if not source.compared:
        return ("The harness's own figure (total_cost_usd) was read for none of these "
                "attempts, so the two cannot be compared.")
    with localcontext() as ctx:
        ctx.prec = SUM_PRECISION
        provider, harness = source.compared_provider, source.compared_harness
        gap = harness - provider
    over = (f"Over the {_plural(source.compared, 'attempt')} with both figures, the "
            f"provider's usage prices {usd_text(provider)} and the harness's own "
            f"total_cost_usd sums to {harness_usd_text(harness, like=provider)}")
    if abs(gap) < AGREE_USD:
        return f"{over}: they agree within a cent."
    way = "more" if gap > 0 else "less"
    if provider:
        with localcontext() as ctx:
            ctx.prec = SUM_PRECISION
            percent = (abs(gap) * 100 / provider).quantize(Decimal("0.1"),
                                                          rounding=ROUND_HALF_UP)
        relative = f" ({percent:f}% of the provider's figure)"
    else:
        relative = " (the provider's figure is zero, so no ratio)"
    return (f"{over}: the harness says {harness_usd_text(abs(gap), like=provider)} "
            f"{way}{relative}.")


def system_prompts_line(digests: Mapping[str, int], sessions: int) -> str | None:
    """The prose sentence on the system prompts an arm's recorded sessions met.

    Args:
        digests: Each system-prompt digest the gateway took (``sha256:<hex>``, read back
            from the ledger's ``request`` rows) -> recorded sessions that met it.
        sessions: Recorded sessions with at least one digested request.

    Returns:
        None when no recorded session has one (no gateway, or no system prompt); else one
        paragraph: ``every recorded session met the same system prompt`` when every one met
        the same digests, or the distinct digests with their counts (most first, the first
        `DIGESTS_LISTED`); then what a digest covers (`PROMPT_COVERS`), since arms that
        differ in CLAUDE.md show the same one.
    """
    if not sessions or not digests:
        return None
    head = ("System prompts (the provider gateway's digest of each request's system prompt, "
            "its date line taken out): ")
    ranked = sorted(digests.items(), key=lambda item: (-item[1], item[0]))
    if all(n == sessions for _, n in ranked):
        if len(ranked) == 1:
            return (f"{head}every recorded session ({sessions}) met the same system "
                    f"prompt, {prose_value(ranked[0][0])}.{PROMPT_COVERS}")
        listed = ", ".join(prose_value(d) for d, _ in ranked[:DIGESTS_LISTED])
        return (f"{head}every recorded session ({sessions}) met the same "
                f"{len(ranked)} system prompts: {listed}.{PROMPT_COVERS}")
    listed = ", ".join(f"{prose_value(d)} ({_plural(n, 'session')})"
                       for d, n in ranked[:DIGESTS_LISTED])
    more = len(ranked) - DIGESTS_LISTED
    return (f"{head}the {sessions} recorded sessions did not all meet the same ones: "
            f"{len(ranked)} distinct digests, {listed}"
            + (f" and {more} more" if more > 0 else "") + f".{PROMPT_COVERS}")
