"""The page rendered by a real headless Chromium (Debian's ``chromium``; ``make test`` installs it).

No console message or exception, no request but the page itself, the summary
drawn first with every cell visible and toned as its word says, a chart per
probe with a bar per column drawn in the column's colour (a zero share as a
baseline line), every table with the same column widths, the tables holding
the terminal's figures, and a screenshot that is not blank. Under CI=true a
missing chromium fails; it never skips.
"""

from __future__ import annotations

import base64
import io
import shutil
from pathlib import Path

import pytest
from PIL import Image

from campaign.expect import Expectations
from campaign.report import Report, build_report, render_page
from campaign.report._chart import Bar, answer_chart, colour
from campaign.report._summary import summary_rows
from campaign.report._text import column_label, probe_rows
from tests.conftest import missing
from tests.report.browser import Browser
from tests.report.gradings import N, S, U, grading
from tests.report.scenario import P, scenario_batch

pytestmark = pytest.mark.slow
VIEWPORT = {"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": False}
TABLES_JS = """[...document.querySelectorAll('section.probe')].map(s => ({
  id: s.id,
  charts: s.querySelectorAll('svg.chart').length,
  origin: (r => [r.left + window.scrollX, r.top + window.scrollY])(
     s.querySelector('svg.chart').getBoundingClientRect()),
  bars: [...s.querySelectorAll('svg.chart g.bar rect')].map(r => ({
     fill: r.getAttribute('fill'), width: r.getBBox().width})),
  rows: [...s.querySelectorAll('table.figures tbody tr')].map(
     tr => [...tr.cells].map(td => td.textContent)),
  marked: [...s.querySelectorAll('td.marked')].map(td => getComputedStyle(td).fontWeight),
  baselines: [...s.querySelectorAll('svg.chart line.baseline')].map(l => ({
     stroke: l.getAttribute('stroke'), height: l.getBBox().height})),
}))"""
SUMMARY_JS = """(() => {
  const t = document.querySelector('table.summary');
  const first = document.querySelector('section.probe').getBoundingClientRect().top;
  return {
    above: t.getBoundingClientRect().bottom <= first,
    rows: [...t.querySelectorAll('tbody tr')].map(tr => [...tr.cells].map(td => {
      const r = td.getBoundingClientRect();
      return {text: td.textContent, width: r.width, height: r.height,
              background: getComputedStyle(td).backgroundColor,
              colour: getComputedStyle(td).color, tone: td.className};
    })),
  };
})()"""
WIDTHS_JS = """[...document.querySelectorAll('table')].map(t =>
  [...t.querySelector('tr').cells].map(c => {
    const r = c.getBoundingClientRect(); return [Math.round(r.left), Math.round(r.width)]; }))"""
TONE_BACKGROUND = {"higher": "rgb(220, 240, 220)", "lower": "rgb(248, 220, 220)"}
"""The template's tone colours (green, red), as the browser computes them."""


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The scenario's report with P graded: absent's share is lower than present's."""
    batch = scenario_batch(tmp_path_factory.mktemp("browser"))
    g = grading(batch, {P: Expectations(answered="alpha", opened=("docs/a.md",))},
                {("present", P): [S] * 9 + [N], ("absent", P): [S] * 2 + [U] * 10})
    return build_report([batch], grading=g)


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        missing("Debian's chromium (`make test` installs it: make chromium)")
    assert exe is not None
    return exe


