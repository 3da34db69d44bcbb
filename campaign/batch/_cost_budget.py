"""The cost budget's start rule (docs/batch.md, "Budgets").

One rule, read in two places: the supervisor asks it before each session starts
(`campaign.supervisor.Budgets.check`), and ``status`` and ``report`` ask it of a batch
nobody holds, to say whether a plain ``resume`` would start anything
(`campaign.batch._resume_advice`).

The rule, in cents: a session may start while ``spent < budget`` and
``spent + projection x (in_flight + 1) <= budget``, where ``projection`` is the largest cost
of one attempt so far, or ``--est-session-cents`` while that is larger (or nothing is known).
"""

from __future__ import annotations

import math
from decimal import Decimal

from recorder import CENTS_PER_USD


def projection_cents(largest_attempt_usd: Decimal | None, est_session_cents: int | None) -> Decimal:
    """What one more session is projected to cost, exact cents: the largest known cost of
    one attempt (USD, None before any), or ``est_session_cents`` while that is larger."""
    largest = (largest_attempt_usd or Decimal(0)) * CENTS_PER_USD
    return max(largest, Decimal(est_session_cents or 0))


def may_start(max_cost_cents: int, *, spent_cents: Decimal, projection: Decimal,
              in_flight: int) -> bool:
    """Whether one more session may start under a cost budget of ``max_cost_cents``, with
    ``spent_cents`` realized, ``projection`` cents per session and ``in_flight`` sessions
    running (module docstring's rule)."""
    return (spent_cents < max_cost_cents
            and spent_cents + projection * (in_flight + 1) <= max_cost_cents)


def least_budget_cents(spent_cents: Decimal, projection: Decimal) -> int:
    """The smallest whole ``--max-cost-cents`` under which a resume (nothing in flight)
    starts a session: at least spent plus one projection, and more than spent."""
    return max(math.ceil(spent_cents + projection), math.floor(spent_cents) + 1)
