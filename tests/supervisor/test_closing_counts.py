"""Once an invocation's fan-out is over, no session of it counts as running.

Rule (docs/batch.md "status", "Stopping and resuming"): an attempt that started and never
got a final record is interrupted, never running, as soon as no runner runs it; the closing
table (the fold's statistics when the supervisor returns) says so. Here the host refuses a
write of one attempt after its ``started`` record (no final record: docs/batch.md), which
stops the batch and cancels the other attempt (written ``killed``, ``counts: false``).
Sessions are run by `tests.fakes.FakeAttempts` (the supervisor's attempt runner); the
supervisor, journal, ledger and fold are the real ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.batch._journal import Journal
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from campaign.supervisor._fanout import RunLimits, Supervisor
from campaign.supervisor._spec import planned_sessions, session_order
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files
from tests.fakes import FakeAttempts, supervisor_context

pytestmark = pytest.mark.anyio
PROBE = "HW-PRB-0001"


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    root = write_files(tmp_path / "corpus", {
        ".headwater/probe.yml": probe_yml(tiers={"campaign": {"arms": ["present"],
                                                              "repetitions": 3}}),
        "docs/probes/p1.md": probe_doc(PROBE, "A probe"),
        "docs/a.md": doc("HW-A-0001", "A.\n"),
    })
    return compose_plan(load_corpus(root), tier="campaign")


async def test_an_attempt_left_without_a_final_record_closes_interrupted_not_running(
        tmp_path: Path, plan: Plan) -> None:
    # s1 runs until cancelled (then written killed, as the real one is); s2 has its
    # workspace write refused after its started record; s3 is never reached.
    attempts = FakeAttempts({"s1": "hang", "s2": "write-refused", "s3": "recorded"})
    batch = tmp_path / "batch"
    batch.mkdir()
    with Journal(batch, plan, planned=planned_sessions(plan), network="confined",
                 provider_note="Provider: a stand-in.") as journal:
        supervisor = Supervisor(supervisor_context(), journal,
                                RunLimits(concurrency=2, retries=0, backoff_s=0.0),
                                run_attempt=attempts)
        outcome = await supervisor.run(session_order(plan), watch_signals=False)
        counts = journal.fold.statistics().arms["present"]
    assert outcome.write_refused
    assert sorted(key.session for key, _ in attempts.ran) == ["s1", "s2"]
    assert (counts.planned, counts.queued, counts.running, counts.interrupted) == (3, 1, 0, 2)
