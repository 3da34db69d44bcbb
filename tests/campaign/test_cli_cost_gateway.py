"""``show``, ``status`` and the live view where they print cost, for gateway-priced attempts.

RC-14 as proposed: an attempt's cost is the provider's usage priced by the shipped table
when its final record has ``gateway`` (``show`` prints it with the table's date and the
harness's own figure beside it), the harness's figure otherwise; an unpriced request makes
the spend a lower bound (``>=``), and ``status --json`` counts them.
"""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

from rich.console import Console

from campaign.batch import advice_for
from campaign.batch._fold import BatchFold, SessionKey
from campaign.cli._show import _cost_text
from campaign.cli._status import cost_source_line
from campaign.cli._view import arms_table, budget_line
from tests.campaign.gateway_ledger import PRICES, final, started

A = SessionKey("present", "P-1", "s1")
B = SessionKey("present", "P-1", "s2")
C = SessionKey("absent", "P-1", "s1")


def test_show_prints_the_provider_priced_cost_with_its_table_and_the_harnesss_figure() -> None:
    assert _cost_text(final(A, harness="0.5", provider="0.0123")) == (
        f"$0.0123 (the provider's usage, prices of {PRICES}; the harness said $0.5000)")


def test_show_prints_an_unpriced_request_as_a_lower_bound_naming_its_model_escaped() -> None:
    text = _cost_text(final(A, harness=None, provider="0.01", unpriced=["claude-\x1b[2Jx"],
                            unpriced_requests=1))
    assert text == (f">=$0.0100 (the provider's usage, prices of {PRICES}, 1 request(s) "
                    "unpriced (claude-\\x1b[2Jx); the harness said unknown)")


def test_show_of_an_attempt_written_before_the_gateway_prints_the_harnesss_figure() -> None:
    assert _cost_text(final(A, harness="0.0297", provider=None)) == "$0.0297"


def test_the_live_view_and_status_mark_an_unpriced_spend_a_lower_bound() -> None:
    fold = BatchFold([(A, 1)])
    for record in (started(A), final(A, harness="0.5", provider="0.0123",
                                      unpriced=["claude-x"], unpriced_requests=2)):
        fold.apply(record)
    stats = fold.statistics()
    assert stats.spend_usd == Decimal("0.0123") and stats.cost_unknown == 0
    assert budget_line(stats, None) == "spend >= $0.0123 (no cost budget)"
    # the budget in dollars beside the cents the user gave it in
    assert budget_line(stats, 250) == "spend >= $0.0123 of a $2.50 budget (--max-cost-cents 250)"
    out = io.StringIO()
    Console(file=out, width=200).print(arms_table(stats.arms))
    row = next(line for line in out.getvalue().splitlines() if "present" in line)
    assert row.split()[-2:] == [">=", "$0.0123"]


def test_status_json_counts_the_spend_by_its_source_and_the_unpriced_requests(
        tmp_path: Path) -> None:
    # present s1 through the gateway (provider 0.0123, 2 unpriced), s2 written before it
    # (harness 0.25): 0.2623 spent; absent s1 provider 0.001.
    from campaign.cli._status import status_data
    from tests.report.batches import HandBatch

    b = HandBatch(tmp_path, {"P-1": (["yes"], [])}, arms=("present", "absent"), repetitions=2)
    s1, s2 = SessionKey("present", "P-1", "s1"), SessionKey("present", "P-1", "s2")
    other = SessionKey("absent", "P-1", "s1")
    for record in (started(s1), final(s1, harness="0.5", provider="0.0123",
                                      unpriced=["claude-x"], unpriced_requests=2),
                   started(s2), final(s2, harness="0.25", provider=None),
                   started(other), final(other, harness="0.002", provider="0.001")):
        b.ledger.append(record)
    b.stop()
    data = status_data(b.close())
    assert (data["spend_usd"], data["unpriced_requests"]) == ("0.2633", 2)
    assert (data["arms"]["present"]["cost_usd"], data["arms"]["present"]["unpriced_requests"],
            data["arms"]["absent"]["unpriced_requests"]) == ("0.2623", 2, 0)
    # two attempts through the gateway (one table), one written before it
    assert data["cost_source"] == {"provider_priced": 2, "harness_priced": 1,
                                   "prices": [PRICES]}


