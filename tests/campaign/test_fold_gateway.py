"""The fold's cost (``status``, the budget's spend) from attempts that ran through the gateway.

RC-14 as proposed (docs/glossary.md): an attempt whose final record has ``gateway`` costs its
provider-priced sum, one without it costs the harness's ``total_cost_usd``; unpriced
requests and interrupted attempts make the figure a lower bound; an interrupted attempt's
priced ``request`` rows are realized spend. Every expected figure is summed by hand.
"""

from __future__ import annotations

from decimal import Decimal

from campaign.batch._fold import BatchFold, SessionKey
from campaign.batch._records import InvocationRecord
from tests.campaign.gateway_ledger import final, request, started

A = SessionKey("present", "P-1", "s1")
B = SessionKey("absent", "P-1", "s1")
C = SessionKey("present", "P-2", "s1")


def fold_of(*records: object) -> BatchFold:
    fold = BatchFold([(A, 1), (B, 1), (C, 1)])
    for record in records:
        fold.apply(record)  # type: ignore[arg-type]
    return fold


def invocation(number: int) -> InvocationRecord:
    return InvocationRecord(number=number, command="resume", pid=9, runner="x", retries=2,
                            max_cost_cents=None, est_session_cents=None, max_wall_s=None)


def test_an_attempt_with_a_gateway_costs_its_provider_priced_sum_not_the_harnesss() -> None:
    fold = fold_of(started(A), request(A), final(A, harness="0.50", provider="0.0123"))
    assert fold.arms["present"].cost_usd == Decimal("0.0123")
    assert fold.spend_usd == Decimal("0.0123")
    assert fold.largest_attempt_usd == Decimal("0.0123")  # the budget's projection too
    assert not fold.statistics().lower_bound


def test_an_attempt_written_before_the_gateway_costs_the_harnesss_figure() -> None:
    # C has no gateway key (an older batch resumed): 0.0123 + 0.25 = 0.2623.
    fold = fold_of(started(A), final(A, harness="0.50", provider="0.0123"),
                   started(C), final(C, harness="0.25", provider=None))
    assert fold.arms["present"].cost_usd == Decimal("0.2623")


def test_unpriced_requests_make_the_spend_a_lower_bound_without_an_unknown_attempt() -> None:
    fold = fold_of(started(A), final(A, provider="0.01", unpriced=["claude-new"],
                                     unpriced_requests=2))
    stats = fold.statistics()
    assert (stats.cost_unknown, stats.unpriced_requests, stats.lower_bound) == (0, 2, True)
    assert stats.arms["present"].lower_bound and stats.arms["present"].unpriced_requests == 2


def test_an_interrupted_attempts_priced_rows_are_realized_spend() -> None:
    # Two rows priced 0.002 and 0.003, one unpriced (None): 0.005 spent, the cost unknown.
    fold = fold_of(invocation(1), started(A), request(A, cost="0.002"),
                   request(A, cost="0.003"), request(A, cost=None))
    gone = fold.apply(invocation(2))
    assert gone == [(A, 1)]
    assert fold.interrupted_usd(A, 1) == Decimal("0.005")
    assert fold.spend_usd == Decimal("0.005") and fold.cost_unknown == 1
    assert fold.arms["present"].cost_usd == Decimal("0.005")


def test_a_final_record_replaces_its_rows_cost_never_adds_to_it() -> None:
    fold = fold_of(started(A), request(A, cost="0.002"), request(A, cost="0.003"),
                   final(A, provider="0.005"))
    assert fold.runner_gone() == []
    assert fold.spend_usd == Decimal("0.005")


def test_a_runner_stopped_attempt_with_a_gateway_counts_its_gateway_sum_once() -> None:
    # killed with counts false: interrupted, its cost known from its gateway (0.004), not
    # its rows (0.002) plus that.
    fold = fold_of(started(A), request(A, cost="0.002"),
                   final(A, "killed", provider="0.004", harness=None, counts=False,
                         retryable=True))
    assert fold.spend_usd == Decimal("0.004")
    assert fold.sessions[A].interrupted
    # RC-14: an attempt whose record has ``gateway`` costs its gateway's sum, known (the
    # transcripts and the report count it so): status must not call the spend a lower bound
    assert fold.cost_unknown == 0 and fold.arms["present"].cost_unknown == 0
    assert not fold.statistics().lower_bound
    # docs/batch.md "Budgets": the projection is the largest cost of one attempt so far,
    # and this one's is known: a rerun of it projects at least that
    assert fold.largest_attempt_usd == Decimal("0.004")


def test_a_runner_stopped_attempt_without_a_known_cost_is_still_unknown() -> None:
    # killed with counts false, written before the gateway and no result line: unknown
    fold = fold_of(started(A), final(A, "killed", provider=None, harness=None, counts=False,
                                     retryable=True))
    assert fold.cost_unknown == 1 and fold.statistics().lower_bound


def test_rows_of_an_attempt_that_is_not_the_running_one_are_not_counted() -> None:
    # A row of attempt 1 arriving after attempt 2 began (never written so, but not counted).
    fold = fold_of(started(A), final(A, "harness-error", provider="0.001", retryable=True),
                   started(A, 2), request(A, attempt=1, cost="0.5"))
    fold.runner_gone()
    assert fold.spend_usd == Decimal("0.001")


def test_realized_spend_counts_the_running_attempts_priced_rows_once() -> None:
    # The budget's view: C settled at 0.01; A running with rows 0.002 + 0.003.
    fold = fold_of(started(C), final(C, provider="0.01"), started(A),
                   request(A, cost="0.002"), request(A, cost="0.003"))
    assert (fold.spend_usd, fold.realized_usd) == (Decimal("0.01"), Decimal("0.015"))
    fold.apply(final(A, provider="0.006"))  # its gateway's sum replaces its rows'
    assert (fold.spend_usd, fold.realized_usd) == (Decimal("0.016"), Decimal("0.016"))
    fold.apply(started(B))
    fold.apply(request(B, cost="0.004"))
    fold.runner_gone()  # interrupted: its rows move into the spend, not twice
    assert (fold.spend_usd, fold.realized_usd) == (Decimal("0.020"), Decimal("0.020"))


def test_a_budget_stopped_attempt_costs_its_gateway_sum_known_even_without_a_result() -> None:
    # docs/batch.md "Session states": budget-stopped counts its cost. Its gateway priced the
    # requests it forwarded before the budget was reached (0.0195); the harness's own figure
    # may be missing (no result read): the cost is that sum, known, not a lower bound.
    fold = fold_of(started(A), request(A, cost="0.0195"),
                   final(A, "budget-stopped", provider="0.0195", harness=None, retryable=True))
    stats = fold.statistics()
    assert (stats.spend_usd, stats.cost_unknown, stats.lower_bound) == (
        Decimal("0.0195"), 0, False)
    assert fold.arms["present"].cost_usd == Decimal("0.0195")
