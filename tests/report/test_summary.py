"""The summary first: a graded share per probe and arm, toned by its difference, or ungraded.

Expected texts are written from the rules (docs/report.md, "The summary"): the
share is satisfied over every recorded session, the interval Wilson's, the
difference Newcombe's (tests/report/definitions.py), the word and the tone
``higher``/``lower`` only where that interval lies wholly above/below 0.
"""

from __future__ import annotations

import dataclasses
import io
import re
from typing import TYPE_CHECKING, Any

import pytest

from campaign.expect import Expectations
from campaign.grade import MOVED_READ_SET
from campaign.report import build_report, print_report
from campaign.report._summary import SUMMARY_TITLE, grading_line, summary_rows
from campaign.report._text import probe_rows
from tests.report import definitions as d
from tests.report.gradings import N, S, U, grading
from tests.report.scenario import P, Q, scenario_batch

if TYPE_CHECKING:
    from pathlib import Path

    from campaign.grade import Verdict
    from campaign.report import Report
    from campaign.report._text import Row

EXPECT_P = Expectations(answered="alpha", opened=("docs/a.md",))


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenario_batch(tmp_path_factory.mktemp("summary"))


def _share(k: int, n: int) -> str:
    low, high = d.wilson(k, n)
    return f"{k}/{n} {100 * k / n:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def _difference(k1: int, n1: int, k2: int, n2: int) -> str:
    low, high = d.newcombe(k1, n1, k2, n2)
    return f"{100 * (k1 / n1 - k2 / n2):+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


def _rows(batch: Path, present: list[Verdict], absent: list[Verdict],
          **kw: Any) -> tuple[Report, list[Row]]:
    """The report of ``batch`` graded by a hand-made grading of probe P, and its summary."""
    g = grading(batch, {P: EXPECT_P}, {("present", P): present, ("absent", P): absent}, **kw)
    report = build_report([batch], grading=g)
    return report, summary_rows(report)


def test_a_lower_share_is_red_and_says_lower_not_observed_apart(batch: Path) -> None:
    _, rows = _rows(batch, [S] * 9 + [N], [S] * 2 + [U] * 10)
    row = rows[0]
    assert row.label == f"{P}: Title of {P}" and row.kind == "graded"
    # The denominator is every recorded session: 9 of 10, the not-observed one counted apart.
    assert row.values[0] == f"{_share(9, 10)}, 1 not observed"
    assert row.values[1] == f"{_share(2, 12)} {_difference(2, 12, 9, 10)} lower"
    assert row.tones == ("", "lower")
    assert d.newcombe(2, 12, 9, 10)[1] < 0  # the rule's premise: wholly below 0


def test_a_higher_share_is_green_and_says_higher(batch: Path) -> None:
    _, rows = _rows(batch, [S] + [U] * 9, [S] * 11 + [U])
    assert rows[0].values[1] == f"{_share(11, 12)} {_difference(11, 12, 1, 10)} higher"
    assert rows[0].tones == ("", "higher")


def test_a_lower_share_fisher_does_not_confirm_says_so(batch: Path) -> None:
    """0 of 2 against 2 of 2: Newcombe's interval lies below 0 (lower), but Fisher's exact
    two-sided p of [[0, 2], [2, 0]] is the two tables as extreme of the three with those
    margins, 1/6 + 1/6 = 1/3, at or above 0.05: the cell adds that it is unconfirmed."""
    _, rows = _rows(batch, [S] * 2, [U] * 2)
    assert d.newcombe(0, 2, 2, 2)[1] < 0
    assert rows[0].values[1] == (f"{_share(0, 2)} {_difference(0, 2, 2, 2)} lower "
                                 "(Fisher p 0.33: unconfirmed)")
    assert rows[0].tones == ("", "lower")


def test_a_difference_whose_interval_holds_0_has_no_word_and_no_colour(batch: Path) -> None:
    _, rows = _rows(batch, [S] * 5 + [U] * 5, [S] * 6 + [U] * 6)
    assert rows[0].values[1] == f"{_share(6, 12)} {_difference(6, 12, 5, 10)}"
    assert rows[0].tones == ("", "")


def test_a_probe_without_expectations_shows_its_most_frequent_answer_ungraded(
        batch: Path) -> None:
    _, rows = _rows(batch, [S], [S])
    # Q: "42" throughout; absent has 11 answered sessions (s12's event has no answer key),
    # 10 of them "42" (s11's is null).
    q = next(r for r in rows if r.label.startswith(Q))
    assert q.kind == "ungraded" and q.tones == ()
    assert q.values == ('"42" 12/12 100.0% (ungraded)', '"42" 10/11 90.9% (ungraded)')


def test_no_grading_leaves_every_probe_ungraded_and_says_why(batch: Path) -> None:
    report = build_report([batch], ungraded="no corpus at /gone (the path config.yaml records)")
    assert [r.kind for r in summary_rows(report)] == ["ungraded", "ungraded"]
    assert grading_line(report).startswith(
        "ungraded: no corpus at /gone (the path config.yaml records)")
    # P's most frequent answer over both columns is "alpha" (8 + 3 of beta's 1 + 6).
    assert summary_rows(report)[0].values[0] == '"alpha" 8/10 80.0% (ungraded)'


