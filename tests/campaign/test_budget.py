"""Budgets, from their definitions (docs/batch.md, "Budgets").

cost: stop when spend >= N, or spend + projection x (in flight + 1) > N, where the
projection is the larger of the largest attempt cost and --est-session-cents.
wall: stop when elapsed >= D, or elapsed + the longest session so far > D.
"""

from __future__ import annotations

from decimal import Decimal
from typing import cast

import pytest

from campaign.batch import BatchFold, BudgetStopRecord
from campaign.report._build import _budget_stop
from campaign.supervisor._budget import Budgets
from campaign.supervisor._spend import BatchSpend


def check(budgets: Budgets, *, spent: str = "0", largest: str | None = None, in_flight: int = 0,
          elapsed: float = 0.0, longest: float | None = None) -> str | None:
    verdict = budgets.check(spent_usd=Decimal(spent),
                            largest_attempt_usd=Decimal(largest) if largest else None,
                            in_flight=in_flight, elapsed_s=elapsed, longest_session_s=longest)
    return None if verdict is None else verdict.budget


def test_no_budget_never_stops() -> None:
    assert check(Budgets(), spent="1000", in_flight=50, elapsed=1e9) is None


@pytest.mark.parametrize(
    ("spent", "largest", "in_flight", "stops"),
    [
        ("0.40", "0.10", 0, False),   # 40 + 10 x 1 = 50: not over 50
        ("0.40", "0.11", 0, True),    # 40 + 11 x 1 = 51 > 50
        ("0.20", "0.10", 2, False),   # 20 + 10 x 3 = 50
        ("0.21", "0.10", 2, True),    # 21 + 10 x 3 = 51
        ("0.50", None, 0, True),      # the spend alone reaches the budget
        ("0.49", None, 5, False),     # nothing known to project yet
    ],
)
def test_the_cost_budget_projects_every_session_in_flight_and_the_next(
    spent: str, largest: str | None, in_flight: int, stops: bool
) -> None:
    budgets = Budgets(max_cost_cents=50)
    assert (check(budgets, spent=spent, largest=largest, in_flight=in_flight) == "cost") is stops


def test_the_estimate_projects_until_a_larger_cost_is_known() -> None:
    budgets = Budgets(max_cost_cents=50, est_session_cents=20)
    assert check(budgets, spent="0", in_flight=1) is None           # 0 + 20 x 2 = 40
    assert check(budgets, spent="0", in_flight=2) == "cost"         # 0 + 20 x 3 = 60
    assert check(budgets, spent="0", largest="0.05", in_flight=1) is None   # 20 still larger
    assert check(budgets, spent="0", largest="0.30", in_flight=0) is None   # 30 x 1
    assert check(budgets, spent="0", largest="0.30", in_flight=1) == "cost"  # 30 x 2 = 60


@pytest.mark.parametrize(
    ("elapsed", "longest", "stops"),
    [(50.0, None, False), (100.0, None, True), (70.0, 30.0, False), (70.0, 31.0, True)],
)
def test_the_wall_budget_projects_the_longest_session(elapsed: float, longest: float | None,
                                                      stops: bool) -> None:
    budgets = Budgets(max_wall_s=100.0)
    assert (check(budgets, elapsed=elapsed, longest=longest) == "wall") is stops


def test_a_verdict_says_what_stopped_in_words() -> None:
    verdict = Budgets(max_cost_cents=50).check(spent_usd=Decimal("0.6"), largest_attempt_usd=None,
                                               in_flight=0, elapsed_s=0,
                                               longest_session_s=None)
    assert verdict is not None
    assert verdict.describe().startswith("the cost budget of 50 cents is spent: 60.00")
    ahead = Budgets(max_cost_cents=1).check(spent_usd=Decimal("0.005"),
                                            largest_attempt_usd=Decimal("0.006"), in_flight=0,
                                            elapsed_s=0, longest_session_s=None)
    assert ahead is not None
    assert ahead.describe().startswith("the cost budget of 1 cent could be passed: 0.50")


