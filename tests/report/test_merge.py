"""Several batches: merged when plan members and arms agree, refused naming the member, or side
by side; and what is not a batch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from campaign.report import BatchesDiffer, NotABatch, SameBatchTwice, build_report
from campaign.report._text import probe_rows
from tests.report.batches import HandBatch

P = "HW-PRB-0001"
PROBES: dict[str, tuple[list[str], list[str]]] = {P: (["yes", "no"], [])}


def _batch(root: Path, answers: dict[str, list[str | None]], *, seed: int = 0,
           model: str | None = None) -> Path:
    b = HandBatch(root, PROBES, repetitions=len(answers["present"]), seed=seed, model=model)
    for arm, given in answers.items():
        for rep, answer in enumerate(given, start=1):
            b.attempt(arm, P, rep, answer=answer, calls=[])
    b.stop()
    return b.close()


def test_batches_whose_plans_agree_are_merged_and_their_sessions_add_up(tmp_path: Path) -> None:
    one = _batch(tmp_path / "1", {"present": ["yes", "yes"], "absent": ["no", None]})
    two = _batch(tmp_path / "2", {"present": ["yes", "no"], "absent": ["no", "no"]})
    report = build_report([one, two])
    assert report.layout == "merged" and [c.id for c in report.columns] == ["present", "absent"]
    present, absent = report.probes[0].cells
    assert (present.planned, present.recorded) == (4, 4)
    assert [(s.answer, s.count) for s in present.answers] == [("yes", 3), ("no", 1), (None, 0)]
    assert [(s.answer, s.count) for s in absent.answers] == [("yes", 0), ("no", 3), (None, 1)]
    assert [b.path for b in report.batches] == [str(one), str(two)]


def test_batches_that_differ_are_refused_naming_the_member(tmp_path: Path) -> None:
    one = _batch(tmp_path / "1", {"present": ["yes"], "absent": ["no"]})
    two = _batch(tmp_path / "2", {"present": ["yes"], "absent": ["no"]}, seed=7)
    with pytest.raises(BatchesDiffer) as caught:
        build_report([one, two])
    assert caught.value.member == "seed"
    assert "seed (0 against 7)" in str(caught.value) and "--side-by-side" in str(caught.value)


def test_batches_asked_of_other_models_are_not_merged(tmp_path: Path) -> None:
    """The model passed is the measurement's too (RC-14's ``model``): not merged, named."""
    one = _batch(tmp_path / "1", {"present": ["yes"], "absent": ["no"]}, model="claude-a")
    two = _batch(tmp_path / "2", {"present": ["yes"], "absent": ["no"]}, model="claude-b")
    with pytest.raises(BatchesDiffer) as caught:
        build_report([one, two])
    assert caught.value.member == "model"
    assert "model (claude-a against claude-b)" in str(caught.value)
    assert build_report([one, two], side_by_side=True).layout == "side-by-side"


def test_side_by_side_numbers_the_columns_and_compares_within_each_batch(tmp_path: Path) -> None:
    one = _batch(tmp_path / "1", {"present": ["yes"], "absent": ["no"]})
    two = _batch(tmp_path / "2", {"present": ["no"], "absent": ["no"]}, seed=7)
    report = build_report([one, two], side_by_side=True)
    assert report.layout == "side-by-side"
    assert [(c.id, c.reference) for c in report.columns] == [
        ("1:present", "1:present"), ("1:absent", "1:present"),
        ("2:present", "2:present"), ("2:absent", "2:present")]
    cells = {c.column: c for c in report.probes[0].cells}
    assert cells["1:absent"].differences is not None
    assert cells["1:absent"].differences[0].difference == pytest.approx(-1.0)
    assert cells["2:absent"].differences is not None
    # Against its own batch's present (0 of 1 "yes"), not the first batch's (1 of 1).
    assert cells["2:absent"].differences[0].difference == 0.0
    assert [b.group for b in report.batches] == [0, 1]
    assert all(w.kind != "corpora" for w in report.warnings)  # one corpus, two seeds


def test_one_batch_named_twice_is_refused(tmp_path: Path) -> None:
    one = _batch(tmp_path / "1", {"present": ["yes"], "absent": ["no"]})
    with pytest.raises(SameBatchTwice):
        build_report([one, one])


def test_a_directory_that_is_not_a_batch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotABatch, match="not a batch the report can read"):
        build_report([tmp_path])


def test_a_ledger_line_the_runner_did_not_write_is_refused(tmp_path: Path) -> None:
    one = _batch(tmp_path / "1", {"present": ["yes"], "absent": ["no"]})
    with (one / "ledger.jsonl").open("a") as fp:
        fp.write('{"kind": "final", "surprise": 1}\n')
    with pytest.raises(NotABatch, match="ledger"):
        build_report([one])


def test_side_by_side_batches_of_other_probes_show_where_a_probe_is_not_planned(
        tmp_path: Path) -> None:
    one = _batch(tmp_path / "1", {"present": ["yes"], "absent": ["no"]})
    b = HandBatch(tmp_path / "2", {P: (["yes", "no"], []), "HW-PRB-0009": (["x"], [])})
    b.attempt("present", "HW-PRB-0009", 1, answer="x", calls=[])
    two = b.close()
    report = build_report([one, two], side_by_side=True)
    assert [p.id for p in report.probes] == [P, "HW-PRB-0009"]
    cells = {c.column: c for c in report.probes[1].cells}
    assert (cells["1:present"].in_plan, cells["1:present"].planned) == (False, 0)
    assert (cells["2:present"].in_plan, cells["2:present"].recorded) == (True, 1)
    planned = next(r for r in probe_rows(report.probes[1]) if r.label == "planned")
    assert planned.values == ("not planned", "not planned", "2", "2")  # two repetitions


def test_side_by_side_batches_of_different_corpora_are_warned_naming_both_trees(
        tmp_path: Path) -> None:
    # docs/report.md "Warnings": batches side by side over other corpora measure other
    # documents; the report says so instead of "Warnings: none".
    one = _batch(tmp_path / "1", {"present": ["yes"], "absent": ["no"]})
    b = HandBatch(tmp_path / "2", {P: (["yes", "no"], []), "HW-PRB-0009": (["x"], [])})
    b.attempt("present", P, 1, answer="yes", calls=[])
    two = b.close()
    report = build_report([one, two], side_by_side=True)
    trees = [build_report([path]).batches[0].members["tree"] for path in (one, two)]
    assert trees[0] != trees[1]
    [warning] = [w for w in report.warnings if w.kind == "corpora"]
    assert warning.columns == ("2:present", "1:present")
    assert f"tree {trees[1]} in {two}, {trees[0]} in {one}" in warning.message
    text = subprocess.run([sys.executable, "-m", "campaign", "report", "--side-by-side",
                           str(one), str(two)], capture_output=True, text=True, check=False)
    assert "ran over different corpora" in text.stdout and "Warnings: none" not in text.stdout
