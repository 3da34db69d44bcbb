"""The fold: what the ledger says of each session and each arm, one record at a time.

Expected values come from the definitions: a session is finished when its last
attempt is final and not retryable (docs/batch.md "Session states"); outstanding
otherwise (never started, started with no final, or last final retryable);
every attempt's cost counts (RC-14); denominators are planned counts.
"""

from __future__ import annotations

from decimal import Decimal

from campaign.batch._fold import BatchFold, SessionKey
from campaign.batch._records import FinalRecord, InvocationRecord, StartedRecord, StoppedRecord

A = SessionKey("present", "P-1", "s1")
B = SessionKey("absent", "P-1", "s1")
C = SessionKey("present", "P-2", "s1")


def started(key: SessionKey, attempt: int = 1) -> StartedRecord:
    return StartedRecord(arm=key.arm, probe=key.probe, session=key.session, repetition=1,
                         attempt=attempt, invocation=1, position=0)


def final(key: SessionKey, state: str, *, attempt: int = 1, retryable: bool = False,
          cost: str | None = None, known: bool = True, reason: str = "why") -> FinalRecord:
    return FinalRecord(arm=key.arm, probe=key.probe, session=key.session, repetition=1,
                       attempt=attempt, invocation=1, started_at="2026-12-01T00:00:00Z",
                       state=state, reason=reason, retryable=retryable, cost_usd=cost,
                       cost_known=known)


def fold_of(*records: object) -> BatchFold:
    fold = BatchFold([(A, 1), (B, 1), (C, 1)])
    for record in records:
        fold.apply(record)  # type: ignore[arg-type]
    return fold


def test_every_planned_session_is_outstanding_before_anything_ran() -> None:
    fold = fold_of()
    assert {log.key for log in fold.outstanding()} == {A, B, C}
    assert fold.arms["present"].planned == 2 and fold.arms["absent"].planned == 1
    assert fold.arms["present"].queued == 2


def test_a_started_attempt_without_a_final_is_running_and_outstanding() -> None:
    fold = fold_of(started(A))
    assert fold.sessions[A].running and fold.sessions[A].outstanding
    assert (fold.arms["present"].running, fold.arms["present"].queued) == (1, 1)


def test_recorded_and_non_retryable_states_finish_retryable_ones_do_not() -> None:
    fold = fold_of(started(A), final(A, "recorded"),
                   started(B), final(B, "timed-out", retryable=True, known=False),
                   started(C), final(C, "refused-init"))
    assert {log.key for log in fold.outstanding()} == {B}
    present, absent = fold.arms["present"], fold.arms["absent"]
    assert (present.recorded, present.refused, present.failed, present.running) == (1, 1, 0, 0)
    assert (absent.failed, absent.cost_unknown) == (1, 1)


def test_a_retry_moves_the_session_and_counts_it_retried_once() -> None:
    fold = fold_of(started(A), final(A, "harness-error", retryable=True, cost="0.10"),
                   started(A, 2), final(A, "harness-error", attempt=2, retryable=True,
                                        cost="0.20"),
                   started(A, 3), final(A, "recorded", attempt=3, cost="0.30"))
    log = fold.sessions[A]
    assert (log.attempts, log.state, log.first_state, log.finished) == (
        3, "recorded", "harness-error", True)
    counts = fold.arms["present"]
    assert (counts.recorded, counts.failed, counts.retried) == (1, 0, 1)
    # RC-14: every attempt's cost counts, whatever its state.
    assert counts.cost_usd == Decimal("0.60") == fold.spend_usd
    assert fold.largest_attempt_usd == Decimal("0.30")


def test_statistics_are_a_copy_that_later_records_do_not_change() -> None:
    fold = fold_of(InvocationRecord(number=1, command="run", pid=9, runner="x", retries=2,
                                    max_cost_cents=500, est_session_cents=None, max_wall_s=None))
    stats = fold.statistics()
    fold.apply(started(A))
    assert stats.arms["present"].running == 0 and fold.arms["present"].running == 1
    assert (stats.max_cost_cents, stats.last_invocation_pid) == (500, 9)


def test_the_last_failures_are_kept_newest_first_and_a_stop_is_remembered() -> None:
    fold = fold_of(final(A, "no-result", retryable=True, known=False, reason="first"),
                   final(B, "truncated", retryable=True, known=False, reason="second"),
                   StoppedRecord(invocation=1, reason="signal", detail="stopped by SIGINT",
                                 outstanding=3))
    stats = fold.statistics()
    assert [f.reason for f in stats.last_failures] == ["second", "first"]
    assert stats.stopped is not None and stats.stopped.reason == "signal"


def test_a_failure_whose_session_was_then_recorded_is_no_longer_listed() -> None:
    fold = fold_of(final(A, "killed", retryable=True, known=False, reason="a"),
                   final(B, "no-result", retryable=True, known=False, reason="b"),
                   final(A, "recorded", attempt=2, cost="0.01"))
    assert [f.reason for f in fold.statistics().last_failures] == ["b"]