def test_status_names_each_cost_source_with_its_attempts() -> None:
    fold = BatchFold([(A, 1), (B, 1), (C, 1)])
    assert cost_source_line(fold.statistics()) is None  # nothing priced yet: no line
    for record in (started(A), final(A, harness="0.5", provider="0.0123"),
                   started(B), final(B, harness="0.25", provider=None)):
        fold.apply(record)
    assert cost_source_line(fold.statistics()) == (
        f"cost source: the provider's own usage, read by the gateway and priced by the price "
        f"table of {PRICES}, for 1 attempt; the harness's own total_cost_usd, for 1 attempt "
        "written before the gateway (not the provider's invoice)")
    # a harness figure that was never read prices nothing: not counted as a source
    fold.apply(started(C))
    fold.apply(final(C, harness=None, provider=None, state="no-result", retryable=True))
    assert fold.statistics().harness_priced == 1


def test_the_hint_names_a_larger_budget_when_the_batchs_cost_budget_is_spent() -> None:
    # docs/batch.md "Budgets": a plain resume runs with the last budget given, and no
    # attempt starts once the spend has reached it; so once 4.62 cents are spent of a
    # 4-cent budget, the hint must name --max-cost-cents (5: more than 4.62), and before
    # that a plain resume.
    batch = Path("/b")
    spent = advice_for(batch, spent_usd=Decimal("0.0462"), largest_attempt_usd=None,
                       max_cost_cents=4, est_session_cents=None)
    assert spent.text() == ("headwater-campaign resume /b --max-cost-cents 5 (or more): the "
                            "batch's cost budget of 4 cents is spent (4.62 cents), so a resume "
                            "without a larger budget starts nothing")
    reached = advice_for(batch, spent_usd=Decimal("0.04"), largest_attempt_usd=None,
                         max_cost_cents=4, est_session_cents=None)
    assert reached.command.endswith("--max-cost-cents 5 (or more)")  # reached is spent
    plain = "headwater-campaign resume /b"
    assert advice_for(batch, spent_usd=Decimal("0.0399"), largest_attempt_usd=None,
                      max_cost_cents=4, est_session_cents=None).text() == plain
    assert advice_for(batch, spent_usd=Decimal("5"), largest_attempt_usd=Decimal("1"),
                      max_cost_cents=None, est_session_cents=None).text() == plain


def test_the_hint_names_a_larger_budget_when_the_projection_would_stop_a_plain_resume() -> None:
    # A resume starts a session only if spent + one projection (the largest attempt so
    # far, or --est-session-cents while larger) stays within the budget: 15.30 cents spent
    # and a 3.44-cent attempt pass a 17-cent budget (18.74 > 17), so a plain resume
    # starts nothing and the hint must say so, naming 19 (the least whole budget >= 18.74).
    batch = Path("/b")
    stopped = advice_for(batch, spent_usd=Decimal("0.1530"),
                         largest_attempt_usd=Decimal("0.0344"), max_cost_cents=17,
                         est_session_cents=None)
    assert stopped.command == "headwater-campaign resume /b --max-cost-cents 19 (or more)"
    assert stopped.why == ("15.30 cents spent and 3.44 cents projected for the next session "
                           "would pass the batch's cost budget of 17 cents, so a resume "
                           "without a larger budget starts nothing")
    # exactly at the budget a session may start (<=): 15.30 + 3.70 = 19.00
    assert advice_for(batch, spent_usd=Decimal("0.1530"), largest_attempt_usd=Decimal("0.0370"),
                      max_cost_cents=19, est_session_cents=None).why is None
    # --est-session-cents counts while it is larger than the largest attempt
    assert advice_for(batch, spent_usd=Decimal("0.1530"), largest_attempt_usd=Decimal("0.0344"),
                      max_cost_cents=19, est_session_cents=4).command.endswith(
        "--max-cost-cents 20 (or more)")
