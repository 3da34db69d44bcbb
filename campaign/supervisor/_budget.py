"""Budgets: when the batch stops starting sessions (exit 3, resumable).

Two budgets, each optional (docs/batch.md, "Budgets"):

* cost, ``--max-cost-cents N``: the batch's realized spend (every attempt of every
  invocation, RC-14's figure, and the priced provider requests of the sessions in
  flight, `campaign.supervisor._spend.BatchSpend`), plus a projection for each
  session in flight and for the one about to start, must not be able to pass ``N``.
  Each session's provider gateway also refuses new requests once the realized spend
  reaches ``N`` (the session ends ``budget-stopped``). The
  projection of one session is the largest cost of one attempt so far, or
  ``--est-session-cents`` while that is larger (or nothing is known yet).
* wall, ``--max-wall D``: this invocation's elapsed seconds plus the longest
  session of this invocation so far must not pass ``D``.

Sessions in flight finish (unless ``--hard-wall``: at ``D`` the supervisor
cancels them); a stopped batch stays resumable, and a ``resume
--max-cost-cents N`` gives the batch a new total.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from campaign.batch import Budget, cents_text, may_start, projection_cents
from recorder import CENTS_PER_USD


@dataclass(frozen=True, slots=True)
class BudgetVerdict:
    """A budget that says: start no further session."""

    budget: Budget
    limit: float
    """Cents for ``cost``, seconds for ``wall``."""
    used: float
    """Cents spent, or seconds elapsed."""
    projection: float
    """Cents (or seconds) projected for one more session."""
    exact_cents: tuple[Decimal, Decimal] | None = None
    """``cost``: the exact cents spent and projected (``used`` and ``projection`` before
    they became floats for the ledger), which the words name; None for ``wall``."""

    def describe(self) -> str:
        """One sentence for the console and the ledger: cents as `campaign.batch.cents_text`
        names them, so the spend reads as the gateway's refusal of the same spend reads."""
        if self.budget == "cost":
            limit = f"{self.limit:g} cent{'' if self.limit == 1 else 's'}"
            used, projection = self.exact_cents or (Decimal(repr(self.used)),
                                                    Decimal(repr(self.projection)))
            if self.used >= self.limit:
                return (f"the cost budget of {limit} is spent: {cents_text(used)} spent "
                        "over every attempt of the batch and the requests of the sessions "
                        "in flight")
            return (f"the cost budget of {limit} could be passed: {cents_text(used)} spent, "
                    f"{cents_text(projection)} projected per session in flight and for the "
                    "next one")
        if self.used >= self.limit:
            return (f"the wall-clock budget of {self.limit:g} s is spent: {self.used:.0f} s "
                    "elapsed")
        return (f"the wall-clock budget of {self.limit:g} s could be passed: {self.used:.0f} s "
                f"elapsed, {self.projection:.0f} s projected for the next session")


@dataclass(frozen=True, slots=True)
class Budgets:
    """The budgets of one invocation (None = no such budget)."""

    max_cost_cents: int | None = None
    est_session_cents: int | None = None
    max_wall_s: float | None = None
    hard_wall: bool = False
    """At ``max_wall_s``, cancel the sessions still running (the supervisor does)."""

    def check(self, *, spent_usd: Decimal, largest_attempt_usd: Decimal | None, in_flight: int,
              elapsed_s: float, longest_session_s: float | None) -> BudgetVerdict | None:
        """Whether one more session may start now; None = yes.

        Args:
            spent_usd: The realized spend so far, USD: every known attempt cost of the
                batch and the priced requests of the sessions in flight.
            largest_attempt_usd: The largest known cost of one attempt, USD; None before any.
            in_flight: Sessions running now (they will finish and spend).
            elapsed_s: Seconds since this invocation began.
            longest_session_s: The longest session of this invocation, seconds; None before any.
        """
        if self.max_cost_cents is not None:
            spent = spent_usd * CENTS_PER_USD
            projection = projection_cents(largest_attempt_usd, self.est_session_cents)
            if not may_start(self.max_cost_cents, spent_cents=spent, projection=projection,
                             in_flight=in_flight):
                return BudgetVerdict("cost", self.max_cost_cents, float(spent), float(projection),
                                     exact_cents=(spent, projection))
        if self.max_wall_s is not None:
            projection_s = longest_session_s or 0.0
            if elapsed_s >= self.max_wall_s or elapsed_s + projection_s > self.max_wall_s:
                return BudgetVerdict("wall", self.max_wall_s, elapsed_s, projection_s)
        return None