def test_an_attempt_the_runner_stopped_is_no_outcome_of_its_session() -> None:
    # killed with counts false: a signal or a refused write ended it, not the session. It goes
    # back to where its previous final left it (failed), or, with none, is interrupted (never
    # queued: docs/batch.md "status"), its cost unknown (RC-14).
    stopped = FinalRecord(arm=A.arm, probe=A.probe, session=A.session, repetition=1, attempt=1,
                          invocation=1, started_at="2026-12-01T00:00:00Z", state="killed",
                          reason="killed: the runner stopped (a signal) while the session ran",
                          retryable=True, cost_usd=None, cost_known=False, counts=False)
    fold = fold_of(started(A), stopped, started(B), final(B, "harness-error", retryable=True,
                                                        cost="0.02"),
                   started(B, 2), stopped.model_copy(update={"arm": B.arm, "attempt": 2}))
    present, absent = fold.arms["present"], fold.arms["absent"]
    assert (present.queued, present.interrupted, present.failed, present.running) == (
        1, 1, 0, 0)
    assert (absent.queued, absent.interrupted, absent.failed, absent.running) == (0, 0, 1, 0)
    assert fold.sessions[A].interrupted and fold.sessions[A].outstanding
    assert fold.sessions[B].state == "harness-error" and fold.sessions[B].interrupted
    assert fold.cost_unknown == 2 and fold.spend_usd == Decimal("0.02")
    assert [f.state for f in fold.statistics().last_failures] == ["harness-error"]


def test_a_session_not_planned_is_added_when_seen() -> None:
    fold = BatchFold()
    key = SessionKey("present", "P-1", "r1")
    fold.apply(started(key))
    fold.apply(final(key, "recorded"))
    assert fold.arms["present"].planned == 1 and fold.arms["present"].recorded == 1


def invocation(number: int) -> InvocationRecord:
    return InvocationRecord(number=number, command="resume", pid=9, runner="x", retries=2,
                            max_cost_cents=None, est_session_cents=None, max_wall_s=None)


def test_an_attempt_running_when_a_new_invocation_begins_was_interrupted() -> None:
    # One runner holds a batch at a time: a new invocation means the old runner died, and
    # the attempt it ran may have spent (RC-14: its cost is unknown, the spend a lower bound).
    fold = BatchFold([(A, 1), (B, 1), (C, 1)])
    for record in (invocation(1), started(A), final(A, "harness-error", retryable=True,
                                                      cost="0.10"),
                   started(A, 2), started(B)):
        assert fold.apply(record) == []
    assert fold.apply(invocation(2)) == [(A, 2), (B, 1)]
    log = fold.sessions[A]
    assert (log.running, log.interrupted, log.outstanding) == (False, True, True)
    present, absent = fold.arms["present"], fold.arms["absent"]
    # A goes back to where its last final left it (failed); B, never final, is
    # interrupted (not queued: docs/batch.md "status").
    assert (present.running, present.failed, present.cost_unknown) == (0, 1, 1)
    assert (absent.running, absent.queued, absent.interrupted, absent.cost_unknown) == (
        0, 0, 1, 1)
    assert fold.cost_unknown == 2 and fold.spend_usd == Decimal("0.10")
    fold.apply(started(A, 3))
    assert (fold.sessions[A].interrupted, present.running, present.failed) == (False, 1, 0)


def test_when_nobody_holds_the_batch_its_running_attempts_were_interrupted() -> None:
    fold = fold_of(started(A), started(C), final(C, "recorded"))
    assert fold.runner_gone() == [(A, 1)]
    assert fold.runner_gone() == []  # once
    assert (fold.arms["present"].running, fold.arms["present"].cost_unknown) == (0, 1)
    assert fold.sessions[A].interrupted and fold.sessions[A].outstanding


def test_the_budget_is_the_last_batch_invocations_and_a_record_into_it_keeps_it() -> None:
    # resume applies the batch's budget; a `record` of one session into the batch has none of
    # its own, so status must not then say the batch has no budget.
    fold = BatchFold([(A, 1)])
    for number, command, cents in ((1, "run", 5), (2, "record", None)):
        fold.apply(InvocationRecord(number=number, command=command, pid=9, runner="x",
                                    retries=0, max_cost_cents=cents, est_session_cents=None,
                                    max_wall_s=None))
    assert fold.statistics().max_cost_cents == 5
    fold.apply(InvocationRecord(number=3, command="resume", pid=9, runner="x", retries=2,
                                max_cost_cents=None, est_session_cents=None, max_wall_s=None))
    assert fold.statistics().max_cost_cents is None  # a resume sets the budget it ran with


def test_an_attempt_that_never_got_a_final_record_is_interrupted_until_the_next_starts() -> None:
    # docs/batch.md "status": interrupted, never queued; the next attempt moves it to running,
    # its final record to where that leaves it.
    fold = fold_of(started(A))
    fold.runner_gone()
    counts = fold.arms["present"]
    assert (counts.queued, counts.running, counts.interrupted) == (1, 0, 1)
    fold.apply(started(A, 2))
    assert (counts.queued, counts.running, counts.interrupted) == (1, 1, 0)
    fold.apply(final(A, "recorded", attempt=2, cost="0.01"))
    assert (counts.queued, counts.running, counts.interrupted, counts.recorded) == (1, 0, 0, 1)


def test_an_uncontained_session_is_finished_failed_and_its_cost_counts() -> None:
    """docs/batch.md "Session states": ``uncontained`` is not retryable (resume leaves it: the
    host is at fault) and counts as an outcome of its session, a failure, with its cost."""
    fold = fold_of(started(A), final(A, "uncontained", cost="0.25"))
    log = fold.sessions[A]
    assert (log.finished, log.outstanding, log.state) == (True, False, "uncontained")
    assert A not in {log.key for log in fold.outstanding()}
    present = fold.arms["present"]
    assert (present.recorded, present.refused, present.failed) == (0, 0, 1)
    assert present.cost_usd == Decimal("0.25")
