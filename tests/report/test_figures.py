"""The report's figures from a hand-built ledger, against the definitions (definitions.py).

The ledger (scenario.py) is written attempt by attempt; every expected value is
computed here from what was written and the definitions (Wilson's interval,
Newcombe's hybrid score interval, Fisher's exact test, inclusive quartiles,
RC-14's cost rule), never from campaign.report.
"""

from __future__ import annotations

import pytest

from campaign.report._model import Cell, Report
from tests.report import definitions as d
from tests.report.scenario import ABSENT_P, PRESENT_P, PRESENT_P10, THIRD, P, Q


def _cell(report: Report, probe: str, column: str) -> Cell:
    figures = next(p for p in report.probes if p.id == probe)
    return next(c for c in figures.cells if c.column == column)


def test_one_column_per_arm_and_present_is_the_reference(report: Report) -> None:
    assert [(c.id, c.reference) for c in report.columns] == [("present", "present"),
                                                             ("absent", "present")]
    assert report.layout == "single"


def test_states_count_each_sessions_last_attempt(report: Report) -> None:
    cell = _cell(report, P, "present")
    assert (cell.planned, cell.recorded, cell.final) == (12, 10, 12)
    assert {s: n for s, n in cell.states.items() if n} == {"timed-out": 1, "refused-init": 1}
    assert (cell.running, cell.interrupted, cell.not_started) == (0, 0, 0)


def test_answer_shares_and_their_wilson_intervals(report: Report) -> None:
    present = [a for a, _ in PRESENT_P] + [PRESENT_P10[0]]
    for column, answers in (("present", present), ("absent", ABSENT_P)):
        cell = _cell(report, P, column)
        n = len(answers)
        assert cell.answered == n
        assert [s.answer for s in cell.answers] == ["alpha", "beta", None]
        for share in cell.answers:
            k = answers.count(share.answer)
            assert share.count == k
            assert share.share == pytest.approx(k / n)
            assert share.interval is not None
            low, high = d.wilson(k, n)
            assert share.interval.low == pytest.approx(low, abs=1e-12)
            assert share.interval.high == pytest.approx(high, abs=1e-12)


def test_differences_against_the_reference_with_newcombe_intervals(report: Report) -> None:
    present = [a for a, _ in PRESENT_P] + [PRESENT_P10[0]]
    assert _cell(report, P, "present").differences is None
    diffs = _cell(report, P, "absent").differences
    assert diffs is not None and [x.answer for x in diffs] == ["alpha", "beta"]
    for diff in diffs:
        k1, n1 = ABSENT_P.count(diff.answer), len(ABSENT_P)
        k2, n2 = present.count(diff.answer), len(present)
        low, high = d.newcombe(k1, n1, k2, n2)
        assert diff.difference == pytest.approx(k1 / n1 - k2 / n2)
        assert diff.interval is not None
        assert diff.interval.low == pytest.approx(low, abs=1e-12)
        assert diff.interval.high == pytest.approx(high, abs=1e-12)
        assert diff.excludes_zero == (low > 0 or high < 0)
    # alpha: 3/12 against 8/10, far apart: the interval lies below 0 and is marked.
    assert diffs[0].excludes_zero


def test_calls_per_session_quartiles_inclusive(report: Report) -> None:
    counts = [len(calls) for _, calls in PRESENT_P] + [len(PRESENT_P10[1])]
    calls = _cell(report, P, "present").calls
    assert calls is not None
    assert (calls.n, calls.q1, calls.median, calls.q3) == (len(counts), *d.quartiles(counts))
    absent = _cell(report, P, "absent").calls
    assert absent is not None and (absent.q1, absent.median, absent.q3) == d.quartiles(
        list(range(1, 13)))


def test_reads_count_a_read_whose_argument_is_the_examined_path(report: Report) -> None:
    sessions = [calls for _, calls in PRESENT_P] + [PRESENT_P10[1]]
    cell = _cell(report, P, "present")
    for share in cell.reads:
        expected = sum(any(c["tool"] == "Read" and c["argument"] == share.path for c in calls)
                       for calls in sessions)
        assert (share.sessions, share.of) == (expected, len(sessions))
    assert [r.sessions for r in cell.reads] == [6, 2]  # ./docs/b.md is not docs/b.md


def test_unwatched_calls_and_an_absent_answer_leave_their_denominators(report: Report) -> None:
    cell = _cell(report, Q, "absent")
    assert (cell.recorded, cell.answered) == (12, 11)  # s12's event has no answer key
    assert cell.calls is not None and cell.calls.n == 11  # s11's event has no calls key
    assert [(s.answer, s.count) for s in cell.answers] == [("42", 10), (None, 1)]
    assert cell.reads[0].of == 11


def test_outside_paths_sum_over_every_final_session(report: Report) -> None:
    cell = _cell(report, P, "present")
    assert (cell.outside_paths, cell.outside_path_sessions, cell.final) == (3, 2, 12)


def test_cost_is_rc14s_ceiling_of_the_exact_sum_of_every_attempt(report: Report) -> None:
    present = [THIRD] * 12  # nine recorded, two attempts of s10, the refusal; s11 unknown
    cell = _cell(report, P, "present")
    assert cell.cost.cents == d.cents(present) == 4
    assert cell.cost.per_recorded_cents == d.cents(present, per=10) == 1
    assert (cell.cost.unknown_attempts, cell.cost.lower_bound) == (1, True)
    absent = _cell(report, P, "absent").cost
    assert (absent.cents, absent.per_recorded_cents, absent.lower_bound) == (
        d.cents(["0.01"] * 12), d.cents(["0.01"] * 12, per=12), False)


def test_per_arm_summary_over_the_batch(report: Report) -> None:
    present, absent = report.arms
    assert (present.column, present.planned, present.recorded, present.refused,
            present.failed, present.retried) == ("present", 24, 22, 1, 1, 1)
    assert present.first_attempt == {"harness-error": 1, "recorded": 21, "refused-init": 1,
                                     "timed-out": 1}
    assert present.after_retry == {"recorded": 1}
    assert present.spend.cents == d.cents([THIRD] * 12 + ["0.01"] * 12) == 16
    assert present.spend.lower_bound
    assert present.served_versions == {"model-a": 22} and present.networks == {"confined": 24}
    assert present.harness_versions == {"2.1.197": 24}
    assert (absent.recorded, absent.retried, absent.spend.cents) == (24, 0, 24)


def test_no_warning_when_the_arms_met_the_same_conditions(report: Report) -> None:
    # present: 2 of 24 not recorded, absent 0 of 24; retried 1 of 24 against 0 of 24.
    assert d.fisher(2, 22, 0, 24) >= 0.05 and d.fisher(1, 23, 0, 24) >= 0.05
    assert report.warnings == ()


def test_the_stopped_batch_names_what_is_outstanding(report: Report) -> None:
    (batch,) = report.batches
    assert [(o.arm, o.probe, o.session, o.why) for o in batch.outstanding] == [
        ("present", P, "s11", "timed-out (worth another attempt)")]
    assert batch.running is False and batch.stopped == ("done", "every session reached a "
                                                                "final state")
