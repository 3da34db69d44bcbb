"""An attempt's side of its provider gateway, and the batch's realized spend.

Rules (docs/batch.md "Budgets" and "The ledger"; the gateway's interface,
`sandbox.gateway.SpendGate`):

* every request the gateway hands over, forwarded or refused, becomes one ``request``
  record naming its attempt, priced from the provider's usage (a refused one costs
  nothing; an unpriced model's request is counted as unknown and names the model);
* the batch's realized spend is the fold's (final records) plus the priced requests of
  the attempts still running, counted once: when an attempt's final record is folded,
  its requests leave the running sum;
* the gateway is refused new requests once the realized spend reaches
  ``--max-cost-cents``, and not before;
* the served model is the model of the row whose ``message_id`` is the final message's.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path

import pytest

from campaign.batch import BatchFold, FinalRecord, RequestRecord, SessionKey
from campaign.batch._journal import Journal
from campaign.batch._ledger import read_ledger
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from campaign.supervisor._gate import AttemptGate, AttemptRef, ProductPrices
from campaign.supervisor._spec import planned_sessions
from campaign.supervisor._spend import BatchSpend
from sandbox.gateway import MAX_TEXT, GatewayStats, ProviderRequest, Usage
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files

pytestmark = pytest.mark.anyio
PROBE = "HW-PRB-0001"
KEY = SessionKey("present", PROBE, "s1")
AT = "2026-12-03T12:00:00Z"


class TablePrices:
    """A price table of one model: 1 USD per million input tokens, 5 per million output."""

    date = "2026-11-30"

    def cost_usd(self, request: ProviderRequest) -> Decimal | None:
        if request.model != "claude-x" or request.usage is None:
            return None
        usage = request.usage
        return (Decimal(usage.input_tokens) * 1 + Decimal(usage.output_tokens) * 5) / 10**6


def row(*, model: str | None = "claude-x", input_tokens: int = 1000, output_tokens: int = 200,
        message_id: str | None = "msg_1", refused: str | None = None) -> ProviderRequest:
    return ProviderRequest(
        at=AT, method="POST", path="/v1/messages?beta=true", status=200 if not refused else 400,
        refused=refused, request_id="req_1" if not refused else None,  # type: ignore[arg-type]
        message_id=None if refused else message_id, model=None if refused else model,
        requested_model="claude-x", usage=None if refused else Usage(
            input_tokens=input_tokens, output_tokens=output_tokens,
            cache_creation_5m_tokens=7),
        stop_reason="end_turn", latency_s=0.5, duration_s=1.25,
        system_digest="sha256:" + "cd" * 32)


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    root = write_files(tmp_path / "corpus", {
        ".headwater/probe.yml": probe_yml(tiers={"campaign": {"arms": ["present"],
                                                              "repetitions": 2}}),
        "docs/probes/p1.md": probe_doc(PROBE, "A probe"),
        "docs/a.md": doc("HW-A-0001", "A.\n"),
    })
    return compose_plan(load_corpus(root), tier="campaign")


@pytest.fixture
def journal(tmp_path: Path, plan: Plan) -> Journal:
    (tmp_path / "batch").mkdir()
    return Journal(tmp_path / "batch", plan, planned=planned_sessions(plan),
                   network="confined", provider_note="Provider: a stand-in.")


def _final(cost: str, *, attempt: int = 1, session: str = "s1") -> FinalRecord:
    return FinalRecord(arm="present", probe=PROBE, session=session, repetition=1,
                       attempt=attempt, invocation=1, started_at=AT, state="recorded",
                       reason="recorded", retryable=False, cost_usd=Decimal(cost),
                       cost_known=True)


async def test_each_request_becomes_one_priced_record_of_its_attempt(
        journal: Journal) -> None:
    spend = BatchSpend(journal.fold)
    gate = AttemptGate(AttemptRef(KEY, 1, 2, 3), spend=spend, journal=journal,
                       prices=TablePrices())
    await gate.observed(row())
    await gate.observed(row(refused="budget"))
    journal.close()
    records = [r for r in read_ledger(journal.ledger.path) if isinstance(r, RequestRecord)]
    assert len(records) == 2
    priced, refused = records
    assert (priced.arm, priced.probe, priced.session, priced.repetition, priced.attempt,
            priced.invocation) == ("present", PROBE, "s1", 1, 2, 3)
    # 1000 input tokens at 1 USD/M + 200 output at 5 USD/M = 0.002 USD, from its table.
    assert (priced.cost_usd, priced.prices) == (Decimal("0.002"), "2026-11-30")
    assert (priced.model, priced.message_id, priced.request_id) == ("claude-x", "msg_1", "req_1")
    assert priced.usage is not None and priced.usage.cache_creation_5m_tokens == 7
    assert "cache_creation_1h_tokens" not in priced.usage.model_fields_set  # not sent
    assert (refused.refused, refused.cost_usd, refused.prices) == ("budget", None, None)


async def test_the_counts_sum_the_attempts_requests_and_name_unpriced_models(
        journal: Journal) -> None:
    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=BatchSpend(journal.fold),
                       journal=journal, prices=TablePrices())
    await gate.observed(row())
    await gate.observed(row(input_tokens=2000, output_tokens=0, message_id="msg_2"))
    await gate.observed(row(model="claude-new", message_id="msg_3"))
    await gate.observed(row(refused="budget"))
    stats = GatewayStats(forwarded=3, refused={"path POST /v1/complete": 1, "budget": 1},
                         budget_refused=1)
    counts = gate.counts(stats)
    assert counts.provider_cost_usd == Decimal("0.004")  # 0.002 + 0.002; the third unknown
    assert (counts.forwarded, counts.refused) == (
        3, {"budget": 1, "path POST /v1/complete": 1})
    assert (counts.unpriced_models, counts.unpriced_requests) == (["claude-new"], 1)
    assert counts.prices == "2026-11-30" and counts.login_failure is None
    journal.close()


async def test_a_response_cut_before_its_final_usage_is_priced_in_part_as_a_lower_bound(
        journal: Journal) -> None:
    # RC-14: a figure some of whose cost is unknown is a lower bound. A stream that broke off
    # after message_start has only that event's usage; what the provider generated after it
    # is unknown, so the known part is priced and the request counts as not fully priced.
    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=BatchSpend(journal.fold),
                       journal=journal, prices=TablePrices())
    whole = row()
    cut = dataclasses.replace(whole, stop_reason=None, message_id="msg_2",
                              upstream_error="the provider's response broke off")
    await gate.observed(whole)
    await gate.observed(cut)
    counts = gate.counts(GatewayStats(forwarded=2, refused={}, budget_refused=0))
    assert counts.provider_cost_usd == Decimal("0.004")  # both priced by what was read
    assert (counts.unpriced_requests, counts.unpriced_models) == (1, [])
    journal.close()


async def test_a_priced_request_counts_in_the_realized_spend_until_its_final_is_folded(
        journal: Journal) -> None:
    await journal.record(_final("0.01", session="s2"))  # an earlier attempt, folded
    spend = BatchSpend(journal.fold)
    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=spend, journal=journal,
                       prices=TablePrices())
    await gate.observed(row())
    assert spend.usd() == Decimal("0.012")  # the fold's 0.01 + the running 0.002
    await journal.record(_final("0.002"))
    spend.settled(KEY, 1)
    assert spend.usd() == Decimal("0.012")  # now the fold's alone: counted once
    journal.close()


def test_the_budget_refuses_once_the_realized_spend_reaches_it_and_not_before() -> None:
    fold = BatchFold()
    spend = BatchSpend(fold, max_cost_cents=5)
    spend.add(KEY, 1, Decimal("0.0499"))
    assert spend.refusal() is None  # 4.99 cents: under the budget
    spend.add(KEY, 1, Decimal("0.0001"))
    why = spend.refusal()  # 5 cents: reached
    assert why is not None and "5 cents" in why and "5.00 cents spent" in why
    assert BatchSpend(fold, max_cost_cents=None).refusal() is None  # no budget, no refusal


def test_the_gate_remembers_the_first_budget_refusal_it_gave() -> None:
    spend = BatchSpend(BatchFold(), max_cost_cents=1)
    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=spend,
                       journal=None,  # type: ignore[arg-type]  # never written here
                       prices=TablePrices())
    assert gate.refusal() is None and gate.budget_refusal is None
    spend.add(KEY, 1, Decimal("0.02"))
    assert gate.refusal() == gate.budget_refusal is not None


async def test_the_served_model_is_the_rows_whose_message_is_the_final_one(
        journal: Journal) -> None:
    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=BatchSpend(journal.fold),
                       journal=journal, prices=TablePrices())
    await gate.observed(row(model="claude-x", message_id="msg_a"))
    await gate.observed(row(model="claude-x-subagent", message_id="msg_b"))
    long_id = "msg_" + "z" * (2 * MAX_TEXT)
    await gate.observed(row(model="claude-long", message_id=long_id))
    assert gate.served_model("msg_a") == "claude-x"
    assert gate.served_model("msg_b") == "claude-x-subagent"
    assert gate.served_model(long_id[:MAX_TEXT]) == "claude-long"  # as the stream's is cut
    assert gate.served_model("msg_other") is None and gate.served_model(None) is None
    journal.close()


def test_the_verdicts_login_first_then_budget() -> None:
    spend = BatchSpend(BatchFold(), max_cost_cents=1)
    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=spend,
                       journal=None,  # type: ignore[arg-type]
                       prices=TablePrices())
    assert gate.verdict(GatewayStats(forwarded=4)) is None
    spend.add(KEY, 1, Decimal("0.02"))
    gate.refusal()
    budget = gate.verdict(GatewayStats(forwarded=4, budget_refused=2))
    assert budget is not None
    assert (budget.state, budget.retryable) == ("budget-stopped", True)
    assert "refused 2 requests" in budget.reason and "1 cent" in budget.reason
    assert "larger --max-cost-cents" in budget.reason
    login = gate.verdict(GatewayStats(budget_refused=2,
                                      login_failure="the host's login expired"))
    assert login is not None
    assert (login.state, login.retryable) == ("harness-error", False)
    assert "the host's login expired" in login.reason and "log in again" in login.reason


def test_the_products_table_prices_from_the_served_model_and_usage() -> None:
    # The product's table (RC-14, recorder/_prices.py): claude-sonnet-4-5 at $3 per million
    # input tokens, $15 per million output, $3.75 per million written to the 5-minute cache.
    prices = ProductPrices()
    assert prices.date == "2025-11-24"
    expected = (1000 * Decimal(3) + 200 * Decimal(15) + 7 * Decimal("3.75")) / 1_000_000
    assert prices.cost_usd(row(model="claude-sonnet-4-5")) == expected
    assert prices.cost_usd(row(model="claude-not-in-the-table")) is None  # unknown, never 0
    assert prices.cost_usd(row(model="claude-sonnet-4-5", input_tokens=-1)) is None
    assert prices.cost_usd(row(refused="budget")) is None  # no usage: unknown


async def test_a_flood_of_refused_requests_is_counted_past_the_rows_kept(
        journal: Journal) -> None:
    """A session controls how many requests it sends: past `REFUSED_ROWS_KEPT` refused rows
    of one attempt, each is counted (``refused_rows_not_written``) and no row is written;
    forwarded requests keep their rows whatever came before."""
    from campaign.supervisor._gate import REFUSED_ROWS_KEPT

    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=BatchSpend(journal.fold),
                       journal=journal, prices=TablePrices())
    extra = 7
    for _ in range(REFUSED_ROWS_KEPT + extra):
        await gate.observed(row(refused="placeholder"))
    await gate.observed(row())  # forwarded after the flood: written
    counts = gate.counts(GatewayStats(forwarded=1,
                                      refused={"placeholder": REFUSED_ROWS_KEPT + extra}))
    journal.close()
    records = [r for r in read_ledger(journal.ledger.path) if isinstance(r, RequestRecord)]
    assert sum(r.refused == "placeholder" for r in records) == REFUSED_ROWS_KEPT
    assert [r.refused for r in records[-1:]] == [None]
    assert counts.refused_rows_not_written == extra
    assert counts.refused == {"placeholder": REFUSED_ROWS_KEPT + extra}


async def test_a_provider_never_reached_names_the_cause_of_a_harness_error_only(
        journal: Journal) -> None:
    """A forwarded request whose provider never answered (no response began) makes the
    verdict a retryable harness-error that names the cause and the options to check, and
    only over a stream that ended harness-error; a response that began names nothing."""
    gate = AttemptGate(AttemptRef(KEY, 1, 1, 1), spend=BatchSpend(journal.fold),
                       journal=journal, prices=TablePrices())
    broke = ProviderRequest(at=AT, method="POST", path="/v1/messages?beta=true", status=502,
                            upstream_error="connection refused", duration_s=0.1)
    began = ProviderRequest(at=AT, method="POST", path="/v1/messages?beta=true", status=200,
                            upstream_error="the response broke off", latency_s=0.2,
                            duration_s=0.3)
    await gate.observed(began)
    assert gate.verdict(GatewayStats(forwarded=1)) is None
    await gate.observed(broke)
    verdict = gate.verdict(GatewayStats(forwarded=2))
    journal.close()
    assert verdict is not None
    assert (verdict.state, verdict.retryable, verdict.only_over) == (
        "harness-error", True, "harness-error")
    assert "could not reach the provider (connection refused)" in verdict.reason
    assert "--provider-url" in verdict.reason and "--provider-ca" in verdict.reason
