"""What a batch shows: plain lines off a terminal, tables with planned denominators, status."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from campaign.batch._config import BatchConfig, BatchFacts, OrderFacts, write_config, write_plan
from campaign.batch._fold import ArmCounts, BatchFold, SessionKey
from campaign.batch._ledger import Ledger
from campaign.batch._lock import BatchLock
from campaign.batch._options import BatchOptions
from campaign.batch._records import FinalRecord, InvocationRecord, StartedRecord, StoppedRecord
from campaign.cli._status import status_data
from campaign.cli._view import LiveView, arms_table, duration, usd
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import compose_plan
from campaign.supervisor import LiveStatistics
from tests.campaign.corpora import probe_yml, write_files


def _final(key: SessionKey, state: str, attempt: int = 1, cost: str | None = "0.01",
           retryable: bool = False) -> FinalRecord:
    return FinalRecord(arm=key.arm, probe=key.probe, session=key.session, repetition=1,
                       attempt=attempt, invocation=1, started_at="2026-12-01T00:00:00Z",
                       state=state, reason=f"{state}: why", retryable=retryable, cost_usd=cost,
                       cost_known=cost is not None)


def _live(fold: BatchFold) -> LiveStatistics:
    return LiveStatistics(batch=fold.statistics(), in_flight=(), elapsed_s=60.0, finals_now=2,
                          retries_now=0, outstanding=len(fold.outstanding()), stopping=None,
                          max_cost_cents=None, max_wall_s=None)


def test_off_a_terminal_each_ended_attempt_is_one_line_counted_over_the_planned_batch() -> None:
    a, b = SessionKey("present", "P-1", "s1"), SessionKey("absent", "P-1", "s1")
    fold = BatchFold([(a, 1), (b, 1), (SessionKey("present", "P-2", "s1"), 1),
                      (SessionKey("absent", "P-2", "s1"), 1)])
    out = io.StringIO()
    with LiveView(stream=out) as view:
        for record in (_final(a, "recorded"), _final(b, "no-result", cost=None, retryable=True)):
            fold.apply(record)
            view.attempt_ended(record, _live(fold))
        view.note("absent P-1 s1: no-result, worth another attempt: retry 1 of 2 in 9 s")
    assert out.getvalue().splitlines() == [
        "[1/4] present P-1 s1 attempt 1: recorded",
        "[2/4] absent P-1 s1 attempt 1: no-result (no-result: why)",
        "absent P-1 s1: no-result, worth another attempt: retry 1 of 2 in 9 s",
    ]


def test_the_arms_table_counts_out_of_planned_and_marks_a_lower_bound() -> None:
    arms = {"present": ArmCounts(planned=8, recorded=3, refused=1, failed=1, running=2,
                                 retried=1, cost_usd=Decimal("0.1234"), cost_unknown=1)}
    out = io.StringIO()
    from rich.console import Console
    Console(file=out, width=200).print(arms_table(arms))
    row = next(line for line in out.getvalue().splitlines() if "present" in line)
    cells = row.split()
    # queued (8 - 5 final - 2 running), running, interrupted, recorded of planned, refused,
    # failed, retried
    assert cells == ["present", "1", "2", "0", "3/8", "1", "1", "1", ">=", "$0.1234"]


def test_an_interrupted_session_is_counted_interrupted_never_queued() -> None:
    # docs/batch.md "status": queued is never started; an attempt that started and never got
    # a final record of its own is interrupted.
    arms = {"present": ArmCounts(planned=8, recorded=3, running=1, interrupted=2)}
    out = io.StringIO()
    from rich.console import Console
    Console(file=out, width=200).print(arms_table(arms))
    row = next(line for line in out.getvalue().splitlines() if "present" in line)
    assert row.split()[1:5] == ["2", "1", "2", "3/8"]


def test_the_arms_table_fits_an_80_column_terminal_uncut() -> None:
    counts = ArmCounts(planned=9999, recorded=9999, refused=9999, failed=9999, running=999,
                       retried=9999, cost_usd=Decimal("12.3456"), cost_unknown=1,
                       interrupted=9999)
    out = io.StringIO()
    from rich.console import Console
    Console(file=out, width=80).print(arms_table({"no-claude-md": counts, "present": counts}))
    text = out.getvalue()
    assert "\u2026" not in text and max(map(len, text.splitlines())) <= 80
    first, second = text.splitlines()[:2]
    assert (first.split(), second.split()[3]) == (["inter-"], "rupted")
    for header in ("arm", "queued", "running", "recorded", "refused", "failed", "retried",
                   "spend"):
        assert header in second.split()
    assert "no-claude-md" in text and ">= $12.3456" in text


@pytest.mark.parametrize(("seconds", "text"), [(None, "-"), (5, "5s"), (125, "2m05s"),
                                               (3725, "1h02m")])
def test_durations_read_as_people_say_them(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


def test_usd_is_four_places_and_says_when_it_is_a_lower_bound() -> None:
    assert (usd(Decimal("0.5"), lower_bound=False), usd(Decimal(0), lower_bound=True)) == (
        "$0.5000", ">= $0.0000")


def test_status_of_a_stopped_batch_and_of_one_that_is_held(tmp_path: Path) -> None:
    corpus = load_corpus(write_files(tmp_path / "corpus", {
        ".headwater/probe.yml": probe_yml(),
        "docs/probes/p.md": "---\nid: HW-PRB-001\ntitle: P\nanswers: []\nexamines: []\n---\n\n"
                            "## Task\n\nGo.\n"}))
    plan = compose_plan(corpus, tier="campaign")
    batch = tmp_path / "batch"
    batch.mkdir()
    options = BatchOptions(command="run", corpus=str(corpus.root), tier="campaign", seed=0,
                           harness_path="/h", max_cost_cents=500)
    write_config(batch, BatchConfig(options=options, facts=BatchFacts(
        runner="r", harness_version="v", network="host", network_note="n", provider_note="p",
        arms={}, order=OrderFacts(algorithm="a", seed=0))))
    write_plan(batch, plan)
    key = SessionKey("present", "HW-PRB-001", "s1")
    with Ledger(batch / "ledger.jsonl") as ledger:
        ledger.append(InvocationRecord(number=1, command="run", pid=4242, runner="r", retries=2,
                                       max_cost_cents=500, est_session_cents=None,
                                       max_wall_s=None))
        ledger.append(StartedRecord(arm="present", probe="HW-PRB-001", session="s1",
                                    repetition=1, attempt=1, invocation=1, position=0))
        ledger.append(_final(key, "timed-out", cost=None, retryable=True))
        ledger.append(StartedRecord(arm="absent", probe="HW-PRB-001", session="s1",
                                    repetition=1, attempt=1, invocation=1, position=1))
        ledger.append(StoppedRecord(invocation=1, reason="signal", detail="stopped by SIGINT",
                                    outstanding=4))
    data = status_data(batch)
    assert (data["running"], data["pid"], data["outstanding"]) == (False, None, 4)
    assert data["interrupted"] == [{"arm": "absent", "probe": "HW-PRB-001", "session": "s1",
                                    "attempt": 1}]
    assert data["arms"]["present"]["planned"] == 2 and data["arms"]["present"]["failed"] == 1
    assert data["stopped"]["reason"] == "signal" and data["max_cost_cents"] == 500
    assert data["last_failures"][0]["state"] == "timed-out"
    json.dumps(data)  # the --json form is plain JSON
    with BatchLock(batch):
        held = status_data(batch)
    assert (held["running"], held["pid"], held["interrupted"]) == (True, __import__("os").getpid(),
                                                                  [])
    assert held["in_flight"] == data["interrupted"]

    # show of a planned session with no attempt says so, not "no session (some it has: it)".
    def show(*key: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "campaign", "show", str(batch), *key],
                              capture_output=True, text=True, check=False)

    planned = show("present", "HW-PRB-001", "s2")
    assert planned.returncode == 2 and "is planned but has no attempt yet" in planned.stderr
    missing = show("present", "HW-PRB-999", "s1")
    assert missing.returncode == 2 and "has no session present HW-PRB-999 s1" in missing.stderr


def test_status_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    test_status_of_a_stopped_batch_and_of_one_that_is_held(tmp_path)
    done = subprocess.run(
        f"{sys.executable} -m campaign status {tmp_path / 'batch'} | true; "
        "echo status=${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
        capture_output=True, text=True, timeout=60, check=False)
    assert "status=0" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_why_the_batch_stops_is_a_line_of_its_own_whole_at_80_columns() -> None:
    from rich.console import Console

    from campaign.cli._view import live_renderable

    fold = BatchFold([(SessionKey("present", "P-1", "s1"), 1)])
    why = "stopped by SIGINT; the sessions in flight end first"
    live = dataclasses.replace(_live(fold), stopping=why)
    out = io.StringIO()
    Console(file=out, width=80).print(live_renderable(live, 0.0))
    assert f"stopping: {why}" in out.getvalue().splitlines(), out.getvalue()


def _batch_with_versions(tmp_path: Path, versions: list[str | None]) -> Path:
    """A stopped batch whose present sessions' final records name these Claude Code versions."""
    corpus = load_corpus(write_files(tmp_path / "corpus", {
        ".headwater/probe.yml": probe_yml(),
        "docs/probes/p.md": "---\nid: HW-PRB-001\ntitle: P\nanswers: []\nexamines: []\n---\n\n"
                            "## Task\n\nGo.\n"}))
    plan = compose_plan(corpus, tier="campaign")
    batch = tmp_path / "batch"
    batch.mkdir()
    options = BatchOptions(command="run", corpus=str(corpus.root), tier="campaign", seed=0,
                           harness_path="/h")
    write_config(batch, BatchConfig(options=options, facts=BatchFacts(
        runner="r", harness_version="v", network="host", network_note="n", provider_note="p",
        arms={}, order=OrderFacts(algorithm="a", seed=0))))
    write_plan(batch, plan)
    with Ledger(batch / "ledger.jsonl") as ledger:
        ledger.append(InvocationRecord(number=1, command="run", pid=4242, runner="r", retries=2,
                                       max_cost_cents=None, est_session_cents=None,
                                       max_wall_s=None))
        for attempt, version in enumerate(versions, start=1):
            key = SessionKey("present", "HW-PRB-001", "s1")
            ledger.append(StartedRecord(arm="present", probe="HW-PRB-001", session="s1",
                                        repetition=1, attempt=attempt, invocation=1,
                                        position=0))
            ledger.append(_final(key, "no-result", attempt=attempt, cost=None,
                                 retryable=True).model_copy(
                update={"claude_code_version": version}))
        ledger.append(StoppedRecord(invocation=1, reason="done", detail="d", outstanding=2))
    return batch


