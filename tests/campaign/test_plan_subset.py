"""A plan of a subset (``--probe``) as resume and record meet it again (docs/plan.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign._errors import PlanError
from campaign.batch._open import compare_batch
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import compose_plan, dump_plan, load_plan_file, recompose
from tests.campaign.corpora import seal_corpus

SUBSET = ["HW-PRB-002", "HW-PRB-0012"]


def test_resume_recomposes_the_subset_and_finds_nothing_moved(tmp_path: Path) -> None:
    corpus = load_corpus(seal_corpus(tmp_path / "c"))
    recorded = compose_plan(corpus, tier="campaign", probes=SUBSET)
    assert [p.id for p in recorded.probes] == sorted(SUBSET)
    again = recompose(recorded, corpus)  # what resume compares against plan.yaml
    assert again.selection == recorded.selection and again.read_set == recorded.read_set
    assert compare_batch(recorded, again, recorded_harness_version="v",
                         current_harness_version="v") == []


def test_record_into_a_subset_batch_is_told_the_selection_moved(tmp_path: Path) -> None:
    # record composes the whole shelf: a batch of a subset is another selection.
    corpus = load_corpus(seal_corpus(tmp_path / "c"))
    recorded = compose_plan(corpus, tier="campaign", probes=SUBSET)
    moved = compare_batch(recorded, compose_plan(corpus, tier="campaign"),
                          recorded_harness_version="v", current_harness_version="v")
    assert any(m.startswith(f"selection was {recorded.selection}") for m in moved)


def test_the_subsets_plan_file_runs_the_same_subset(tmp_path: Path) -> None:
    corpus = load_corpus(seal_corpus(tmp_path / "c"))
    plan = compose_plan(corpus, tier="campaign", probes=SUBSET)
    path = tmp_path / "plan.yaml"
    path.write_text(dump_plan(plan, "yaml"))
    assert load_plan_file(path, corpus) == plan


def test_an_empty_choice_is_refused(tmp_path: Path) -> None:
    corpus = load_corpus(seal_corpus(tmp_path / "c"))
    with pytest.raises(PlanError, match="no probe chosen"):
        compose_plan(corpus, tier="campaign", probes=[])
