"""The cost budget over the batch's realized spend, and resuming what it stopped.

Rules (docs/batch.md "Budgets", "Session states"):

* the supervisor's projection rule holds for starting sessions, over the realized spend,
  which includes the priced requests of sessions still in flight (not only the attempts
  with a final record);
* ``budget-stopped`` is retryable on a resume with a larger budget: ``resume`` runs the
  session again when its budget allows, and a resume whose budget is already spent starts
  nothing (a budget stop, exit 3).

Sessions are run by `tests.fakes.FakeAttempts` (each attempt that runs costs 1 cent); the
supervisor, journal, ledger and fold are the real ones. What ``resume`` runs is what the
fold says is outstanding (`SessionLog.outstanding`, as `campaign.cli._batch._outstanding`
asks it), given in the batch's order.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from campaign.batch import SessionKey
from campaign.batch._journal import Journal
from campaign.batch._ledger import read_ledger
from campaign.batch._records import BudgetStopRecord
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from campaign.supervisor._budget import Budgets
from campaign.supervisor._fanout import RunLimits, Supervisor
from campaign.supervisor._spec import SessionSpec, planned_sessions, session_order
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files
from tests.fakes import LOGIN_FAILURE, Behaviour, FakeAttempts, supervisor_context

pytestmark = pytest.mark.anyio
PROBE = "HW-PRB-0001"


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    root = write_files(tmp_path / "corpus", {
        ".headwater/probe.yml": probe_yml(tiers={"campaign": {"arms": ["present"],
                                                              "repetitions": 1}}),
        "docs/probes/p1.md": probe_doc(PROBE, "A probe"),
        "docs/a.md": doc("HW-A-0001", "A.\n"),
    })
    return compose_plan(load_corpus(root), tier="campaign")


def _limits(max_cost_cents: int | None) -> RunLimits:
    return RunLimits(concurrency=1, retries=0, backoff_s=0.0,
                     budgets=Budgets(max_cost_cents=max_cost_cents))


async def _invocation(batch: Path, plan: Plan, script: dict[str, Behaviour], *,
                      max_cost_cents: int | None, invocation: int,
                      in_flight_usd: Decimal = Decimal(0)) -> FakeAttempts:
    """One invocation over the batch's outstanding sessions, as run or resume starts it."""
    attempts = FakeAttempts(script)
    with Journal(batch, plan, planned=planned_sessions(plan), network="confined",
                 provider_note="Provider: a stand-in.") as journal:
        fold = journal.fold
        specs: list[SessionSpec] = [s for s in session_order(plan)
                                    if s.key not in fold.sessions
                                    or fold.sessions[s.key].outstanding]
        supervisor = Supervisor(supervisor_context(invocation), journal,
                                _limits(max_cost_cents), run_attempt=attempts)
        if in_flight_usd:  # a session in flight whose gateway has priced requests
            supervisor.spend.add(SessionKey("present", PROBE, "elsewhere"), 1, in_flight_usd)
        await supervisor.run(specs, watch_signals=False)
    return attempts


async def test_priced_requests_of_a_session_in_flight_count_before_a_session_starts(
        tmp_path: Path, plan: Plan) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    ran = await _invocation(batch, plan, {"s1": "recorded"}, max_cost_cents=5,
                            invocation=1, in_flight_usd=Decimal("0.05"))
    assert ran.ran == []  # 5 cents realized by the one in flight: the budget is spent
    stop, = [r for r in read_ledger(batch / "ledger.jsonl") if isinstance(r, BudgetStopRecord)]
    assert (stop.budget, stop.used) == ("cost", 5.0)


async def test_the_same_batch_without_those_requests_starts_the_session(
        tmp_path: Path, plan: Plan) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    ran = await _invocation(batch, plan, {"s1": "recorded"}, max_cost_cents=5, invocation=1)
    assert [key.session for key, _ in ran.ran] == ["s1"]


async def test_a_budget_stopped_session_is_rerun_by_a_resume_whose_budget_allows(
        tmp_path: Path, plan: Plan) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    await _invocation(batch, plan, {"s1": "budget-stopped"}, max_cost_cents=1, invocation=1)
    # Its first attempt spent 1 cent: a resume with the same budget starts nothing ...
    same = await _invocation(batch, plan, {"s1": "recorded"}, max_cost_cents=1, invocation=2)
    assert same.ran == []
    # ... and one with a larger budget runs it again, as its attempt 2.
    larger = await _invocation(batch, plan, {"s1": "recorded"}, max_cost_cents=10,
                               invocation=3)
    assert [(key.session, attempt) for key, attempt in larger.ran] == [("s1", 2)]


async def test_the_outcome_counts_the_sessions_whose_login_could_not_be_used(
        tmp_path: Path, plan: Plan) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    with Journal(batch, plan, planned=planned_sessions(plan), network="confined",
                 provider_note="Provider: a stand-in.") as journal:
        supervisor = Supervisor(supervisor_context(), journal, _limits(None),
                                run_attempt=FakeAttempts({"s1": "login-failure"}))
        outcome = await supervisor.run(session_order(plan), watch_signals=False)
    assert (outcome.login_failures, outcome.login_failure) == (1, LOGIN_FAILURE)
    assert outcome.outstanding == 0  # not retried: an authentication failure


async def test_a_session_its_gateway_stopped_for_the_budget_stops_the_batch(
        tmp_path: Path, plan: Plan) -> None:
    # The last session of an invocation ends budget-stopped (its gateway was refused): the
    # invocation is a budget stop (exit 3, resumable with a larger budget), not "done", even
    # with no retry and no further session whose start would have asked the budget.
    batch = tmp_path / "batch"
    batch.mkdir()
    with Journal(batch, plan, planned=planned_sessions(plan), network="confined",
                 provider_note="Provider: a stand-in.") as journal:
        supervisor = Supervisor(supervisor_context(), journal, _limits(1),
                                run_attempt=FakeAttempts({"s1": "budget-stopped"}))
        outcome = await supervisor.run(session_order(plan), watch_signals=False)
    assert (outcome.stop, outcome.budget_stopped, outcome.outstanding) == ("budget", True, 1)
    stop, = [r for r in read_ledger(batch / "ledger.jsonl") if isinstance(r, BudgetStopRecord)]
    assert (stop.budget, stop.limit, stop.used) == ("cost", 1, 1.0)