def test_the_summary_names_the_grader_and_marks_a_moved_read_set(batch: Path) -> None:
    report, _ = _rows(batch, [S], [S], moved=True, corpus="/the/corpus")
    line = grading_line(report)
    assert line.startswith("graded by grader 2 against the expectations in /the/corpus: "
                           "1 of 2 probes declare expectations")
    assert MOVED_READ_SET in line
    unmoved, _ = _rows(batch, [S], [S])
    assert MOVED_READ_SET not in grading_line(unmoved)


def test_verdict_rows_count_each_expectation_per_arm(batch: Path) -> None:
    report, _ = _rows(batch, [S] * 3 + [N], [U] * 2, rest=N,
                      apart={("present", P): ["timed-out", "refused-init"]})
    rows = {r.label: r.values for r in probe_rows(report.probes[0])}
    assert rows['expect answered "alpha"'] == ("3 satisfied, 0 unsatisfied, 1 not observed",
                                               "0 satisfied, 2 unsatisfied, 0 not observed")
    assert rows["expect opened docs/a.md"] == ("0 satisfied, 0 unsatisfied, 4 not observed",
                                               "0 satisfied, 0 unsatisfied, 2 not observed")
    assert rows["not in the denominator"] == ("refused-init 1, timed-out 1", "-")
    assert report.probes[0].expectations == (("answered", "alpha"), ("opened", "docs/a.md"))


def test_the_terminal_opens_with_the_summary(batch: Path) -> None:
    report, rows = _rows(batch, [S] * 9 + [N], [S] * 2 + [U] * 10)
    out = io.StringIO()
    print_report(report, out, force_plain=True)
    lines = out.getvalue().splitlines()
    assert lines[0] == SUMMARY_TITLE
    first_probe = next(i for i, x in enumerate(lines) if x.startswith("| planned "))
    for row in rows:
        line = next(i for i, x in enumerate(lines) if x.startswith(f"| {row.label} "))
        assert line < first_probe
        assert [v.strip() for v in lines[line].strip("| ").split(" | ")[1:]] == list(row.values)
    assert lines.index(grading_line(report)) < first_probe


def _on_a_terminal(report: Report) -> str:
    out = io.StringIO()
    out.isatty = lambda: True  # type: ignore[method-assign]  # rich asks the file
    print_report(report, out)
    return out.getvalue()


def test_on_a_terminal_the_tones_are_green_and_red(batch: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the colour and its word together
    for k in ("NO_COLOR", "TERM"):
        monkeypatch.delenv(k, raising=False)
    report, _ = _rows(batch, [S] * 9 + [N], [S] * 2 + [U] * 10)
    assert re.search(r"\x1b\[31m[^\x1b]*lower", _on_a_terminal(report))  # red
    report, _ = _rows(batch, [S] + [U] * 9, [S] * 11 + [U])
    text = _on_a_terminal(report)
    assert re.search(r"\x1b\[32m[^\x1b]*higher", text)  # green
    assert "\x1b[31m" not in text


def test_ungraded_is_the_answer_most_sessions_gave_over_every_column(tmp_path: Path) -> None:
    from tests.report.batches import HandBatch

    b = HandBatch(tmp_path, {P: (["yes", "no"], [])}, repetitions=3)
    for rep, (mine, theirs) in enumerate([("yes", "no"), ("no", "no"), ("yes", "no")], 1):
        b.attempt("present", P, rep, answer=mine, calls=[])
        b.attempt("absent", P, rep, answer=theirs, calls=[])
    report = build_report([b.close()])
    # "no": 1 + 3 sessions against "yes": 2; each column shows its own share of "no".
    assert summary_rows(report)[0].values == ('"no" 1/3 33.3% (ungraded)',
                                              '"no" 3/3 100.0% (ungraded)')


def test_each_session_counts_in_the_column_of_its_own_batch(tmp_path: Path) -> None:
    from tests.report.batches import HandBatch

    paths = []
    for name in ("one", "two"):
        b = HandBatch(tmp_path, {P: (["yes"], [])}, name=name)
        b.attempt("present", P, 1, answer="yes", calls=[])
        paths.append(b.close())
    one = grading(paths[0], {P: EXPECT_P}, {("present", P): [S, S], ("absent", P): [U]})
    two = grading(paths[1], {P: EXPECT_P}, {("present", P): [U, U], ("absent", P): [S]})
    both = dataclasses.replace(one, batches=(paths[0], paths[1]),
                               sessions=one.sessions + two.sessions)
    side = build_report(paths, side_by_side=True, grading=both)
    assert [c.id for c in side.columns] == ["1:present", "1:absent", "2:present", "2:absent"]
    values = summary_rows(side)[0].values
    assert values[0] == _share(2, 2) and values[2] == _share(0, 2)
    # Each batch's absent against its own batch's present.
    assert values[1] == f"{_share(0, 1)} {_difference(0, 1, 2, 2)}"
    assert values[3] == f"{_share(1, 1)} {_difference(1, 1, 0, 2)}"
    merged = build_report(paths, grading=both)
    assert summary_rows(merged)[0].values[:1] == (_share(2, 4),)
