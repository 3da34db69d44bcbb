"""A batch still running, one whose runner died, one stopped: counted as they stand, named."""

from __future__ import annotations

import os
from pathlib import Path

from campaign.batch import BudgetStopRecord, read_batch
from campaign.batch._lock import BatchLock
from campaign.report import build_report
from campaign.report._text import standing_lines
from tests.report.batches import HandBatch

P = "HW-PRB-0001"
PROBES: dict[str, tuple[list[str], list[str]]] = {P: (["yes"], [])}


def _batch(root: Path) -> HandBatch:
    b = HandBatch(root, PROBES, repetitions=3)
    b.attempt("present", P, 1, answer="yes", calls=[])
    b.attempt("absent", P, 1, answer="yes", calls=[])
    b.started("present", P, 2, at=5)  # no final record: running, or its runner died
    return b


def test_a_running_batch_counts_what_is_final_and_says_it_runs(tmp_path: Path) -> None:
    b = _batch(tmp_path)
    with (b.ledger.path.open("ab") as fp):
        fp.write(b'{"kind":"final","arm":"absent"')  # a line being appended right now
    with BatchLock(b.path):
        report = build_report([b.path])
    (batch,) = report.batches
    assert (batch.running, batch.pid) == (True, os.getpid())
    cell = report.probes[0].cells[0]
    assert (cell.recorded, cell.running, cell.interrupted, cell.not_started) == (1, 1, 0, 1)
    assert ("present", P, "s2", "running") in {(o.arm, o.probe, o.session, o.why)
                                               for o in batch.outstanding}
    b.close()


def test_a_batch_whose_runner_died_calls_its_started_sessions_interrupted(tmp_path: Path) -> None:
    report = build_report([_batch(tmp_path).close()])
    cell = report.probes[0].cells[0]
    assert (cell.running, cell.interrupted) == (0, 1)
    # The interrupted attempt may have spent: its cost is unknown, the figure a lower bound.
    assert cell.cost.unknown_attempts == 1
    (batch,) = report.batches
    assert batch.running is False and batch.stopped is None
    assert {o.why for o in batch.outstanding} == {"interrupted", "not started"}


def test_a_stopped_batch_names_every_outstanding_session(tmp_path: Path) -> None:
    b = _batch(tmp_path)
    b.attempt("absent", P, 2, state="killed", retryable=True, cost=None, known=False)
    b.stop(reason="signal", detail="stopped by SIGINT", outstanding=4)
    report = build_report([b.close()])
    (batch,) = report.batches
    assert batch.stopped == ("signal", "stopped by SIGINT")
    assert [(o.arm, o.session, o.why) for o in batch.outstanding] == [
        ("absent", "s2", "killed (worth another attempt)"), ("absent", "s3", "not started"),
        ("present", "s2", "interrupted"), ("present", "s3", "not started")]
    absent = report.probes[0].cells[1]
    assert (absent.states["killed"], absent.cost.unknown_attempts) == (1, 1)


def test_an_attempt_interrupted_after_an_earlier_final_leaves_the_session_where_it_stood(
        tmp_path: Path) -> None:
    """The last final record is the last word on a session until a new one lands: attempt 1
    timed out, attempt 2 began and its runner died, so the session is counted timed-out (a
    failure) by the report exactly as by ``status``, not running or interrupted."""
    b = HandBatch(tmp_path, PROBES, repetitions=1)
    b.attempt("present", P, 1, answer="yes", calls=[])
    b.attempt("absent", P, 1, state="timed-out", cost=None, known=False, retryable=True)
    b.started("absent", P, 1, attempt=2, at=5)
    path = b.close()
    report = build_report([path])
    absent = report.probes[0].cells[1]
    assert (absent.states["timed-out"], absent.running, absent.interrupted, absent.final) == (
        1, 0, 0, 1)
    summary = {arm.column: arm for arm in report.arms}["absent"]
    assert (summary.failed, summary.running, summary.not_started) == (1, 0, 0)
    counts = read_batch(path).fold.statistics().arms["absent"]
    assert (counts.failed, counts.running, counts.interrupted) == (1, 0, 0)


def test_the_resume_it_names_has_a_budget_that_lets_a_session_start(tmp_path: Path) -> None:
    # docs/batch.md "Budgets": a resume starts a session only while spent + one projection
    # (the largest attempt so far) stays within the budget. 2.25 cents spent, the largest
    # attempt 1.25: a plain resume under the run's 3 cents starts nothing (3.50 > 3), so the
    # command named must carry the least whole budget that does, 4.
    b = HandBatch(tmp_path, PROBES, repetitions=3, max_cost_cents=3)
    b.attempt("present", P, 1, answer="yes", calls=[], cost="0.0125")
    b.attempt("absent", P, 1, answer="yes", calls=[], cost="0.01")
    b.stop(reason="budget", detail="the cost budget could be passed", outstanding=4)
    assert _finish(b) == (f"headwater-campaign resume {b.path} --max-cost-cents 4 (or more): "
                          "2.25 cents spent and 1.25 cents projected for the next session "
                          "would pass the batch's cost budget of 3 cents, so a resume without "
                          "a larger budget starts nothing")
    # and without a budget, the plain command
    plain = _batch(tmp_path / "other")
    assert _finish(plain) == f"headwater-campaign resume {plain.path}"


def _finish(b: HandBatch) -> str:
    """What the report's standing says to run to finish ``b`` (closed here)."""
    (batch,) = build_report([b.close()]).batches
    (line,) = [x for x in standing_lines(batch) if x.startswith("finish them with: ")]
    return line.removeprefix("finish them with: ")


def test_after_a_hard_wall_stop_the_resume_it_names_changes_the_wall(tmp_path: Path) -> None:
    # docs/batch.md "Budgets": --max-wall and --hard-wall are recorded, so a plain resume runs
    # with the same wall and cancels again whatever runs past it; the command named must
    # change the wall (or drop the hard wall), not repeat it.
    b = HandBatch(tmp_path, PROBES, repetitions=3, hard_wall_s=0.6)
    b.attempt("present", P, 1, state="killed", retryable=True, cost=None, known=False)
    b.ledger.append(BudgetStopRecord(invocation=1, budget="wall", limit=0.6, used=0.6,
                                     projection=0.0, in_flight=1))
    b.stop(reason="budget", detail="the wall-clock budget is spent", outstanding=6)
    assert _finish(b) == (f"headwater-campaign resume {b.path} --max-wall D (longer than a "
                          "session takes) or --no-hard-wall: the recorded wall-clock budget "
                          "of 0.6 s with --hard-wall cancelled the sessions still running, "
                          "and a plain resume runs with the same wall")


def test_a_batch_made_by_record_is_finished_with_record_not_resume(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, PROBES, repetitions=3, command="record")
    b.attempt("present", P, 1, state="timed-out", retryable=True, cost=None, known=False)
    assert _finish(b) == (f"headwater-campaign record --batch-dir {b.path} --probe ID --arm "
                          "ARM: a batch made by `record` takes one session at a time, and "
                          "`resume` refuses it")
