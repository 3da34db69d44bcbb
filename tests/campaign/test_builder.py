"""The incremental transcript of an arm: the RC-14..RC-16 figures from hand-built records.

Expected values come from the rules: cost_cents = ceiling(100 x the sum of every
attempt's cost), unknown costs adding nothing and named (RC-14); one row per
session with its last state, an event only for recorded ones (RC-15, RC-16);
a batch with sessions outstanding says so in the prose.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.batch._builder import ArmTranscript
from campaign.batch._fold import SessionKey
from campaign.batch._journal import Journal
from campaign.batch._records import FinalRecord, StartedRecord
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from recorder.transcript import parse_transcript
from tests.campaign.corpora import probe_yml, write_files

NOTE = "Provider: scripted. A test double."


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    files = {".headwater/probe.yml": probe_yml()}
    for n in (1, 2):
        files[f"docs/probes/p{n}.md"] = (f"---\nid: HW-PRB-00{n}\ntitle: Probe {n}\n"
                                         "answers: [yes]\nexamines: []\n---\n\n## Task\n\nGo.\n")
    write_files(tmp_path / "corpus", files)
    return compose_plan(load_corpus(tmp_path / "corpus"), tier="campaign")


def _started(probe: str, session: str, attempt: int, at: str) -> StartedRecord:
    return StartedRecord(arm="present", probe=probe, session=session, repetition=1,
                         attempt=attempt, invocation=1, position=0, at=at)


def _final(probe: str, session: str, attempt: int, state: str, cost: str | None, *,
           event: bool = False, retryable: bool = False) -> FinalRecord:
    return FinalRecord(
        arm="present", probe=probe, session=session, repetition=1, attempt=attempt,
        invocation=1, started_at="2026-12-01T00:00:00Z", state=state, reason=state,
        retryable=retryable, cost_usd=cost, cost_known=cost is not None or state in (
            "refused-seal", "refused-confinement"),
        served_model="claude-x-1" if event else None,
        event={"probe": probe, "session": session, "calls": [], "answer": "yes"} if event
        else None)


def _planned(plan: Plan) -> list[tuple[SessionKey, int]]:
    return [(SessionKey(arm, p.id, f"s{rep}"), rep) for rep in (1, 2) for p in plan.probes
            for arm in plan.arms]


async def _feed(journal: Journal, records: list[object]) -> None:
    for record in records:
        await journal.record(record)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_an_arms_transcript_from_its_records(plan: Plan, tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    records: list[object] = [
        _started("HW-PRB-001", "s1", 1, "2026-12-01T00:00:05Z"),
        _final("HW-PRB-001", "s1", 1, "harness-error", "0.0033333", retryable=True),
        _started("HW-PRB-001", "s1", 2, "2026-12-01T00:00:09Z"),
        _final("HW-PRB-001", "s1", 2, "recorded", "0.0033333", event=True),
        _started("HW-PRB-002", "s1", 1, "2026-12-01T00:00:01Z"),
        _final("HW-PRB-002", "s1", 1, "timed-out", None, retryable=True),
        _started("HW-PRB-002", "s2", 1, "2026-12-01T00:00:20Z"),
        _final("HW-PRB-002", "s2", 1, "refused-seal", None),
    ]
    with Journal(batch, plan, planned=_planned(plan), network="host",
                 provider_note=NOTE) as journal:
        await _feed(journal, records)
        await journal.render(["present"])
    text = (batch / "transcripts" / "present.md").read_text()
    t = parse_transcript(text)
    # Every attempt's cost counts, summed before one ceiling: 2 x 0.0033333 = 0.67 cents -> 1.
    assert t.identity.cost_cents == 1
    assert t.identity.at == "2026-12-01T00:00:01Z"  # the first session's start
    assert t.identity.served_version == "claude-x-1"
    assert [(r.probe, r.session, r.state) for r in t.sessions] == [
        ("HW-PRB-001", "s1", "recorded"), ("HW-PRB-002", "s1", "timed-out"),
        ("HW-PRB-002", "s2", "refused-seal")]
    assert [(e.probe, e.session, e.answer) for e in t.events] == [("HW-PRB-001", "s1", "yes")]
    # The timed-out attempt's cost is unknown and named; the refused seal spent nothing.
    assert "HW-PRB-002/s1 attempt 1" in t.prose and "HW-PRB-002/s2 attempt" not in t.prose
    assert "lower bound" in t.prose
    # 4 planned for the arm (2 probes x 2 repetitions): s1 of p2 is retryable, s2 of p1 never ran.
    assert "This batch is incomplete: 2 of the 4 planned sessions of this arm" in t.prose
    assert NOTE in t.prose


@pytest.mark.anyio
async def test_a_journal_opened_on_a_ledger_builds_what_the_live_journal_built(
    plan: Plan, tmp_path: Path
) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    records: list[object] = [_started("HW-PRB-001", "s1", 1, "2026-12-01T00:00:05Z"),
                             _final("HW-PRB-001", "s1", 1, "recorded", "0.5", event=True)]
    path = batch / "transcripts" / "present.md"
    with Journal(batch, plan, planned=_planned(plan), network="host",
                 provider_note=NOTE) as live:
        await _feed(live, records)
        await live.render(["present"])
        before = path.read_text()
    path.unlink()
    with Journal(batch, plan, planned=_planned(plan), network="host",
                 provider_note=NOTE) as reopened:
        await reopened.render(["present"])
    assert path.read_text() == before
    assert [e.session for e in parse_transcript(before).events] == ["s1"]


@pytest.mark.anyio
async def test_render_writes_only_the_arms_that_changed(plan: Plan, tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    batch.mkdir()
    with Journal(batch, plan, planned=_planned(plan), network="host",
                 provider_note=NOTE) as journal:
        await journal.render()
        first = {p.name: p.stat().st_mtime_ns for p in (batch / "transcripts").iterdir()}
        await _feed(journal, [_started("HW-PRB-001", "s1", 1, "2026-12-01T00:00:05Z")])
        await journal.render()
        second = {p.name: p.stat().st_mtime_ns for p in (batch / "transcripts").iterdir()}
    assert set(first) == {"present.md", "absent.md"}
    assert second["absent.md"] == first["absent.md"]
    assert second["present.md"] != first["present.md"]


@pytest.mark.anyio
async def test_a_sessions_later_final_replaces_its_event_in_the_transcript(
    plan: Plan, tmp_path: Path
) -> None:
    """The written transcript follows each session's last final record: a later final that
    is not recorded takes its event out (the spool's items: tests/recorder/test_streamed.py)."""
    batch = tmp_path / "batch"
    batch.mkdir()
    path = batch / "transcripts" / "present.md"
    with Journal(batch, plan, planned=_planned(plan), network="host",
                 provider_note=NOTE) as journal:
        await _feed(journal, [_final("HW-PRB-001", "s1", 1, "recorded", "0.5", event=True),
                              _final("HW-PRB-002", "s1", 1, "recorded", "0.5", event=True)])
        await journal.render(["present"])
        assert [e.probe for e in parse_transcript(path.read_text()).events] == [
            "HW-PRB-001", "HW-PRB-002"]
        await _feed(journal, [_final("HW-PRB-001", "s1", 2, "timed-out", None)])
        await journal.render(["present"])
        after = parse_transcript(path.read_text())
    assert [e.probe for e in after.events] == ["HW-PRB-002"]
    assert [(r.probe, r.state) for r in after.sessions][:1] == [("HW-PRB-001", "timed-out")]


@pytest.mark.anyio
async def test_render_takes_the_events_the_journal_was_handed_not_the_ledgers(
        plan: Plan, tmp_path: Path) -> None:
    """The event goes from its final record to the arm's spool: no render reads the ledger
    back (the ledger's lines are made unreadable after the appends, with their length kept)."""
    batch = tmp_path / "batch"
    batch.mkdir()
    with Journal(batch, plan, planned=_planned(plan), network="host",
                 provider_note=NOTE) as journal:
        await _feed(journal, [_started("HW-PRB-001", "s1", 1, "2026-12-01T00:00:05Z"),
                              _final("HW-PRB-001", "s1", 1, "recorded", "0.01", event=True)])
        assert len(journal.arms["present"].pending) == 1
        ledger = batch / "ledger.jsonl"
        ledger.write_bytes(b"x" * (ledger.stat().st_size - 1) + b"\n")
        await journal.render(["present"])
        assert journal.arms["present"].pending == {}  # the spool holds it now
        await journal.render(["present"])  # and a later render finds it there
    events = parse_transcript((batch / "transcripts" / "present.md").read_text()).events
    assert [(e.probe, e.session, e.answer) for e in events] == [("HW-PRB-001", "s1", "yes")]


def test_a_later_final_lets_go_of_the_event_it_replaces(plan: Plan) -> None:
    """A session's event waits until a spool takes it; its later final drops it (one event
    per session is ever pending), and a spool that took it clears it."""
    builder = ArmTranscript(plan, "present", network="host", provider_note=NOTE)
    builder.final(_final("HW-PRB-001", "s1", 1, "recorded", "0.01", event=True), 100)
    assert list(builder.pending) == [100]
    builder.final(_final("HW-PRB-001", "s1", 2, "harness-error", "0.01", retryable=True), 200)
    assert builder.pending == {}
    builder.final(_final("HW-PRB-001", "s1", 3, "recorded", "0.01", event=True), 300)
    builder.final(_final("HW-PRB-002", "s1", 1, "recorded", "0.01", event=True), 400)
    builder.spooled([300])
    assert list(builder.pending) == [400]
    assert builder.freeze().event_at(400).probe == "HW-PRB-002"
    with pytest.raises(KeyError, match="offset 300"):
        builder.freeze().event_at(300)
