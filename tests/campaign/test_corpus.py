"""load_corpus: probe.yml, the probe shelf, the ## Task rule, ids (DESIGN.md, corpus layout)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from campaign._corpus import NO_LOCK_SOURCE, load_corpus, task_of
from campaign._errors import CampaignError, CorpusError
from recorder._digest import digest_bytes
from tests.campaign.corpora import (
    doc,
    minimal_corpus,
    probe_doc,
    probe_yml,
    seal_corpus,
    seal_files,
    write_files,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "demo" / "example" / "corpus"


def _corpus_with(tmp_path: Path, files: dict[str, str]) -> Path:
    root = minimal_corpus(tmp_path / "c")
    return write_files(root, files)


def _error(root: Path) -> CorpusError:
    with pytest.raises(CorpusError) as caught:
        load_corpus(root)
    assert caught.value.exit_status == 2
    return caught.value


def test_load_minimal_corpus(tmp_path: Path) -> None:
    corpus = load_corpus(minimal_corpus(tmp_path / "c"))
    assert list(corpus.probes) == ["HW-PRB-0001"]
    probe = corpus.probes["HW-PRB-0001"]
    assert (probe.title, probe.path, probe.task) == (
        "Where is the budget", "docs/probes/p1.md", "Do the task.")
    assert probe.answers == ("budget",) and probe.examines == ("docs/a.md",)
    assert corpus.ids == {"HW-PRB-0001", "HW-DOC-0001"}
    assert corpus.files["docs/a.md"] == digest_bytes((tmp_path / "c/docs/a.md").read_bytes())


def test_ids_cover_every_document_probes_included(tmp_path: Path) -> None:
    corpus = load_corpus(seal_corpus(tmp_path / "c"))
    assert corpus.ids == {
        "HW-PRB-001", "HW-PRB-002", "HW-PRB-0012", "HW-DR-0052", "HW-DR-0053", "HW-GD-0001",
        "HW-GD-0002", "HW-GD-0003", "HW-GD-0004", "HW-GD-0005", "HW-RUN-0001", "HW-RUN-0002",
    }


def test_git_is_outside_the_tree_and_symlinks_are_irregular(tmp_path: Path) -> None:
    root = seal_corpus(tmp_path / "c")
    os.symlink("/etc/hostname", root / "link.txt")
    corpus = load_corpus(root)
    assert not [p for p in corpus.files if p.startswith(".git")]
    assert "link.txt" not in corpus.files and corpus.irregular == ("link.txt",)


BODY = (
    "# Title\n\nPreamble.\n\n## Task\n\n\n"
    "- starts with a dash  \n"
    "\n"
    "### A sub-heading stays\n"
    "```sh\n# a shell comment, not a heading\n## neither is this\n```\n"
    "\tlast line\n"
    "   \n\n"
    "## Why\n\nCommentary that is not prompt.\n"
)


def test_task_is_the_section_word_for_word_with_blank_edges_stripped() -> None:
    assert task_of(BODY) == (
        "- starts with a dash  \n\n### A sub-heading stays\n"
        "```sh\n# a shell comment, not a heading\n## neither is this\n```\n\tlast line"
    )


@pytest.mark.parametrize(
    ("body", "task"),
    [
        ("## Task\nOne line.", "One line."),
        ("## Task\r\n\r\nLine one.\r\nLine two.\r\n\r\n# Next\r\n", "Line one.\r\nLine two."),
        ("## Task\nA\n# Level one ends it\nB\n", "A"),
        ("## Task   \nA\n#### Deeper stays\nB\n", "A\n#### Deeper stays\nB"),
        ("## Tasks\nno\n## Task\nyes\n", "yes"),
    ],
    ids=["eof", "crlf", "level-1-ends", "deeper-kept", "exact-heading"],
)
def test_task_boundaries(body: str, task: str) -> None:
    assert task_of(body) == task


def test_probe_without_task_section_names_the_file(tmp_path: Path) -> None:
    root = _corpus_with(tmp_path, {"docs/probes/p1.md": (
        '---\n{"id": "HW-PRB-0001", "title": "T", "answers": [], "examines": []}\n---\n'
        "## Tusk\nDo it.\n```\n## Task\n```\n")})
    err = _error(root)
    assert err.path == "docs/probes/p1.md" and "## Task" in str(err)


def test_empty_task_section_refused(tmp_path: Path) -> None:
    root = _corpus_with(tmp_path, {"docs/probes/p1.md": probe_doc("HW-PRB-0001", "T", task="  \n")})
    assert "empty" in str(_error(root))


def test_missing_probe_yml(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    (root / ".headwater/probe.yml").unlink()
    err = _error(root)
    assert err.path == ".headwater/probe.yml" and "missing" in str(err)


def test_bad_yaml_in_probe_yml(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {".headwater/probe.yml": "tiers: [unclosed\n"}))
    assert err.path == ".headwater/probe.yml" and "invalid YAML" in str(err)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"tier": {}}, "unknown key 'tier'"),
        ({"tiers": {"campaign": {"arms": ["presnt"], "repetitions": 1}}}, "tiers.campaign.arms.0"),
        ({"tiers": {"nightly": {"arms": ["present"], "repetitions": 1}}}, "nightly"),
        ({"tiers": {"campaign": {"arms": ["present"], "repetitions": 0}}}, "repetitions"),
        ({"tiers": {"campaign": {"arms": ["present", "present"], "repetitions": 1}}}, "twice"),
        ({"model": None}, "missing key 'model'"),
    ],
    ids=["typo-key", "bad-arm", "bad-tier", "zero-reps", "arm-twice", "no-model"],
)
def test_probe_yml_is_a_closed_key_set(tmp_path: Path, change: dict[str, object],
                                       named: str) -> None:
    err = _error(_corpus_with(tmp_path, {".headwater/probe.yml": probe_yml(**change)}))
    assert err.path == ".headwater/probe.yml" and named in str(err)


def test_duplicate_ids_name_both_files(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/b.md": doc("HW-DOC-0001", "again\n")}))
    assert err.path == "docs/b.md" and "docs/a.md" in str(err)


def test_probe_id_clashing_with_a_document(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/z.md": doc("HW-PRB-0001", "clash\n")}))
    assert "HW-PRB-0001" in str(err)


def test_document_without_id_refused(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/guide/x.md": "No front matter.\n"}))
    assert err.path == "docs/guide/x.md" and "id" in str(err)


def test_examines_path_must_exist(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/probes/p1.md": probe_doc(
        "HW-PRB-0001", "T", examines=["docs/gone.md"])}))
    assert err.path == "docs/probes/p1.md" and "docs/gone.md" in str(err)


def test_probe_front_matter_needs_its_four_keys(tmp_path: Path) -> None:
    root = _corpus_with(tmp_path, {"docs/probes/p1.md": (
        '---\n{"id": "HW-PRB-0001", "title": "T", "answers": []}\n---\n## Task\nDo.\n')})
    assert "missing key 'examines'" in str(_error(root))


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"folds": {"HW-PRB-9999": ["src/x.py"]}}, "HW-PRB-9999"),
        ({"answer_keys": {"HW-PRB-9999": ["docs/a.md"]}}, "HW-PRB-9999"),
        ({"folds": {"HW-PRB-0001": ["src/missing.py"]}}, "src/missing.py"),
        ({"answer_keys": {"HW-PRB-0001": ["docs/missing.md"]}}, "docs/missing.md"),
        ({"folds": {"HW-PRB-0001": ["docs/a.md"]}}, "outside docs/"),
        ({"lock": ".headwater/missing.lock"}, "missing.lock"),
    ],
    ids=["fold-unknown-probe", "key-unknown-probe", "fold-missing", "key-missing",
         "fold-in-docs", "lock-missing"],
)
def test_declarations_must_name_probes_and_files(tmp_path: Path, change: dict[str, object],
                                                 named: str) -> None:
    err = _error(_corpus_with(tmp_path, {".headwater/probe.yml": probe_yml(**change)}))
    assert err.path == ".headwater/probe.yml" and named in str(err)


def test_lock_defaults_to_taxonomy_lock_else_probe_yml(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    corpus = load_corpus(root)
    assert corpus.lock_source == NO_LOCK_SOURCE
    assert corpus.lock == digest_bytes((root / ".headwater/probe.yml").read_bytes())
    write_files(root, {".headwater/taxonomy.lock": "v1\n"})
    corpus = load_corpus(root)
    assert (corpus.lock, corpus.lock_source) == (digest_bytes(b"v1\n"), ".headwater/taxonomy.lock")


def test_corpus_errors_are_campaign_errors(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match="not a directory"):
        load_corpus(tmp_path / "nowhere")


def test_seal_corpus_fixture_is_valid(tmp_path: Path) -> None:
    files = seal_files()
    corpus = load_corpus(seal_corpus(tmp_path / "c", files))
    assert corpus.folds_of("HW-PRB-001") == ("src/retry.py",)
    assert json.loads(str(files[".headwater/probe.yml"]))["model"] == corpus.config.model


@pytest.mark.skipif(not EXAMPLE.is_dir(), reason="the bundled example corpus is not written yet")
def test_example_corpus_loads() -> None:
    corpus = load_corpus(EXAMPLE)
    assert list(corpus.probes) == [f"HW-PRB-000{i}" for i in range(1, 5)]
    assert corpus.lock_source == ".headwater/taxonomy.lock"
    assert all(p.task and "## " not in p.task for p in corpus.probes.values())
