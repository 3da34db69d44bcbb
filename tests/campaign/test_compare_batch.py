"""What resume and record refuse, in words: each member that moved, and which files."""

from __future__ import annotations

from pathlib import Path

from campaign.batch._open import compare_batch
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files


def _plan(root: Path, notes: str, other: str = "x\n") -> Plan:
    write_files(root, {
        ".headwater/probe.yml": probe_yml(),
        "docs/probes/p1.md": probe_doc("HW-PRB-001", "P", examines=["docs/notes.md"]),
        "docs/notes.md": doc("HW-N-001", notes),
        "docs/other.md": doc("HW-O-001", other),
    })
    return compose_plan(load_corpus(root), tier="campaign")


def test_nothing_moved_is_nothing_to_say(tmp_path: Path) -> None:
    plan = _plan(tmp_path / "a", "same\n")
    assert compare_batch(plan, _plan(tmp_path / "b", "same\n"), recorded_harness_version="v",
                         current_harness_version="v") == []


def test_a_read_set_file_that_changed_is_named(tmp_path: Path) -> None:
    moved = compare_batch(_plan(tmp_path / "a", "before\n"), _plan(tmp_path / "b", "after\n"),
                          recorded_harness_version="v", current_harness_version="v")
    assert moved[0].startswith("tree was sha256:") and moved[1].startswith("read_set was")
    assert moved[2] == "in the read set, docs/notes.md changed"


def test_a_change_outside_the_read_set_says_where_it_is_not(tmp_path: Path) -> None:
    # A batch without tree.json (made before it was kept) cannot say which file moved.
    before, after = _plan(tmp_path / "a", "n\n", "one\n"), _plan(tmp_path / "b", "n\n", "two\n")
    moved = compare_batch(before, after, recorded_harness_version="v", current_harness_version="v")
    assert len(moved) == 2 and moved[0].startswith("tree was")
    assert moved[1].startswith("a file outside the read set changed")
    assert "cannot be said" in moved[1]


def test_files_outside_the_read_set_are_named_from_the_listings(tmp_path: Path) -> None:
    # docs/batch.md "tree.json": the listing names what changed, appeared or went, read set
    # apart (named once, from plan.yaml).
    before = _plan(tmp_path / "a", "n\n", "one\n")
    write_files(tmp_path / "b", {"extra.txt": "new\n"})
    (tmp_path / "a" / "gone.txt").write_text("old\n")
    a_files = load_corpus(tmp_path / "a").files
    after = _plan(tmp_path / "b", "n\n", "two\n")
    moved = compare_batch(before, after, recorded_harness_version="v", current_harness_version="v",
                          recorded_tree=a_files, current_tree=load_corpus(tmp_path / "b").files)
    assert moved[1] == ("outside the read set, docs/other.md changed, extra.txt is new, "
                        "gone.txt is gone")


def test_a_long_list_of_moved_files_is_bounded(tmp_path: Path) -> None:
    plan = _plan(tmp_path / "a", "n\n")
    other = plan.model_copy(update={"tree": "sha256:" + "0" * 64})
    before = {f"f{i:02}.txt": "sha256:1" for i in range(25)}
    moved = compare_batch(plan, other, recorded_harness_version="v", current_harness_version="v",
                          recorded_tree=before, current_tree={})
    assert moved[1].endswith("f09.txt is gone and 15 more")
    assert moved[1].count(" is gone") == 10


def test_another_harness_version_is_named(tmp_path: Path) -> None:
    plan = _plan(tmp_path / "a", "n\n")
    assert compare_batch(plan, plan, recorded_harness_version="2.1.197",
                         current_harness_version="2.2.0") == [
        "the harness version was '2.1.197', is now '2.2.0'"]
