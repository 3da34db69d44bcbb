"""What the ``stopped`` record says an invocation did (docs/batch.md, "The ledger").

Rules: an invocation that ends because the runner hit an unexpected error
says ``error`` and names it, never ``done``; a ``done`` invocation that leaves
sessions outstanding (retries spent) says how many, and that ``resume`` runs
them. Sessions here are run by `tests.fakes.FakeAttempts`, passed to the
supervisor as its attempt runner, which writes the records a real attempt
writes; everything else is the real supervisor, journal and ledger.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.batch._journal import Journal
from campaign.batch._ledger import read_ledger
from campaign.batch._records import StoppedRecord
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from campaign.supervisor._fanout import RunLimits, Supervisor
from campaign.supervisor._spec import planned_sessions, session_order
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files
from tests.fakes import Behaviour, FakeAttempts, supervisor_context

pytestmark = pytest.mark.anyio
PROBE = "HW-PRB-0001"


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    root = write_files(tmp_path / "corpus", {
        ".headwater/probe.yml": probe_yml(tiers={"campaign": {"arms": ["present"],
                                                              "repetitions": 2}}),
        "docs/probes/p1.md": probe_doc(PROBE, "A probe"),
        "docs/a.md": doc("HW-A-0001", "A.\n"),
    })
    return compose_plan(load_corpus(root), tier="campaign")


async def _run(tmp_path: Path, plan: Plan, script: dict[str, Behaviour]) -> StoppedRecord:
    batch = tmp_path / "batch"
    batch.mkdir()
    with Journal(batch, plan, planned=planned_sessions(plan), network="confined",
                 provider_note="Provider: a stand-in.") as journal:
        supervisor = Supervisor(supervisor_context(), journal,
                                RunLimits(concurrency=1, retries=0, backoff_s=0.0),
                                run_attempt=FakeAttempts(script))
        try:
            await supervisor.run(session_order(plan), watch_signals=False)
        except BaseException as exc:
            assert "a bug in the runner" in repr(exc)
    stopped = [r for r in read_ledger(batch / "ledger.jsonl") if isinstance(r, StoppedRecord)]
    assert len(stopped) == 1
    return stopped[0]


async def test_an_unexpected_error_is_said_as_such_never_done(
        tmp_path: Path, plan: Plan) -> None:
    stopped = await _run(tmp_path, plan, {"s1": "recorded", "s2": "bug"})
    assert stopped.reason == "error"
    assert "unexpected error" in stopped.detail and "a bug in the runner" in stopped.detail
    assert stopped.outstanding == 1


async def test_done_with_retries_spent_says_how_many_are_outstanding(
        tmp_path: Path, plan: Plan) -> None:
    stopped = await _run(tmp_path, plan, {"s1": "recorded", "s2": "harness-error"})
    assert (stopped.reason, stopped.outstanding) == ("done", 1)
    assert "1 is still outstanding" in stopped.detail and "resume" in stopped.detail


async def test_done_with_nothing_outstanding_says_finished(
        tmp_path: Path, plan: Plan) -> None:
    stopped = await _run(tmp_path, plan, {"s1": "recorded", "s2": "recorded"})
    assert (stopped.reason, stopped.outstanding) == ("done", 0)
    assert "outstanding" not in stopped.detail