def test_the_batchs_budget_is_the_last_one_given_and_an_older_config_reads_without_it() -> None:
    # docs/batch.md "Budgets", "config.yaml": config.yaml's `budget` when recorded; without
    # the key (a batch written before it, same format), the budget of the last run, demo or
    # resume in the ledger (a record sets none); with none, options.max_cost_cents.
    from pathlib import Path

    from campaign.batch._config import BatchConfig, BudgetSetting, batch_budget, read_config
    from campaign.batch._records import Command, InvocationRecord

    older = read_config(Path(__file__).parents[1] / "fixtures" / "batches" / "format1" / "batch")
    assert older.budget is None
    config = older.model_copy(update={"options": older.options.model_copy(
        update={"max_cost_cents": 50})})

    def inv(number: int, command: Command, cents: int | None) -> InvocationRecord:
        return InvocationRecord(number=number, command=command, pid=1,
                                runner="x", retries=2, max_cost_cents=cents,
                                est_session_cents=None, max_wall_s=None,
                                at="2026-12-01T00:00:00Z")

    assert batch_budget(config, None).max_cost_cents == 50
    assert batch_budget(config, inv(2, "resume", 30)).max_cost_cents == 30
    assert batch_budget(config, inv(3, "record", None)).max_cost_cents == 50
    given = BudgetSetting(max_cost_cents=30, invocation=2, command="resume",
                          at="2026-12-01T00:00:00Z")
    recorded = BatchConfig.model_validate({**config.model_dump(mode="json"),
                                           "budget": given.model_dump(mode="json")})
    assert batch_budget(recorded, inv(3, "resume", 50)) == given


class _Fold:
    """The one figure `BatchSpend` reads of a fold: the spend of every attempt, USD."""

    def __init__(self, spend_usd: str) -> None:
        self.spend_usd = Decimal(spend_usd)


@pytest.mark.parametrize(("spent_usd", "cents"), [("0.04015", "4.02"), ("0.04025", "4.02"),
                                                  ("0.0463", "4.63"), ("0.05", "5.00")])
def test_the_console_budget_line_names_the_cents_the_gateways_refusal_names(
        spent_usd: str, cents: str) -> None:
    # One spend, two messages: the gateway's refusal (what the session's reason quotes) and
    # the console's budget line. 4.015 cents is 4.01499... as a float and 4.025 is 4.02500...1,
    # so a line formatted from the float said 4.01 and 4.03 where the refusal said 4.02.
    refusal = BatchSpend(cast(BatchFold, _Fold(spent_usd)), max_cost_cents=4).refusal()
    verdict = Budgets(max_cost_cents=4).check(
        spent_usd=Decimal(spent_usd), largest_attempt_usd=None, in_flight=0, elapsed_s=0,
        longest_session_s=None)
    assert refusal is not None and verdict is not None
    assert f"is reached: {cents} cents spent" in refusal
    assert f"is spent: {cents} cents spent" in verdict.describe()


def test_the_projection_is_named_with_its_unit() -> None:
    verdict = Budgets(max_cost_cents=10, est_session_cents=3).check(
        spent_usd=Decimal("0.05"), largest_attempt_usd=Decimal("0.0195"), in_flight=1,
        elapsed_s=0, longest_session_s=None)
    assert verdict is not None
    assert verdict.describe() == ("the cost budget of 10 cents could be passed: 5.00 cents "
                                  "spent, 3.00 cents projected per session in flight and for "
                                  "the next one")


def test_the_reports_budget_stop_line_names_each_figure_with_its_unit() -> None:
    cost = BudgetStopRecord(invocation=1, budget="cost", limit=4, used=4.015, projection=1.95,
                            in_flight=3)
    assert _budget_stop(cost) == ("the cost budget of 4 cents stopped the batch: 4.02 cents "
                                  "spent, 1.95 cents projected per session in flight and for "
                                  "the next one")
    wall = BudgetStopRecord(invocation=1, budget="wall", limit=100, used=101.2, projection=30,
                            in_flight=0)
    assert _budget_stop(wall) == ("the wall-clock budget stopped the batch: 101 s elapsed of "
                                  "100 s, 30 s projected for the next session")
