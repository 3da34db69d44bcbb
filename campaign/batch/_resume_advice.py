"""What to run to finish a batch's outstanding sessions, in words (``status``, ``report``).

A plain ``resume`` runs with the batch's recorded options and its budget now, from nothing
in flight, so the advice asks what that resume would meet (docs/batch.md, "Budgets"):

* a batch made by ``record`` is not resumed: its next session is recorded with ``record``;
* the cost budget's start rule (`campaign.batch._cost_budget`) with ``in_flight`` 0: when it
  would refuse the first session, the advice names the least ``--max-cost-cents`` that
  starts one;
* a recorded ``--max-wall D --hard-wall`` that stopped the last invocation: a plain resume
  runs with the same wall, and cancels again whatever runs longer, so the advice names
  ``--max-wall`` (or ``--no-hard-wall``).

A hint that sends the user to a plain resume that starts nothing, or finishes nothing, would
send them round in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from recorder import CENTS_PER_USD

from ._config import batch_budget
from ._cost_budget import least_budget_cents, may_start, projection_cents
from ._spend import cents_text

if TYPE_CHECKING:
    from pathlib import Path

    from ._config import BatchConfig
    from ._fold import BatchFold


@dataclass(frozen=True, slots=True)
class ResumeAdvice:
    """How to finish a batch's outstanding sessions, in words.

    Attributes:
        command: The command line to run (``headwater-campaign resume BATCH``, with
            ``--max-cost-cents N`` when the batch's budget would start nothing, or
            ``--max-wall D`` when its hard wall would cancel what runs; ``record`` for a
            batch that command made).
        why: Why the plain ``resume`` will not do, one clause with its figures (cents,
            seconds); None when it will.
    """

    command: str
    why: str | None = None

    def text(self) -> str:
        """The command, then its reason after a colon when it has one."""
        return self.command if self.why is None else f"{self.command}: {self.why}"


def resume_advice(batch: Path, fold: BatchFold, config: BatchConfig) -> ResumeAdvice:
    """What to run to finish ``batch``'s outstanding sessions (module docstring): a plain
    ``resume`` runs with the batch's budget now (`batch_budget`), its recorded
    ``--est-session-cents`` (`advice_for`) and its recorded wall."""
    options = config.options
    if options.command == "record":
        return ResumeAdvice(
            f"headwater-campaign record --batch-dir {batch} --probe ID --arm ARM",
            "a batch made by `record` takes one session at a time, and `resume` refuses it")
    cost = advice_for(batch, spent_usd=fold.spend_usd,
                      largest_attempt_usd=fold.largest_attempt_usd,
                      max_cost_cents=batch_budget(config, fold.last_run).max_cost_cents,
                      est_session_cents=options.est_session_cents)
    stop = fold.budget_stop
    if (cost.why is None and options.hard_wall and options.max_wall_s is not None
            and stop is not None and stop.budget == "wall"):
        return ResumeAdvice(
            f"{cost.command} --max-wall D (longer than a session takes) or --no-hard-wall",
            f"the recorded wall-clock budget of {options.max_wall_s:g} s with --hard-wall "
            "cancelled the sessions still running, and a plain resume runs with the same wall")
    return cost


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