def _status_text(batch: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "campaign", "status", str(batch)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_status_says_when_the_sessions_ran_a_release_the_census_does_not_cover(
        tmp_path: Path) -> None:
    from recorder import COVERED_RELEASES, PINNED_RELEASE
    batch = _batch_with_versions(tmp_path, [PINNED_RELEASE, "2.1.999", "2.1.999", "odd\nline"])
    data = status_data(batch)
    assert data["harness_versions"] == {
        PINNED_RELEASE: {"attempts": 1, "coverage": "covered"},
        "2.1.999": {"attempts": 2, "coverage": "uncovered"},
        "odd\nline": {"attempts": 1, "coverage": "unreadable"}}
    text = _status_text(batch)
    (line,) = [x for x in text.splitlines() if x.startswith("Claude Code not covered")]
    assert "2.1.999 (2 attempts)" in line and PINNED_RELEASE + " (" not in line
    assert "odd\\nline (1 attempt, not a release number)" in line  # escaped: one line
    assert f"the census covers {', '.join(COVERED_RELEASES)}" in line
    assert "the recorder was not checked against what those sessions printed" in line


def test_status_of_a_batch_on_covered_releases_adds_no_line(tmp_path: Path) -> None:
    from recorder import PINNED_RELEASE
    batch = _batch_with_versions(tmp_path, [PINNED_RELEASE, "2.1.197", None])
    assert "not covered" not in _status_text(batch)
    assert status_data(batch)["harness_versions"] == {
        "2.1.197": {"attempts": 1, "coverage": "covered"},
        PINNED_RELEASE: {"attempts": 1, "coverage": "covered"}}


@pytest.mark.parametrize(("fmt", "attempts"), [("format1", 4), ("format2", 5)])
def test_status_of_an_older_batch_reads_its_harness_versions(fmt: str, attempts: int) -> None:
    """The fixture batches of earlier formats ran 2.1.197, a covered release (read only): the
    attempts are their ledgers' final records naming it (counted with grep)."""
    batch = Path(__file__).resolve().parents[1] / "fixtures" / "batches" / fmt / "batch"
    assert status_data(batch)["harness_versions"] == {
        "2.1.197": {"attempts": attempts, "coverage": "covered"}}
