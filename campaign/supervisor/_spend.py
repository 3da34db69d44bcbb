"""The batch's realized spend, as its provider gateways see it happen (RC-14, budgets).

`BatchSpend` is the one figure ``--max-cost-cents`` is held to while a batch runs: the
fold's spend (every attempt of every invocation that has its final record) plus the
priced provider requests of the attempts still running, which their gateways report one
row at a time (`campaign.supervisor._gate.AttemptGate`). Two rules read it
(docs/batch.md, "Budgets"):

* before each provider request, the gateway asks (`BatchSpend.refusal`): once the realized
  spend reaches the budget, no new request is forwarded, so a batch overshoots by at most
  the requests in flight;
* before a session starts, the supervisor's projection rule (`Budgets.check`) adds its
  projection to the same realized spend.

An attempt's rows count here until its final record is folded (`BatchSpend.settled`, on
the same event-loop step as the fold takes the record): then the fold holds its cost,
and nothing is counted twice.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from campaign.batch import cents_text
from recorder import CENTS_PER_USD

if TYPE_CHECKING:
    from campaign.batch import BatchFold, SessionKey


class BatchSpend:
    """The realized spend of a batch while one invocation runs it, and its cost budget.

    Args:
        fold: The batch's fold (its ``spend_usd``: every attempt with a final record).
        max_cost_cents: ``--max-cost-cents``, the batch's whole budget; None: none.

    Runs on the runner's event loop only (the gateways' handlers and the supervisor):
    nothing here blocks or awaits.
    """

    def __init__(self, fold: BatchFold, *, max_cost_cents: int | None = None) -> None:
        self._fold = fold
        self.max_cost_cents = max_cost_cents
        self._running: dict[tuple[SessionKey, int], Decimal] = {}

    def running_usd(self) -> Decimal:
        """The priced requests of the attempts without a final record yet, exact USD."""
        return sum(self._running.values(), Decimal(0))

    def usd(self) -> Decimal:
        """The realized spend, exact USD: the fold's plus `running_usd`."""
        return self._fold.spend_usd + self.running_usd()

    def add(self, key: SessionKey, attempt: int, cost_usd: Decimal) -> None:
        """One priced request of attempt ``attempt`` of ``key`` (still running), USD."""
        slot = (key, attempt)
        self._running[slot] = self._running.get(slot, Decimal(0)) + cost_usd

    def settled(self, key: SessionKey, attempt: int) -> None:
        """The attempt's final record is folded (or it ends without one): its requests
        leave `running_usd`, the fold counting its cost from now on."""
        self._running.pop((key, attempt), None)

    def refusal(self) -> str | None:
        """None while a new provider request may be forwarded; once the realized spend
        reaches ``--max-cost-cents``, why not, in words."""
        if self.max_cost_cents is None:
            return None
        spent = self.usd() * CENTS_PER_USD
        if spent < self.max_cost_cents:
            return None
        limit = f"{self.max_cost_cents} cent{'' if self.max_cost_cents == 1 else 's'}"
        return (f"the batch's cost budget of {limit} is reached: {cents_text(spent)} spent "
                "over every attempt of the batch and the requests of the sessions running")
