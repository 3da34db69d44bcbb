"""An edit of a probe's ``expect:`` moves the read set: resume refuses and says why, and that
``grade`` still grades the batch as it stands (docs/expectations.md, "Editing expectations")."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from campaign.batch._open import compare_batch
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import compose_plan
from tests.campaign.batch_fixture import cli, fixture_copy, read_ledger, read_yaml
from tests.campaign.corpora import minimal_corpus

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

NOTE = ("probe FX-PRB-0002's document docs/probes/FX-PRB-0002.md changed: a probe's file, "
        "with the expectations of its `expect:`, is part of the read set, so editing only the "
        "expectations moves the read set too; `grade` still grades this batch as it stands, "
        "its verdicts marked \"graded over a moved read set\"")


def _with_expect(root: Path) -> None:
    """minimal_corpus's probe with ``expect: {answered: budget}`` added, nothing else moved."""
    path = root / "docs/probes/p1.md"
    _, front, body = path.read_text().split("---\n", 2)
    path.write_text("---\n" + json.dumps({**json.loads(front), "expect": {"answered": "budget"}})
                    + "\n---\n" + body)


def test_an_expect_edit_alone_moves_the_read_set_and_says_so(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    before = compose_plan(load_corpus(root), tier="campaign")
    _with_expect(root)
    after = compose_plan(load_corpus(root), tier="campaign")
    assert before.read_set != after.read_set  # docs/plan.md: the probe file is in the read set
    assert [p.task for p in before.probes] == [p.task for p in after.probes]
    moved = compare_batch(before, after, recorded_harness_version="v",
                          current_harness_version="v")
    assert "in the read set, docs/probes/p1.md changed" in moved
    assert ("probe HW-PRB-0001's document docs/probes/p1.md changed: a probe's file, with the "
            "expectations of its `expect:`, is part of the read set, so editing only the "
            "expectations moves the read set too; `grade` still grades this batch as it "
            "stands, its verdicts marked \"graded over a moved read set\"") in moved


def test_an_examined_document_that_changed_says_nothing_of_expectations(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    before = compose_plan(load_corpus(root), tier="campaign")
    (root / "docs/a.md").write_text("---\nid: HW-DOC-0001\nkind: note\n---\n\nMoved.\n")
    moved = compare_batch(before, compose_plan(load_corpus(root), tier="campaign"),
                          recorded_harness_version="v", current_harness_version="v")
    assert "in the read set, docs/a.md changed" in moved
    assert not any("expect:" in m for m in moved)


@pytest.fixture
def own() -> Iterator[Path]:
    """A copy of the format-2 fixture batch (batch, corpus, scripts) of its own."""
    yield from fixture_copy("format2")


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.slow
def test_resume_after_an_expect_edit_refuses_naming_the_probe(own: Path, bwrap: str,
                                                              harness: Path) -> None:
    # resume compares after its preflight (the harness's version is measured inside the
    # sandbox), so this runs the real CLI under bwrap; config.yaml's harness and scripts are
    # pointed at this checkout's, as the format-2 tests do.
    config = own / "batch" / "config.yaml"
    text, options = config.read_text(), read_yaml(config)["options"]
    for name, new in (("harness", harness), ("scripts", own / "scripts")):
        text = text.replace(f"\n  {name}: {options[name]}\n", f"\n  {name}: {new}\n")
    config.write_text(text)
    probe = own / "corpus" / "docs/probes/FX-PRB-0002.md"
    head, sep, rest = probe.read_text().partition("\n---\n")
    probe.write_text(f'{head}\nexpect:\n  answered: "2"{sep}{rest}')
    before = len(read_ledger(own / "batch"))
    run = cli("resume", str(own / "batch"), "--corpus", str(own / "corpus"))
    assert run.returncode == 2, run.stdout + run.stderr
    assert NOTE in " ".join(run.stderr.split()), run.stderr
    assert len(read_ledger(own / "batch")) == before
