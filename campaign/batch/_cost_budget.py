"""The cost budget's start rule, and what it means for the next ``resume`` (docs/batch.md,
"Budgets").

One rule, read in two places: the supervisor asks it before each session starts
(`campaign.supervisor.Budgets.check`), and ``status`` and ``report`` ask it of a batch
nobody holds, to say whether a plain ``resume`` would start anything (`resume_advice`). A
resume begins with nothing in flight, so the advice is the rule with ``in_flight`` 0 and the
spend, projection and budget that resume would run with: a hint that says a plain resume
finishes a batch whose projection stops it at once would send the user round in a circle.

The rule, in cents: a session may start while ``spent < budget`` and
``spent + projection x (in_flight + 1) <= budget``, where ``projection`` is the largest cost
of one attempt so far, or ``--est-session-cents`` while that is larger (or nothing is known).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from recorder import CENTS_PER_USD

from ._config import batch_budget
from ._spend import cents_text

if TYPE_CHECKING:
    from pathlib import Path

    from ._config import BatchConfig
    from ._fold import BatchFold


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


@dataclass(frozen=True, slots=True)
class ResumeAdvice:
    """How to finish a batch's outstanding sessions, in words.

    Attributes:
        command: The command line to run (``headwater-campaign resume BATCH``, with
            ``--max-cost-cents N`` when the batch's budget would start nothing).
        why: Why a larger budget is needed, one clause with its figures in cents; None
            when a plain resume starts sessions.
    """

    command: str
    why: str | None = None

    def text(self) -> str:
        """The command, then its reason after a colon when it has one."""
        return self.command if self.why is None else f"{self.command}: {self.why}"


def resume_advice(batch: Path, fold: BatchFold, config: BatchConfig) -> ResumeAdvice:
    """What to run to finish ``batch``'s outstanding sessions (module docstring): a plain
    ``resume`` runs with the batch's budget now (`batch_budget`) and its recorded
    ``--est-session-cents`` (`advice_for`)."""
    return advice_for(batch, spent_usd=fold.spend_usd,
                      largest_attempt_usd=fold.largest_attempt_usd,
                      max_cost_cents=batch_budget(config, fold.last_run).max_cost_cents,
                      est_session_cents=config.options.est_session_cents)


def advice_for(batch: Path, *, spent_usd: Decimal, largest_attempt_usd: Decimal | None,
               max_cost_cents: int | None, est_session_cents: int | None) -> ResumeAdvice:
    """What to run to finish ``batch``, given the figures a plain ``resume`` would start with.

    Args:
        batch: The batch directory, as the command line should name it.
        spent_usd: The batch's spend, exact USD (every attempt with a final record).
        largest_attempt_usd: The largest known cost of one attempt, USD; None before any.
        max_cost_cents: The budget the resume would run with; None: no cost budget.
        est_session_cents: Its ``--est-session-cents``; None: not given.

    Returns:
        A plain ``resume`` when the start rule lets its first session start (nothing in
        flight); else one naming the least ``--max-cost-cents`` that does, and why. The
        wall-clock budget belongs to one invocation and starts afresh, so it is not asked.
    """
    command = f"headwater-campaign resume {batch}"
    if max_cost_cents is None:
        return ResumeAdvice(command)
    spent = spent_usd * CENTS_PER_USD
    projection = projection_cents(largest_attempt_usd, est_session_cents)
    if may_start(max_cost_cents, spent_cents=spent, projection=projection, in_flight=0):
        return ResumeAdvice(command)
    least = least_budget_cents(spent, projection)
    limit = f"{max_cost_cents} cent{'' if max_cost_cents == 1 else 's'}"
    if spent >= max_cost_cents:
        why = f"the batch's cost budget of {limit} is spent ({cents_text(spent)})"
    else:
        why = (f"{cents_text(spent)} spent and {cents_text(projection)} projected for the "
               f"next session would pass the batch's cost budget of {limit}")
    return ResumeAdvice(f"{command} --max-cost-cents {least} (or more)",
                        f"{why}, so a resume without a larger budget starts nothing")
