"""An attempt's cost under RC-14, and the sums every reader of a batch keeps of it.

One rule, read the same way by the fold (``status``, the budget, the live view), the
transcripts' prose and identity (``cost_cents``) and the report's spend:

* An attempt whose final record has a ``gateway`` key costs
  ``gateway.provider_cost_usd``: the provider's own usage, as the gateway read it outside
  the sandbox, priced with the price table that ships with the product
  (`recorder.price_usage`, dated by ``gateway.prices``). Its requests priced as unknown
  (``unpriced_requests``: a served model the table lacks, or no usage read) add nothing, one
  cut before its final usage adds its known part, and either makes the figure a lower
  bound that names the models (``unpriced_models``).
* An attempt without it (written before the gateway) costs ``cost_usd``: the harness's
  own ``total_cost_usd``, as before; unknown when no result line was read.
* Either way the harness's figure (``cost_usd``) is kept beside it, so the prose can say
  how far the two differ over the attempts that have both.
* An attempt interrupted before its final record (its runner died) has an unknown cost;
  its ``request`` rows priced so far are realized spend and are added (the figure stays a
  lower bound).

`SpendSum` adds attempts one at a time and holds a few numbers, never a list per attempt
(a 10,000-session batch's transcript is built from it). The figure is one ceiling of
100 x the exact sum (`recorder.CostSum`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import TYPE_CHECKING, Final

from recorder import NOTHING_SPENT, SUM_PRECISION, CostSum
from recorder.transcript import CostSource

if TYPE_CHECKING:
    from ._records import FinalRecord

UNPRICED_NAMED: Final = 20
"""Distinct unpriced models a sum keeps by name; further ones are counted, not named."""


CENT_PLACES: Final = Decimal("0.01")
"""The budget messages name cents to two places (hundredths of a cent)."""


def cents_text(cents: Decimal) -> str:
    """An amount of US cents as every budget message names it: two decimal places, rounded
    half to even as `Decimal` formats by default (``Decimal("4.615")`` -> ``"4.62 cents"``,
    ``Decimal("4.625")`` -> ``"4.62 cents"``), then the unit.

    The gateway's refusal (`campaign.supervisor._spend.BatchSpend.refusal`), the console's
    budget line (`campaign.supervisor._budget.BudgetVerdict.describe`) and the report's
    budget-stop line all name their figures through this, so one spend reads the same in
    each. Give the exact `Decimal` (a ``float`` has lost digits: pass ``Decimal(repr(x))``).
    """
    return f"{cents.quantize(CENT_PLACES, rounding=ROUND_HALF_EVEN):f} cents"


@dataclass(frozen=True, slots=True)
class AttemptCost:
    """One attempt's cost, read from its final record (module docstring's rule).

    Attributes:
        usd: What the attempt adds to its arm's figure, exact USD; None: unknown.
        unknown: The attempt's cost is unknown (it adds nothing; a lower bound).
        provider: Priced from the provider's usage (the record has ``gateway``).
        harness_usd: The harness's own ``total_cost_usd`` (None: not read).
        unpriced_requests: Requests of the attempt priced as unknown.
        unpriced_models: The served models the price table lacked.
        prices: The price table's date (``YYYY-MM-DD``) for a provider-priced attempt.
    """

    usd: Decimal | None
    unknown: bool
    provider: bool
    harness_usd: Decimal | None
    unpriced_requests: int = 0
    unpriced_models: tuple[str, ...] = ()
    prices: str | None = None


def attempt_cost(record: FinalRecord) -> AttemptCost:
    """The cost of the attempt ``record`` ends, by RC-14's source for it (module docstring)."""
    gateway = record.gateway
    if gateway is None:
        unknown = (record.cost_usd is None and not record.cost_known
                   and record.state not in NOTHING_SPENT)
        return AttemptCost(usd=record.cost_usd, unknown=unknown, provider=False,
                           harness_usd=record.cost_usd)
    return AttemptCost(usd=gateway.provider_cost_usd, unknown=False, provider=True,
                       harness_usd=record.cost_usd,
                       unpriced_requests=gateway.unpriced_requests,
                       unpriced_models=tuple(gateway.unpriced_models), prices=gateway.prices)