@pytest.mark.timeout(300)
def test_the_page_renders_in_headless_chromium(chromium: str, graded: Report,
                                               tmp_path: Path) -> None:
    report = graded
    page = tmp_path / "report.html"
    page.write_text(render_page(report), encoding="utf-8")
    (tmp_path / "profile").mkdir()
    with Browser(chromium, tmp_path / "profile", tmp_path / "chromium.log") as browser:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target,
                                                         "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call(f"{domain}.enable", session=session)
        browser.call("Emulation.setDeviceMetricsOverride", VIEWPORT, session=session)
        browser.call("Page.navigate", {"url": page.as_uri()}, session=session)
        browser.wait_event("Page.loadEventFired", session=session)
        sections = browser.call("Runtime.evaluate", {"expression": TABLES_JS,
                                                     "returnByValue": True},
                                session=session)["result"]["value"]
        summary = browser.call("Runtime.evaluate", {"expression": SUMMARY_JS,
                                                    "returnByValue": True},
                               session=session)["result"]["value"]
        widths = browser.call("Runtime.evaluate", {"expression": WIDTHS_JS,
                                                   "returnByValue": True},
                              session=session)["result"]["value"]
        shot = browser.call("Page.captureScreenshot", {"format": "png",
                                                       "captureBeyondViewport": True},
                            session=session)["data"]
        events = list(browser.events)
    (tmp_path / "report.png").write_bytes(base64.b64decode(shot))

    complaints = [e for e in events if e["method"] in (
        "Runtime.exceptionThrown", "Runtime.consoleAPICalled", "Log.entryAdded",
        "Network.loadingFailed")]
    assert complaints == []
    requested = {e["params"]["request"]["url"] for e in events
                 if e["method"] == "Network.requestWillBeSent"}
    assert requested == {page.as_uri()}

    assert [s["id"] for s in sections] == [f"probe-{p.id}" for p in report.probes]
    for section, probe in zip(sections, report.probes, strict=True):
        assert section["charts"] == 1
        # A bar per answer and column, but for a zero share (its baseline, below).
        expected = [(colour(c), 420 * (cell.answers[i].share or 0))
                    for i in range(len(probe.cells[0].answers))
                    for c, cell in enumerate(probe.cells) if cell.answers[i].share != 0]
        assert len(section["bars"]) == len(expected)
        for bar, (fill, width) in zip(section["bars"], expected, strict=True):
            assert bar["fill"] == fill
            assert bar["width"] == pytest.approx(width, abs=0.5)
        assert section["rows"] == [[row.label, *row.values] for row in probe_rows(probe)]
    for section, probe in zip(sections, report.probes, strict=True):
        zeros = [c for i in range(len(probe.cells[0].answers))
                 for c, cell in enumerate(probe.cells) if cell.answers[i].share == 0]
        assert [b["stroke"] for b in section["baselines"]] == [colour(c) for c in zeros]
        assert all(b["height"] > 8 for b in section["baselines"])  # seen, not a sliver
    assert any(s["baselines"] for s in sections)

    assert summary["above"]  # the answer first
    rows = summary_rows(report)
    assert [[c["text"] for c in r] for r in summary["rows"]] == [[r.label, *r.values]
                                                                  for r in rows]
    for drawn, row in zip(summary["rows"], rows, strict=True):
        for cell, tone in zip(drawn[1:], row.tones or ("",) * len(row.values), strict=True):
            assert cell["width"] > 20 and cell["height"] > 10  # drawn and visible
            assert cell["colour"] != cell["background"]
            if tone:
                assert cell["background"] == TONE_BACKGROUND[tone]
            else:
                assert cell["background"] not in TONE_BACKGROUND.values()
    assert rows[0].tones == ("", "lower")  # the premise: one red cell
    # Every table: the same columns at the same places, whatever their contents.
    assert len(widths) == len(report.probes) + 2 and all(w == widths[0] for w in widths)

    marked = [w for s in sections for w in s["marked"]]
    assert marked and set(marked) == {"700"}  # the difference whose interval excludes 0

    image = Image.open(io.BytesIO(base64.b64decode(shot))).convert("RGB")
    assert image.width == VIEWPORT["width"] and image.height > VIEWPORT["height"] / 2
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, lines, bars: not blank
    seen = {rgb for _, rgb in colours}
    assert {_rgb(colour(c)) for c in range(len(report.columns))} <= seen
    white = next((n for n, rgb in colours if rgb == (255, 255, 255)), 0)
    assert white < 0.97 * image.width * image.height
    labels = [column_label(report, c.id) for c in report.columns]
    painted = 0
    for i, (section, probe) in enumerate(zip(sections, report.probes, strict=True)):
        left, top = section["origin"]
        for bar in answer_chart(probe, labels, index=i).bars:
            x = _inside(bar)
            if x is not None:  # a bar wide enough to look at: its colour is on the screen
                pixel = image.getpixel((round(left + x), round(top + bar.y + bar.height * 0.3)))
                assert pixel == _rgb(bar.colour), (probe.id, bar.title)
                painted += 1
    assert painted >= len(report.probes)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _inside(bar: Bar) -> float | None:
    """An x inside the bar, clear of its whisker's ends; None for a bar too thin to look at."""
    if bar.width < 8:
        return None
    for f in (0.5, 0.3, 0.7):
        x = bar.x + bar.width * f
        if bar.whisker is None or min(abs(x - end) for end in bar.whisker) > 3:
            return x
    return None


def test_make_test_installs_chromium_and_make_demo_does_not() -> None:
    rules = {}
    for line in (Path(__file__).resolve().parents[2] / "Makefile").read_text().splitlines():
        if ":" in line and not line.startswith(("\t", "#", " ")) and "=" not in line:
            target, _, deps = line.partition(":")
            rules[target.strip()] = deps.split()
    assert "chromium" in rules["test"]
    assert "chromium" not in rules["demo"] and "chromium" not in rules["setup"]
