"""The seal's one path-rule table (campaign/seal/_rules.py) and a batch's sessions resolved once.

Each path rule is checked from its text (docs/sealing.md rules 1, 3-4): the plan removes a
file that breaks it before reading it, and the verification refuses a workspace holding one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign._errors import SealRefused
from campaign.corpus._corpus import Corpus, load_corpus
from campaign.plan._plan import compose_plan
from campaign.seal import resolve_session, resolve_sessions, verify_workspace
from campaign.seal._rules import broken_path_rule
from tests.campaign.corpora import ANSWER_KEY, PROBE_001, probe_yml, seal_corpus, seal_files

# (path, the rule it breaks for HW-PRB-001), written from the rule text.
BROKEN = [(PROBE_001, "shelf"), (".headwater/taxonomy.lock", "headwater"),
          (ANSWER_KEY, "answer-key"), ("notes/HW-PRB-001/x.txt", "path-names-probe")]


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    files = seal_files()
    files["notes/HW-PRB-001/x.txt"] = "nothing\n"
    return load_corpus(seal_corpus(tmp_path / "corpus", files))


@pytest.mark.parametrize(("rel", "rule"), BROKEN)
def test_each_path_rule_decides_by_path(corpus: Corpus, rel: str, rule: str) -> None:
    names = resolve_session(corpus, "HW-PRB-001", "present").names
    broken = broken_path_rule(rel, names)
    assert broken is not None and broken.name == rule


@pytest.mark.parametrize("rel", ["src/retry.py", "docs/guide/other-probe.md", "notes/x.txt"])
def test_a_fold_and_other_paths_break_no_path_rule(corpus: Corpus, rel: str) -> None:
    assert broken_path_rule(rel, resolve_session(corpus, "HW-PRB-001", "present").names) is None


@pytest.mark.parametrize(("rel", "rule"), BROKEN)
def test_the_verification_refuses_by_the_same_table(corpus: Corpus, tmp_path: Path, rel: str,
                                                    rule: str) -> None:
    workspace = tmp_path / "ws"
    (workspace / rel).parent.mkdir(parents=True)
    (workspace / rel).write_text("nothing\n")
    session = resolve_session(corpus, "HW-PRB-001", "present")
    with pytest.raises(SealRefused) as caught:
        verify_workspace(corpus, session, workspace)
    assert caught.value.path == rel and caught.value.line is None
    assert broken_path_rule(rel, session.names) is not None


def test_a_batch_resolves_each_probe_once_for_all_its_arms(corpus: Corpus) -> None:
    plan = compose_plan(corpus, tier="campaign")
    resolved = resolve_sessions(corpus, plan.probes, plan.arm_specs)
    assert set(resolved.sessions) == {(p.id, a.arm) for p in plan.probes for a in plan.arm_specs}
    for probe in plan.probes:
        for arm in plan.arm_specs:
            session = resolved.of(probe.id, arm.arm)
            assert session.probe is probe and session.arm is arm  # the plan's, not recomputed
            assert session.mcp is corpus.mcp
        # one Names per probe, shared by its arms (one census, folds checked once)
        assert len({id(resolved.of(probe.id, a.arm).names) for a in plan.arm_specs}) == 1
    # one check of the host's grep for the whole batch, shared by every session's seal
    assert len({id(s.grep) for s in resolved.sessions.values()}) == 1
    with pytest.raises(LookupError, match="no resolved session"):
        resolved.of("HW-PRB-404", "present")


def test_a_fold_that_states_an_answer_refuses_at_resolution(tmp_path: Path) -> None:
    files = seal_files()
    files["src/retry.py"] = "# the answer is HW-DR-0052\n"
    corpus = load_corpus(seal_corpus(tmp_path / "c", files))
    plan = compose_plan(corpus, tier="campaign")
    with pytest.raises(SealRefused, match="states the declared answer"):
        resolve_sessions(corpus, plan.probes, plan.arm_specs)


def test_a_fold_whose_path_names_the_probe_is_kept(tmp_path: Path) -> None:
    files = seal_files()
    files["notes/HW-PRB-001/x.txt"] = "nothing\n"
    files[".headwater/probe.yml"] = probe_yml(
        folds={"HW-PRB-001": ["src/retry.py", "notes/HW-PRB-001/x.txt"]},
        answer_keys={"HW-PRB-001": [ANSWER_KEY]})
    corpus = load_corpus(seal_corpus(tmp_path / "c", files))
    names = resolve_session(corpus, "HW-PRB-001", "present").names
    assert broken_path_rule("notes/HW-PRB-001/x.txt", names) is None
