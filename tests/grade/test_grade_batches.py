"""`grade_batches` and the ``grade`` command over a copy of the format-2 fixture batch.

What the rules say, not what the code prints: a moved read set keeps the verdicts and says
so in a sentence (DESIGN "Grading", the spec's #1338); no corpus is exit 2 (DESIGN "Exit
statuses"); the denominator is the recorded sessions and the others are apart with their
states; every satisfied verdict names its event and call.
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

import pytest

from campaign.grade import (
    GRADER_VERSION,
    MOVED_READ_SET,
    BatchesDiffer,
    Evidence,
    NoCorpus,
    SameBatchTwice,
    Verdict,
    grade_batches,
)
from tests.campaign.batch_fixture import FIXTURES, cli, fixture_copy, read_yaml

from .batches import declare, pin_read_set, read_set_of

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def copy() -> Iterator[Path]:
    """A fresh copy of the format-2 fixture, its probes declaring expectations."""
    for root in fixture_copy("format2"):
        declare(root / "corpus")
        yield root


def test_the_read_set_helper_is_the_planners_formula() -> None:
    plan = read_yaml(FIXTURES / "format2" / "batch" / "plan.yaml")
    assert read_set_of(FIXTURES / "format2" / "corpus") == plan["read_set"]


def test_a_moved_read_set_keeps_the_verdicts_and_marks_them(copy: Path) -> None:
    batch, corpus = copy / "batch", copy / "corpus"
    moved = grade_batches([batch], corpus=corpus)
    assert moved.moved_read_set
    pin_read_set(batch, corpus)
    pinned = grade_batches([batch], corpus=corpus)
    assert not pinned.moved_read_set
    assert moved.sessions == pinned.sessions  # kept: the same verdicts
    text = cli("grade", str(batch), "--corpus", str(corpus))
    assert text.returncode == 0, text.stderr
    assert MOVED_READ_SET not in text.stdout
    (corpus / "docs" / "probes" / "FX-PRB-0002.md").write_text(
        (corpus / "docs" / "probes" / "FX-PRB-0002.md").read_text() + "\nedited\n")
    text = cli("grade", str(batch), "--corpus", str(corpus))
    assert text.returncode == 0, text.stderr
    sentence = next(line for line in text.stdout.splitlines() if MOVED_READ_SET in line)
    assert "expectations the corpus declares now" in sentence
    data = json.loads(cli("grade", str(batch), "--corpus", str(corpus), "--json").stdout)
    assert data["moved_read_set"] is True
    assert MOVED_READ_SET in data["note"]
    assert {s["mark"] for s in data["sessions"]} == {MOVED_READ_SET}


def test_no_corpus_is_exit_2_for_grade(copy: Path) -> None:
    batch = copy / "batch"
    recorded = read_yaml(batch / "config.yaml")["options"]["corpus"]
    with pytest.raises(NoCorpus):
        grade_batches([batch])  # the copy moved; the recorded path holds no corpus
    run = cli("grade", str(batch))
    assert run.returncode == 2
    assert f"no corpus at {recorded}" in run.stderr and "--corpus" in run.stderr
    run = cli("grade", str(batch), "--corpus", str(copy / "scripts"))
    assert run.returncode == 2 and "no corpus at" in run.stderr
    run = cli("grade", str(copy / "corpus"), "--corpus", str(copy / "corpus"))
    assert run.returncode == 2 and "is not a batch" in run.stderr


def test_each_session_is_graded_by_its_event_and_the_rest_is_apart(copy: Path) -> None:
    grading = grade_batches([copy / "batch"], corpus=copy / "corpus")
    assert grading.arms == ("present", "absent")
    by = {(s.arm, s.probe): s for s in grading.sessions}
    # present.md's events: FX-PRB-0001 s1 (event 0), FX-PRB-0002 s1 (event 1)
    first = by["present", "FX-PRB-0001"]
    assert (first.event, first.verdict) == (0, Verdict.SATISFIED)
    opened = next(v for v in first.verdicts if v.key == "opened")
    assert opened.evidence == Evidence(event=0, call=1)  # Read docs/decisions/FX-DR-0002.md
    second = by["present", "FX-PRB-0002"]
    assert (second.event, second.verdict) == (1, Verdict.SATISFIED)
    cites = next(v for v in second.verdicts if v.key == "cites")
    assert cites.evidence == Evidence(event=1, artifact="notes/records.md")
    assert {(a.arm, a.probe, a.state) for a in grading.apart} == {
        ("absent", "FX-PRB-0001", "not final"),
        ("present", "FX-PRB-0003", "harness-error"), ("absent", "FX-PRB-0003", "harness-error")}
    cell = grading.cell("FX-PRB-0003", "present")
    assert cell is not None and cell.recorded == 0 and dict(cell.apart) == {"harness-error": 1}
    absent = grading.cell("FX-PRB-0001", "absent")
    assert absent is not None and absent.recorded == 0


def test_the_text_names_event_and_call_and_json_every_verdict(copy: Path) -> None:
    batch, corpus = copy / "batch", copy / "corpus"
    run = cli("grade", str(batch), "--corpus", str(corpus))
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if "FX-PRB-0001 present s1" in x)
    assert line.startswith("  FX-PRB-0001 present s1 (event 0): satisfied")
    assert "call 1, Read docs/decisions/FX-DR-0002.md, names it" in line
    data = json.loads(cli("grade", str(batch), "--corpus", str(corpus), "--json").stdout)
    assert data["format"] == 1 and data["grader"] == GRADER_VERSION
    verdicts = [v for s in data["sessions"] for v in s["verdicts"]]
    assert all(v["event"] is not None for v in verdicts)
    read = next(v for v in verdicts if v["key"] == "opened")
    assert (read["event"], read["call"], read["verdict"]) == (0, 1, "satisfied")


def test_a_batch_named_twice_is_refused_and_two_copies_are_pooled(copy: Path) -> None:
    batch = copy / "batch"
    with pytest.raises(SameBatchTwice):
        grade_batches([batch, batch], corpus=copy / "corpus")
    twin = copy / "twin"
    shutil.copytree(batch, twin)
    grading = grade_batches([batch, twin], corpus=copy / "corpus")
    cell = grading.cell("FX-PRB-0002", "absent")
    assert cell is not None and cell.recorded == 2


def test_what_a_session_wrote_reaches_the_terminal_escaped(copy: Path) -> None:
    transcript = copy / "batch" / "transcripts" / "present.md"
    text = transcript.read_text(encoding="utf-8")
    transcript.write_text(text.replace('- path: "notes/records.md"',
                                       '- path: "notes/\\e]0;owned\\a.md"', 1),
                          encoding="utf-8")  # an artifact's path, quoted by a cites verdict
    ledger = copy / "batch" / "ledger.jsonl"  # the present arm's line comes first in it
    ledger.write_text(ledger.read_text(encoding="utf-8").replace(
        '"path":"notes/records.md"', '"path":"notes/\\u001b]0;owned\\u0007.md"', 1),
        encoding="utf-8")  # the same path in the ledger, so the two still agree
    run = cli("grade", str(copy / "batch"), "--corpus", str(copy / "corpus"))
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    assert "\\x1b]0;owned\\x07" in run.stdout


def test_batches_of_two_plans_are_not_graded_together(copy: Path) -> None:
    batch, twin = copy / "batch", copy / "twin"
    shutil.copytree(batch, twin)
    plan = twin / "plan.yaml"
    plan.write_text(plan.read_text(encoding="utf-8").replace("\nseed: 1\n", "\nseed: 2\n"),
                    encoding="utf-8")
    with pytest.raises(BatchesDiffer) as refused:
        grade_batches([batch, twin], corpus=copy / "corpus")
    assert refused.value.member == "seed"
    run = cli("grade", str(batch), str(twin), "--corpus", str(copy / "corpus"))
    assert run.returncode == 2 and "differ in seed" in run.stderr


def test_a_corpus_without_expectations_grades_nothing_and_says_so() -> None:
    for root in fixture_copy("format1"):
        run = cli("grade", str(root / "batch"), "--corpus", str(root / "corpus"))
        assert run.returncode == 0, run.stderr
        assert "no probe of the plan declares expectations" in run.stdout
        assert "ungraded (no expect: in the probe's front matter): FX-PRB-0001" in run.stdout
