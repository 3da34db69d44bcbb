"""``report --html``: one self-contained page whose text is the data's, escaped."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from markupsafe import escape

from campaign.report import Report, build_report, render_page
from campaign.report._page import TEMPLATE
from campaign.report._summary import SUMMARY_TITLE
from campaign.report._text import MARK_NOTE, SHARES_NOTE, probe_rows
from tests.report.batches import HandBatch


def test_the_page_fetches_nothing_and_runs_no_script(report: Report) -> None:
    page = render_page(report)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\(|src=|href=", page, re.I)
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert page.count('<svg class="chart"') == len(report.probes)
    assert escape(SUMMARY_TITLE) in page
    assert page.index('id="summary"') < page.index('class="probe"')  # the answer first


def test_text_from_the_corpus_and_the_ledger_is_escaped_never_markup(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, {"HW-PRB-0001": (['<b onclick="x">yes</b>'], [])})
    b.attempt("present", "HW-PRB-0001", 1, answer='<b onclick="x">yes</b>', calls=[])
    page = render_page(build_report([b.close()]))
    assert '<b onclick="x">' not in page
    assert "&lt;b onclick=&#34;x&#34;&gt;yes&lt;/b&gt;" in page


def test_the_command_writes_the_page_and_says_where(tmp_path: Path, report: Report) -> None:
    b = HandBatch(tmp_path, {"HW-PRB-0001": (["yes"], [])})
    b.attempt("present", "HW-PRB-0001", 1, answer="yes", calls=[])
    batch = b.close()
    page = tmp_path / "out" / "report.html"
    missing = subprocess.run([sys.executable, "-m", "campaign", "report", str(batch),
                              "--html", str(page)], capture_output=True, text=True,
                             timeout=120, check=False)
    assert missing.returncode == 2 and "cannot write the page there" in missing.stderr
    assert f"its directory {page.parent} does not exist" in missing.stderr
    assert ".tmp" not in missing.stderr  # the writer's temporary name is not the user's
    page.parent.mkdir()
    run = subprocess.run([sys.executable, "-m", "campaign", "report", str(batch), "--json",
                          "--html", str(page)], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("{") and f"page: {page}" in run.stderr
    from campaign.grade import grade_batches

    expected = build_report([batch], grading=grade_batches([batch]))  # what the command grades
    assert page.read_text(encoding="utf-8") == render_page(expected)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_carries_the_page_template(tmp_path: Path) -> None:
    """An installed runner must find its template: the wheel has to ship it."""
    repo = Path(__file__).resolve().parents[2]
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(repo / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for package in ("campaign", "recorder", "sandbox", "demo"):
        shutil.copytree(repo / package, source / package, ignore=ignore)
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                           "--outdir", str(tmp_path / "dist"), "."], cwd=source,
                          capture_output=True, text=True, check=False, timeout=280,
                          env={**os.environ, "PIP_NO_INDEX": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert f"campaign/report/templates/{TEMPLATE}" in archive.namelist()


def test_the_page_says_how_to_read_the_tables_once_not_per_probe(report: Report,
                                                                tmp_path: Path) -> None:
    page = render_page(report)
    assert len(report.probes) > 1
    assert page.count(SHARES_NOTE) == 1 and page.count(MARK_NOTE) == 1
    assert page.index(SHARES_NOTE) < page.index('class="probe"')
    assert "<caption>" not in page  # no footnote under each table
    # No table has a mark: the mark is not explained at all.
    b = HandBatch(tmp_path, {"HW-PRB-0001": (["yes"], [])})
    b.attempt("present", "HW-PRB-0001", 1, answer="yes", calls=[])
    quiet = build_report([b.close()])
    assert not any(any(r.marked) for p in quiet.probes for r in probe_rows(p))
    assert MARK_NOTE not in render_page(quiet) and SHARES_NOTE in render_page(quiet)


def test_a_control_a_session_sent_is_an_escape_in_the_page(tmp_path: Path) -> None:
    # cat of the page must not replay a session's ESC, BEL, C1 or bidi override (docs/cli.md).
    from campaign.report import build_report, render_page
    from tests.report.batches import HandBatch

    hostile = "m\x1b]0;owned\x07\x9b31m\u202e"
    b = HandBatch(tmp_path / "b", {"HW-PRB-0001": (["yes"], [])})
    b.attempt("present", "HW-PRB-0001", 1, answer="yes", calls=[], served=hostile,
              version=hostile)
    page = render_page(build_report([b.close()]))
    assert "\\x1b]0;owned\\x07\\x9b31m\\u202e" in page
    assert not [c for c in page if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
                or c == "\u202e"]


def test_the_summary_cells_carry_their_tone_and_its_word(tmp_path: Path) -> None:
    from campaign.expect import Expectations
    from campaign.grade import MOVED_READ_SET
    from tests.report.gradings import S, U, grading
    from tests.report.scenario import P, scenario_batch

    batch = scenario_batch(tmp_path)
    g = grading(batch, {P: Expectations(answered="alpha")},
                {("present", P): [S] * 10, ("absent", P): [S] + [U] * 11}, moved=True)
    page = render_page(build_report([batch], grading=g))
    summary = page.split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    toned = re.findall(r'<td class="value tone-(\w+)">([^<]*)</td>', summary)
    assert len(toned) == 1
    tone, text = toned[0]
    assert tone == "lower" and text.endswith(" lower")  # never by colour alone
    assert '<p class="note moved" id="grading">' in summary and MOVED_READ_SET in summary
    assert summary.count("(ungraded)") == 2  # Q: both columns
