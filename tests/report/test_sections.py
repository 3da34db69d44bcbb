"""Per probe: the task (folded on the page), the expectations, what the sessions produced.

What a session produced is counted from its event's ``produced`` (RC-11): per
path, cited id and finding rule, the sessions of each column, over the
sessions whose event has the key. The task is corpus text: untrusted
wherever it is shown.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

from campaign.expect import Expectations
from campaign.report import build_report, print_report, render_page, report_json
from campaign.report._chart import answer_chart
from campaign.report._text import PRODUCED_SHOWN, column_label, probe_rows
from tests.report.batches import HandBatch
from tests.report.gradings import S, grading

if TYPE_CHECKING:
    from pathlib import Path

P = "HW-PRB-0001"


def _artifact(path: str, *, cites: list[str] | None = None,
              findings: list[str] | None = None) -> dict[str, object]:
    out: dict[str, object] = {"path": path, "result": "sha256:" + "cd" * 32}
    if cites is not None:
        out["cites"] = cites
    if findings is not None:
        out["findings"] = findings
    return out


def test_what_the_sessions_produced_is_counted_per_column(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, {P: (["yes"], [])}, repetitions=4)
    b.attempt("present", P, 1, answer="yes", calls=[], produced=[
        _artifact("notes.md", cites=["HW-DOC-0001"], findings=[]),
        _artifact("out/x.md", cites=["HW-DOC-0001", "HW-DOC-0002"], findings=[])])
    b.attempt("present", P, 2, answer="yes", calls=[], produced=[
        _artifact("notes.md", cites=[], findings=["rule-x"])])
    b.attempt("present", P, 3, answer="yes", calls=[], produced=[_artifact("notes.md")])
    b.attempt("present", P, 4, answer="yes", calls=[])  # produced: [] (watched, none)
    b.attempt("absent", P, 1, answer="yes", calls=[], produced=[])
    b.attempt("absent", P, 2, state="timed-out")  # not recorded: not watched
    rows = {r.label: r.values for r in probe_rows(build_report([b.close()]).probes[0])}
    assert rows["produced: sessions watched"] == ("4", "1")
    assert rows["produced notes.md"] == ("3/4", "0/1")
    assert rows["produced out/x.md"] == ("1/4", "0/1")
    assert rows["cites HW-DOC-0001"] == ("1/4", "0/1")  # one session, two of its artifacts
    assert rows["cites HW-DOC-0002"] == ("1/4", "0/1")
    assert rows["finding rule-x"] == ("1/4", "0/1")
    assert rows["checked clean"] == ("1/4", "0/1")  # s1: every artifact has findings: []
    assert rows["not checked"] == ("1/4", "0/1")  # s3: an artifact with no findings key
    labels = [label for label in rows if label.startswith("produced ")]
    assert labels == ["produced notes.md", "produced out/x.md"]  # most sessions first


def test_past_the_shown_paths_a_row_says_how_many_more(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, {P: (["yes"], [])}, repetitions=1)
    many = [_artifact(f"f{i:02d}.md") for i in range(PRODUCED_SHOWN + 3)]
    b.attempt("present", P, 1, answer="yes", calls=[], produced=many)
    b.attempt("absent", P, 1, answer="yes", calls=[], produced=many[:1])
    report = build_report([b.close()])
    rows = {r.label: r.values for r in probe_rows(report.probes[0])}
    assert sum(label.startswith("produced f") for label in rows) == PRODUCED_SHOWN
    assert rows["produced: 3 more"] == ("3", "0")
    cell = report_json(report)["probes"][0]["cells"][0]
    assert len(cell["produced"]["paths"]) == PRODUCED_SHOWN + 3  # JSON lists every one


HOSTILE_TASK = 'Read <script>alert(1)</script> & say "x".\nA second \x1b]0;owned\x07 line.'


def _hostile(tmp_path: Path) -> Path:
    b = HandBatch(tmp_path, {P: (["yes"], ["docs/a.md"])}, tasks={P: HOSTILE_TASK})
    b.attempt("present", P, 1, answer="yes", calls=[])
    b.attempt("absent", P, 1, answer="yes", calls=[])
    return b.close()


def test_the_task_is_on_the_terminal_each_line_prefixed_and_escaped(tmp_path: Path) -> None:
    batch = _hostile(tmp_path)
    out = io.StringIO()
    print_report(build_report([batch]), out, force_plain=True)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    lines = text.splitlines()
    start = lines.index("task:")
    assert lines[start + 1:start + 3] == [
        '    | Read <script>alert(1)</script> & say "x".',
        "    | A second \\x1b]0;owned\\x07 line."]
    assert lines[start + 3].startswith("expects: nothing declared (ungraded")


def test_the_task_is_folded_on_the_page_and_never_markup(tmp_path: Path) -> None:
    batch = _hostile(tmp_path)
    page = render_page(build_report([batch]))
    assert "<script>" not in page and "\x1b" not in page
    fold = re.search(r'<details class="task"><summary>Task</summary><pre>(.*?)</pre></details>',
                     page, re.S)
    assert fold is not None
    assert fold.group(1) == ("Read &lt;script&gt;alert(1)&lt;/script&gt; &amp; say &#34;x&#34;."
                             "\nA second \\x1b]0;owned\\x07 line.")
    assert "<details open" not in page  # folded until the reader opens it


def test_the_expectations_are_listed_above_the_probe_table(tmp_path: Path) -> None:
    batch = _hostile(tmp_path)
    expect = Expectations(answered="yes", opened=("docs/a.md",), clean=True)
    g = grading(batch, {P: expect}, {("present", P): [S], ("absent", P): [S]})
    report = build_report([batch], grading=g)
    out = io.StringIO()
    print_report(report, out, force_plain=True)
    assert 'expects: answered "yes"; opened docs/a.md; clean' in out.getvalue().splitlines()
    page = render_page(report)
    assert "Expects: answered &#34;yes&#34;; opened docs/a.md; clean</p>" in page
    assert page.index("Expects:") < page.index('<table class="figures">')


def test_a_zero_share_draws_a_baseline_not_a_bar(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, {P: (["yes", "no"], [])}, repetitions=2)
    for rep in (1, 2):
        b.attempt("present", P, rep, answer="yes", calls=[])
        b.attempt("absent", P, rep, answer="no" if rep == 1 else "yes", calls=[])
    report = build_report([b.close()])
    labels = [column_label(report, c.id) for c in report.columns]
    chart = answer_chart(report.probes[0], labels, index=0)
    # Groups: "yes", "no", null; bars: present, absent in each.
    assert [bar.baseline for bar in chart.bars] == [False, False, True, False, True, True]
    assert [bar.width for bar in chart.bars if bar.baseline] == [0, 0, 0]
    page = render_page(report)
    assert page.count('<line class="baseline"') == 3
    assert page.count("<rect x=") == 3 + len(labels)  # the drawn bars, a legend swatch each
