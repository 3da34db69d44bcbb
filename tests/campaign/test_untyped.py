"""Untyped files (Markdown under docs/ without front matter) seal and arm like every file.

Rules (docs/plan.md, docs/sealing.md, docs/arms.md): an untyped file is in
the tree; the seal copies it unless it names the probe (RC-09), and then
removes it; the arms act on it by its path (a nested CLAUDE.md is harness
layer: `absent` and `no-claude-md` remove it, `present` keeps it). It has
no id, so it is never cited and names nothing by id.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import compose_plan
from campaign.seal import resolve_session
from campaign.seal._seal import seal_workspace
from recorder._digest import digest_bytes
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files

PROBE = "HW-PRB-0001"
NESTED = "docs/guide/CLAUDE.md"
README = "docs/README.md"
NAMING = "docs/imported/page.md"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_files(tmp_path / "c", {
        ".headwater/probe.yml": probe_yml(tiers={"campaign": {
            "arms": ["present", "absent", "no-claude-md"], "repetitions": 1}}),
        "docs/probes/p1.md": probe_doc(PROBE, "Where is the budget", answers=["budget"],
                                       examines=["docs/a.md"]),
        "docs/a.md": doc("HW-DOC-0001", "The budget lives here.\n"),
        NESTED: "In this folder, answer tersely.\n",
        README: "# Docs\n\nStart with docs/a.md.\n",
        NAMING: "Imported notes on HW-PRB-0001 and its answer.\n",
    })


@pytest.mark.parametrize(
    ("arm", "nested_kept"), [("present", True), ("absent", False), ("no-claude-md", False)])
def test_untyped_files_are_sealed_and_armed_like_every_file(root: Path, tmp_path: Path,
                                                            arm: str, nested_kept: bool) -> None:
    corpus = load_corpus(root)
    result = seal_workspace(corpus, resolve_session(corpus, PROBE, arm), out=tmp_path / arm)
    raw = {rel: (root / rel).read_bytes() for rel in (NESTED, README)}
    assert result.manifest[README] == digest_bytes(raw[README])  # copied unchanged
    assert NAMING not in result.manifest  # names the probe by id: removed (RC-09)
    assert not (tmp_path / arm / NAMING).exists()
    assert (NESTED in result.manifest) is nested_kept
    if nested_kept:
        assert result.manifest[NESTED] == digest_bytes(raw[NESTED])
    removed = {r.path for r in result.removals}
    assert NAMING in removed and (NESTED in removed) is not nested_kept


def test_a_nested_claude_md_gives_no_claude_md_its_own_identity(root: Path) -> None:
    """The nested CLAUDE.md is the corpus's only layer file, so no-claude-md differs from
    present (it would otherwise change nothing and be refused)."""
    plan = compose_plan(load_corpus(root), tier="campaign")
    identities = {spec.arm: spec.identity for spec in plan.arm_specs}
    assert identities["no-claude-md"] != identities["present"]
    assert identities["no-claude-md"] == identities["absent"]  # the same layer removed


def test_the_plan_lists_the_untyped_files(root: Path) -> None:
    plan = compose_plan(load_corpus(root), tier="campaign")
    assert plan.untyped_files == (README, NESTED, NAMING)  # sorted by path bytes
