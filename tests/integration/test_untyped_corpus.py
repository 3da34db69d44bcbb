"""A corpus whose docs/ holds untyped files plans, seals and records, through the CLI.

Untyped files (docs/plan.md): Markdown under docs/ without front matter - a
nested CLAUDE.md, a README, an imported page. `plan` counts and lists them;
the seal copies each unless it names the probe (RC-09: then it is removed);
the arms act on them by path (no-claude-md removes the nested CLAUDE.md);
and `record`, with a stand-in harness under real bwrap, records a session
that reads one of them: the Read's result is the digest of its bytes as
sealed, which for a file the seal copied unchanged is the corpus file's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.campaign.corpora import doc, probe_doc, write_files
from tests.integration.test_record_standins import (
    MODEL,
    PROBE,
    check_session,
    init,
    record,
    result,
    say,
    sha,
    tool_result,
    tool_use,
)
from tests.standin import write_standin

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

NESTED = "docs/guide/CLAUDE.md"
README = "docs/README.md"
NAMING = "docs/imported/page.md"
SHELF_README = "docs/probes/README.md"
README_TEXT = "# Docs\n\nThe decision register is docs/notes.md.\n"


def _corpus(root: Path) -> Path:
    config = ("tiers:\n  campaign: {arms: [present, no-claude-md], repetitions: 1}\n"
              f"tools: [Read, Bash, Write]\nmodel: {MODEL}\n")
    return write_files(root, {
        ".headwater/probe.yml": config,
        "docs/probes/p1.md": probe_doc(PROBE, "Status of a decision", answers=["HW-DR-0052"],
                                       examines=["docs/notes.md"],
                                       task="Which decision is current? End with its id alone "
                                            "on the last line.\n"),
        "docs/notes.md": doc("HW-NOTE-0001", "register: HW-DR-0052 (current)\n"),
        NESTED: "In this folder, answer tersely.\n",
        README: README_TEXT,
        NAMING: "Imported from the wiki: notes on HW-PRB-0001.\n",
        SHELF_README: "One probe per file.\n",
    })


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_plan_counts_and_lists_the_untyped_files(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus")
    listed = _cli("plan", str(corpus), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["untyped_files"] == [README, NESTED, NAMING, SHELF_README]
    text = _cli("plan", str(corpus), "--format", "text")
    assert text.returncode == 0 and "\nuntyped files: 4 " in text.stdout


@pytest.mark.parametrize(("arm", "nested_kept"), [("present", True), ("no-claude-md", False)])
def test_seal_copies_untyped_files_and_the_arm_acts_on_them(tmp_path: Path, arm: str,
                                                            nested_kept: bool) -> None:
    corpus = _corpus(tmp_path / "corpus")
    out = tmp_path / "ws"
    sealed = _cli("seal", "--corpus", str(corpus), "--probe", PROBE, "--arm", arm,
                  "--out", str(out))
    assert sealed.returncode == 0, sealed.stderr
    assert (out / README).read_bytes() == (corpus / README).read_bytes()
    assert not (out / NAMING).exists()  # it names the probe
    assert not (out / "docs" / "probes").exists()  # the shelf, its README included
    assert (out / NESTED).exists() is nested_kept


def test_record_of_a_session_reading_an_untyped_file(tmp_path: Path, bwrap: str) -> None:
    corpus = _corpus(tmp_path / "corpus")
    batch = tmp_path / "b"
    stream = (init() + tool_use("t1", "Read", {"file_path": README}, msg="m1")
              + tool_result("t1", README_TEXT) + say("Found it.\nHW-DR-0052", msg="m2")
              + result())
    harness = write_standin(tmp_path / "claude", stdout=stream)
    final = check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    assert final["event"]["calls"] == [
        {"tool": "Read", "argument": README, "result": sha(README_TEXT)}]
    assert final["event"]["answer"] == "HW-DR-0052"
    manifest = json.loads(  # workspace path -> digest as sealed
        (batch / "sessions" / "present" / PROBE / "r1" / "manifest.json").read_text())
    assert manifest[README] == sha(README_TEXT) and NESTED in manifest
    assert NAMING not in manifest
