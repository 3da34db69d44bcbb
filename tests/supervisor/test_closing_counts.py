"""Once an invocation's fan-out is over, no session of it counts as running.

Rule (docs/batch.md "status", "Stopping and resuming"): an attempt that started and never
got a final record is interrupted, never running, as soon as no runner runs it; the closing
table (the fold's statistics when the supervisor returns) says so. Here the host refuses a
write of one attempt after its ``started`` record (no final record: docs/batch.md), which
stops the batch and cancels the other attempt (written ``killed``, ``counts: false``).
Sessions are run by a stand-in for `run_attempt`; the supervisor, journal, ledger and fold
are the real ones.
"""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from campaign.batch._fold import SessionKey
from campaign.batch._journal import Journal
from campaign.batch._records import FinalRecord, StartedRecord
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from campaign.supervisor import _fanout
from campaign.supervisor._fanout import RunLimits, Supervisor
from campaign.supervisor._spec import planned_sessions
from campaign.supervisor._writes import HostWriteRefused
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files
from tests.supervisor.test_fanout_stops import _specs

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


async def run_attempt(spec: Any, attempt: int, ctx: Any, journal: Journal,
                      **_: Any) -> FinalRecord:
    """s1 sleeps until cancelled (then written killed, as the real one is); s2 has its
    workspace write refused after its started record; s3 is never reached."""
    key: SessionKey = spec.key
    ref = {"arm": key.arm, "probe": key.probe, "session": key.session,
           "repetition": int(key.session[1:]), "attempt": attempt, "invocation": 1}
    await journal.record(StartedRecord(**ref, position=0))
    if key.session == "s2":
        await anyio.sleep(0.2)
        raise HostWriteRefused("the session's workspace", OSError(errno.ENOSPC, "No space"))
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        await journal.record(FinalRecord(
            **ref, started_at="2026-12-01T00:00:00Z", state="killed",
            reason="killed: the runner stopped", retryable=True, cost_usd=None,
            cost_known=False, counts=False))
        raise
    raise AssertionError("not cancelled")


async def test_an_attempt_left_without_a_final_record_closes_interrupted_not_running(
        tmp_path: Path, plan: Plan, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fanout, "run_attempt", run_attempt)
    batch = tmp_path / "batch"
    batch.mkdir()
    with Journal(batch, plan, planned=planned_sessions(plan), network="confined",
                 provider_note="Provider: a stand-in.") as journal:
        supervisor = Supervisor(SimpleNamespace(invocation=1),  # type: ignore[arg-type]
                                journal, RunLimits(concurrency=2, retries=0, backoff_s=0.0))
        outcome = await supervisor.run(_specs(plan), watch_signals=False)
        counts = journal.fold.statistics().arms["present"]
    assert outcome.write_refused
    assert (counts.planned, counts.queued, counts.running, counts.interrupted) == (3, 1, 0, 2)