@dataclass(slots=True)
class SpendSum:
    """Attempts' costs summed exactly (RC-14), with where each came from.

    Attributes:
        total: The figure's known USD: provider-priced attempts at their provider cost,
            the others at the harness's, interrupted ones at their rows priced so far.
        unknown: Attempts whose cost is unknown (they add nothing: a lower bound).
        provider_attempts: Attempts priced from the provider's usage.
        harness_attempts: Attempts priced by the harness's figure (written before the
            gateway) whose cost was known.
        compared: Provider-priced attempts whose harness figure was read too.
        compared_provider: The provider-priced cost of those ``compared`` attempts.
        compared_harness: The harness's figure over the same attempts.
        unpriced_requests: Requests priced as unknown (they add nothing: a lower bound).
        unpriced_models: The unpriced served models, first seen first, at most
            `UNPRICED_NAMED` (``unpriced_more`` counts the rest).
        unpriced_more: Distinct unpriced models seen beyond those named.
        prices: The price tables' dates the provider-priced attempts name.
        interrupted_usd: The priced rows of interrupted attempts (in ``total`` too).
    """

    total: Decimal = field(default_factory=Decimal)
    unknown: int = 0
    provider_attempts: int = 0
    harness_attempts: int = 0
    compared: int = 0
    compared_provider: Decimal = field(default_factory=Decimal)
    compared_harness: Decimal = field(default_factory=Decimal)
    unpriced_requests: int = 0
    unpriced_models: dict[str, None] = field(default_factory=dict)
    unpriced_more: int = 0
    prices: set[str] = field(default_factory=set)
    interrupted_usd: Decimal = field(default_factory=Decimal)

    def add(self, cost: AttemptCost) -> None:
        """Add one attempt's cost (`attempt_cost`)."""
        with localcontext() as ctx:
            ctx.prec = SUM_PRECISION
            if cost.unknown:
                self.unknown += 1
            if cost.usd is not None:
                self.total += cost.usd
            if cost.provider:
                self.provider_attempts += 1
                if cost.prices:
                    self.prices.add(cost.prices)
                self.unpriced_requests += cost.unpriced_requests
                for model in cost.unpriced_models:
                    self._unpriced(model)
                if cost.usd is not None and cost.harness_usd is not None:
                    self.compared += 1
                    self.compared_provider += cost.usd
                    self.compared_harness += cost.harness_usd
            elif cost.usd is not None:
                self.harness_attempts += 1

    def add_interrupted(self, rows_usd: Decimal | None) -> None:
        """Add an attempt interrupted before its final record: unknown, with the cost of
        its ``request`` rows priced so far (None: none) added as realized spend."""
        self.unknown += 1
        if rows_usd:
            with localcontext() as ctx:
                ctx.prec = SUM_PRECISION
                self.total += rows_usd
                self.interrupted_usd += rows_usd

    def merge(self, other: SpendSum) -> None:
        """Add every attempt ``other`` holds (another probe's, another batch's)."""
        with localcontext() as ctx:
            ctx.prec = SUM_PRECISION
            self.total += other.total
            self.compared_provider += other.compared_provider
            self.compared_harness += other.compared_harness
            self.interrupted_usd += other.interrupted_usd
        self.unknown += other.unknown
        self.provider_attempts += other.provider_attempts
        self.harness_attempts += other.harness_attempts
        self.compared += other.compared
        self.unpriced_requests += other.unpriced_requests
        for model in other.unpriced_models:
            self._unpriced(model)
        self.unpriced_more += other.unpriced_more
        self.prices |= other.prices

    def _unpriced(self, model: str) -> None:
        if model in self.unpriced_models:
            return
        if len(self.unpriced_models) < UNPRICED_NAMED:
            self.unpriced_models[model] = None
        else:
            self.unpriced_more += 1

    def copy(self) -> SpendSum:
        """An independent copy (a frozen arm's, built in another thread)."""
        return SpendSum(self.total, self.unknown, self.provider_attempts,
                        self.harness_attempts, self.compared, self.compared_provider,
                        self.compared_harness, self.unpriced_requests,
                        dict(self.unpriced_models), self.unpriced_more, set(self.prices),
                        self.interrupted_usd)

    @property
    def lower_bound(self) -> bool:
        """The real cost may be higher: an attempt of unknown cost, or an unpriced request."""
        return self.unknown > 0 or self.unpriced_requests > 0

    def cost_sum(self) -> CostSum:
        """The figure's `recorder.CostSum`: ``total``, with the unknown attempts counted."""
        return CostSum(self.total, self.unknown)

    def source(self) -> CostSource:
        """What the prose says of the figure's source (`recorder.transcript.CostSource`)."""
        return CostSource(
            provider_attempts=self.provider_attempts, harness_attempts=self.harness_attempts,
            prices=tuple(sorted(self.prices)), compared=self.compared,
            compared_provider=self.compared_provider, compared_harness=self.compared_harness,
            unpriced_requests=self.unpriced_requests,
            unpriced_models=tuple(self.unpriced_models), unpriced_more=self.unpriced_more,
            interrupted_usd=self.interrupted_usd)
