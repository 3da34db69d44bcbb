"""``report`` on a batch made by ``demo`` (real CLI, real bwrap): both arms, in all three forms."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from campaign.grade import GRADER_VERSION
from campaign.report._summary import SUMMARY_TITLE

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.slow]
PROBES = ("HW-PRB-0001", "HW-PRB-0002", "HW-PRB-0003", "HW-PRB-0004")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.mark.timeout(600)
def test_report_on_a_demo_batch_shows_both_arms_in_every_form(tmp_path: Path, bwrap: str,
                                                              harness: Path) -> None:
    del bwrap
    batch = tmp_path / "batch"
    demo = _run("demo", "--batch-dir", str(batch), "--harness", str(harness))
    assert demo.returncode == 0, demo.stdout + demo.stderr

    text = _run("report", str(batch))
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(SUMMARY_TITLE)  # the answer first
    assert "graded by grader " in text.stdout  # the demo's corpus is where config.yaml says
    header = next(line for line in text.stdout.splitlines() if "present (reference)" in line)
    assert "absent" in header
    assert all(f"{probe}:" in text.stdout for probe in PROBES)
    assert "every planned session is finished" in text.stdout

    data = json.loads(_run("report", str(batch), "--json").stdout)
    assert [c["id"] for c in data["columns"]] == ["present", "absent"]
    assert data["grading"]["grader"] == GRADER_VERSION and data["grading"]["ungraded"] is None
    assert [p["id"] for p in data["probes"]] == list(PROBES)
    # Each scripted session of a probe ends the same way in both arms (tests/integration
    # test_demo's expected answers): 2 of 2 recorded per probe and arm.
    for probe in data["probes"]:
        assert [c["recorded"] for c in probe["cells"]] == [2, 2]

    page = tmp_path / "report.html"
    html = _run("report", str(batch), "--html", str(page))
    assert html.returncode == 0, html.stderr
    body = page.read_text(encoding="utf-8")
    assert body.count('<svg class="chart"') == len(PROBES)
    assert body.index('id="summary"') < body.index('class="probe"')
    assert "present (reference)" in body and "absent" in body
