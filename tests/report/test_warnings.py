"""Condition warnings: rates compared by Fisher's exact test, served versions, start times.

Each p-value expected here is the definition's (tests/report/definitions.py),
from the counts the test wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.report import build_report
from campaign.report._model import ConditionWarning
from tests.report import definitions as d
from tests.report.batches import HandBatch, read

P = "HW-PRB-0001"
PROBES: dict[str, tuple[list[str], list[str]]] = {P: (["yes"], ["docs/a.md"])}


def _kinds(path: Path) -> dict[str, ConditionWarning]:
    return {w.kind: w for w in build_report([path]).warnings}


def test_a_not_recorded_rate_that_differs_is_warned_with_fishers_p(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, PROBES, repetitions=10)
    for rep in range(1, 11):
        b.attempt("present", P, rep, answer="yes", calls=[read("docs/a.md")], at=rep * 10)
        if rep <= 8:
            b.attempt("absent", P, rep, state="limit-exceeded", at=rep * 10 + 5)
        else:
            b.attempt("absent", P, rep, answer="yes", calls=[], at=rep * 10 + 5)
    warnings = _kinds(b.close())
    warning = warnings["not-recorded-rate"]
    assert warning.columns == ("absent", "present")
    assert warning.p_value == pytest.approx(d.fisher(8, 2, 0, 10), rel=1e-12)
    assert d.fisher(8, 2, 0, 10) < 0.05
    assert "8 of 10" in warning.message and "Fisher" in warning.message


def test_a_rate_difference_fisher_does_not_reject_is_no_warning(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, PROBES, repetitions=10)
    for rep in range(1, 11):
        b.attempt("present", P, rep, answer="yes", calls=[], at=rep * 10)
        state = "limit-exceeded" if rep <= 2 else "recorded"
        b.attempt("absent", P, rep, state=state, answer="yes", calls=[], at=rep * 10 + 5)
    assert d.fisher(2, 8, 0, 10) >= 0.05
    assert "not-recorded-rate" not in _kinds(b.close())


def test_a_retry_rate_that_differs_is_warned(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, PROBES, repetitions=10)
    for rep in range(1, 11):
        b.attempt("present", P, rep, answer="yes", calls=[], at=rep * 10)
        if rep <= 9:
            b.attempt("absent", P, rep, state="harness-error", retryable=True, at=rep * 10 + 5)
        b.attempt("absent", P, rep, answer="yes", calls=[], attempt=2 if rep <= 9 else 1,
                  at=rep * 10 + 6)
    warning = _kinds(b.close())["retry-rate"]
    assert warning.p_value == pytest.approx(d.fisher(9, 1, 0, 10), rel=1e-12)


def test_served_versions_that_differ_are_warned(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, PROBES, repetitions=2)
    for rep in (1, 2):
        b.attempt("present", P, rep, answer="yes", calls=[], at=rep * 10)
        b.attempt("absent", P, rep, answer="yes", calls=[], served="model-b", at=rep * 10 + 5)
    warnings = _kinds(b.close())
    assert "model-a (2)" in warnings["served-versions"].message
    assert "model-b (2)" in warnings["served-versions"].message


@pytest.mark.parametrize(("absent_starts", "warned"), [
    ((150, 200, 998), False),  # medians 100 and 200: exactly 10% of the 1000 s span
    ((150, 201, 998), True),   # 101 s apart: more than 10%
])
def test_median_starts_further_apart_than_a_tenth_of_the_span_are_warned(
        tmp_path: Path, absent_starts: tuple[int, ...], warned: bool) -> None:
    b = HandBatch(tmp_path, PROBES, repetitions=3)
    for rep, at in enumerate((0, 100, 200), start=1):
        b.attempt("present", P, rep, answer="yes", calls=[], at=at)
    for rep, at in enumerate(absent_starts, start=1):
        b.attempt("absent", P, rep, answer="yes", calls=[], at=at, duration=2)
    # The span: the first start (0) to the last final (998 + 2 s): 1000 s.
    report = build_report([b.close()])
    assert ("start-times" in {w.kind for w in report.warnings}) is warned
