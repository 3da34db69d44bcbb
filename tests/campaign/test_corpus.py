"""load_corpus: probe.yml, the probe shelf, the ## Task rule, ids, untyped files (docs/plan.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from campaign._errors import CampaignError, CorpusError
from campaign.corpus._corpus import NO_LOCK_SOURCE, load_corpus
from campaign.corpus._markdown import task_of
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


def _corpus_with(tmp_path: Path, files: Mapping[str, str | bytes]) -> Path:
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


PROBE_FRONT = '---\n{"id": "HW-PRB-0001", "title": "T", "answers": [], "examines": []}\n---\n'


@pytest.mark.parametrize(
    ("body", "said"),
    [("\n# T\n\n### Task\nDo it.\n", "found `### Task` on line 7"),
     ("## task\nDo it.\n", "found `## task` on line 4"),
     ("## Tusk\nDo it.\n```\n## Task\n```\n", "the `## Task` on line 7 is inside a fenced code"),
     ("## Why\n\n## How\n", "the level-2 headings are `## Why` (line 4), `## How` (line 6)"),
     ("Just text.\n", "the body has no level-2 heading at all"),
     ("# T\n##Task\nDo it.\n", "found `##Task` on line 5, which is not a heading")],
    ids=["level-3", "lower-case", "fenced", "other-headings", "no-headings", "unspaced"],
)
def test_probe_without_task_section_says_what_it_found(tmp_path: Path, body: str,
                                                       said: str) -> None:
    """Line numbers are the file's: the front matter takes lines 1-3."""
    err = _error(_corpus_with(tmp_path, {"docs/probes/p1.md": PROBE_FRONT + body}))
    assert err.path == "docs/probes/p1.md" and "no `## Task` section" in str(err)
    assert said in str(err)


def test_empty_task_section_refused(tmp_path: Path) -> None:
    root = _corpus_with(tmp_path, {"docs/probes/p1.md": probe_doc("HW-PRB-0001", "T", task="  \n")})
    assert "empty" in str(_error(root))


def test_missing_probe_yml(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    (root / ".headwater/probe.yml").unlink()
    err = _error(root)
    assert err.path == ".headwater/probe.yml" and "missing" in str(err)


def test_bad_yaml_in_probe_yml_keeps_its_line_and_column(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {".headwater/probe.yml": "model: m\ntiers: [unclosed\n"}))
    assert err.path == ".headwater/probe.yml"
    lines = str(err).split("\n")
    # The flow sequence opens on line 2, column 8, and the text ends on line 3, column 1.
    assert "not valid YAML, at line 3, column 1: " in lines[0]
    assert lines[1] == "  while parsing a flow sequence (from line 2, column 8)"
    assert lines[2:] == ["    tiers: [unclosed", "           ^"]


ARMS_IN_WORDS = "present, absent, no-hook, no-skills, no-claude-md, mcp"
"""RC-14's arm vocabulary, in its order."""


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"tier": {}}, "unknown key 'tier' (the keys here are lock, tiers, tools, model, checker, "
                       "folds, answer_keys; a typo?)"),
        ({"tiers": {"campaign": {"arms": ["presnt"], "repetitions": 1}}},
         f"tiers.campaign.arms[0]: 'presnt' is not one of the allowed values ({ARMS_IN_WORDS})"),
        ({"tiers": {"nightly": {"arms": ["present"], "repetitions": 1}}},
         "the key 'nightly' of tiers is not one of the allowed values (regression, campaign, "
         "documentation)"),
        ({"tiers": {"campaign": {"arms": ["present"], "repetitions": 0}}},
         "tiers.campaign.repetitions must be at least 1, not 0"),
        ({"tiers": {"campaign": {"arms": ["present"], "repetitions": "two"}}},
         "tiers.campaign.repetitions must be a whole number, not a string 'two'"),
        ({"tiers": {"campaign": {"arms": [], "repetitions": 1}}},
         "tiers.campaign.arms must hold at least 1 entry, not 0"),
        ({"tiers": {"campaign": {"arms": ["present", "present"], "repetitions": 1}}},
         "tiers.campaign.arms: an arm is listed twice: present, present"),
        ({"tiers": {"campaign": {"arms": ["present"], "repetitions": 1, "repeat": 2}}},
         "unknown key 'tiers.campaign.repeat' (the keys here are arms, repetitions; a typo?)"),
        ({"tiers": ["campaign"]}, "tiers must be a mapping of keys to values, not a list"),
        ({"model": None}, "missing key 'model'"),
        ({"model": 5}, "model must be a string, not a number 5 (quote it in YAML"),
        ({"lock": "../x.lock"}, "lock: '../x.lock' is not a corpus-relative path"),
    ],
    ids=["typo-key", "bad-arm", "bad-tier", "zero-reps", "reps-not-int", "no-arms", "arm-twice",
         "nested-typo", "tiers-not-mapping", "no-model", "model-number", "lock-outside"],
)
def test_probe_yml_is_a_closed_key_set_explained_in_words(tmp_path: Path, change: dict[str, object],
                                                           said: str) -> None:
    err = _error(_corpus_with(tmp_path, {".headwater/probe.yml": probe_yml(**change)}))
    assert err.path == ".headwater/probe.yml" and said in str(err)
    assert "Input should" not in str(err) and "[key]" not in str(err)  # never pydantic's words


def test_several_problems_are_one_line_each(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {".headwater/probe.yml": probe_yml(model=None, tier={})}))
    assert str(err).split("\n")[0].endswith(": 2 problems:")
    assert sorted(str(err).split("\n")[1:]) == [
        "  - missing key 'model'",
        "  - unknown key 'tier' (the keys here are lock, tiers, tools, model, checker, folds, "
        "answer_keys; a typo?)"]


def test_duplicate_ids_name_both_files(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/b.md": doc("HW-DOC-0001", "again\n")}))
    assert err.path == "docs/b.md" and "docs/a.md" in str(err)


def test_probe_id_clashing_with_a_document(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/z.md": doc("HW-PRB-0001", "clash\n")}))
    assert "HW-PRB-0001" in str(err)


def test_document_with_front_matter_and_no_id_refused(tmp_path: Path) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/guide/x.md": "---\ntitle: Imported\n---\nText.\n"}))
    assert err.path == "docs/guide/x.md" and "no `id:`" in str(err)
    assert "without front matter it is an untyped file" in str(err)  # says the other way out


@pytest.mark.parametrize(
    ("front", "said"),
    [("id: 52", "`id: 52` is not an id"), ("id: 0052", "`id: 52` is not an id"),
     ("id: a b", "`id: 'a b'` is not an id"), ("id: -x", "`id: '-x'` is not an id")],
)
def test_malformed_document_id_refused_in_words(tmp_path: Path, front: str, said: str) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/x.md": f"---\n{front}\n---\n"}))
    assert said in str(err)
    if "52" in front:  # YAML 1.2 reads 0052 as the number 52: say how to keep it a string
        assert "quote it in YAML" in str(err)


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


def test_a_corpus_root_that_does_not_exist_is_named(tmp_path: Path) -> None:
    with pytest.raises(CampaignError) as caught:
        load_corpus(tmp_path / "nowhere")
    assert str(caught.value) == f"corpus {tmp_path / 'nowhere'}: does not exist"


def test_a_file_is_not_a_corpus_root(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        load_corpus(tmp_path / "f")
    assert str(caught.value).startswith(f"corpus {tmp_path / 'f'}: is not a directory")
    assert caught.value.path is None


def test_every_file_error_names_the_corpus_root(tmp_path: Path) -> None:
    root = _corpus_with(tmp_path, {"docs/b.md": doc("HW-DOC-0001", "again\n")})
    assert str(_error(root)).startswith(f"corpus {root}: docs/b.md: id 'HW-DOC-0001' is already")


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


UNTYPED: dict[str, str | bytes] = {
    "docs/guide/CLAUDE.md": "Rules for this folder.\n",
    "docs/README.md": "# Docs\n\nRead me first.\n",
    "docs/imported/page.md": "Imported page\n---\n\nA setext heading above, not front matter.\n",
    "docs/probes/README.md": "How the shelf works.\n",
    "docs/crlf.md": "\r\n---\r\nnot front matter: the first line is empty\r\n",
    "docs/latin1.md": "caf\xe9 in Latin-1\n".encode("latin-1"),
    "docs/rule.md": "----\nA thematic break, then caf\xe9 in Latin-1\n".encode("latin-1"),
}
"""Markdown under docs/ whose first line is not `---`: untyped, by the corpus layout rule."""


def test_markdown_without_front_matter_is_an_untyped_file(tmp_path: Path) -> None:
    root = _corpus_with(tmp_path, dict(UNTYPED))
    corpus = load_corpus(root)
    expected = sorted(UNTYPED, key=lambda p: p.encode("utf-8"))
    assert corpus.untyped == tuple(expected)
    for rel in UNTYPED:  # in the tree like every file, never a document
        assert corpus.files[rel] == digest_bytes((root / rel).read_bytes())
        assert rel not in corpus.documents.values()
    assert corpus.ids == {"HW-PRB-0001", "HW-DOC-0001"}
    assert list(corpus.probes) == ["HW-PRB-0001"]  # docs/probes/README.md is not a probe


def test_untyped_files_change_the_tree(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    before = load_corpus(root).tree
    write_files(root, {"docs/README.md": "Read me.\n"})
    assert load_corpus(root).tree != before


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("---\ntitle: never closed\n", "the front matter opens with `---` on line 1 and no later "
                                       "line `---` closes it"),
        ("---\r\nid: X\r\n", "no later line `---` closes it"),
        ("---\nid: X\ntitle: [unclosed\n---\n", "the front matter is not valid YAML, at line 4, "
                                                "column 1: "),
        ("---\nid: X\n\ttitle: tab\n---\n", "the front matter is not valid YAML, at line 3, "
                                            "column 1: found character '\\t'"),
        ("---\n- a\n- b\n---\n", "the front matter must be a YAML mapping (key: value lines), and "
                                 "it is a YAML list"),
        ("---\n---\nbody\n", "the front matter must be a YAML mapping (key: value lines), and it "
                             "is empty"),
        (b"---\nid: caf\xe9\n---\n", "not UTF-8 text (byte 12, line 2"),
        (b"\xef\xbb\xbf---\nid: FR-0007\n---\n", "starts with a UTF-8 byte-order mark before "
                                                "its `---` line"),
    ],
    ids=["never-closed", "never-closed-crlf", "bad-yaml", "tab", "a-list", "empty", "latin-1",
         "byte-order-mark"],
)
def test_front_matter_that_opens_and_is_broken_is_an_error(tmp_path: Path, text: str | bytes,
                                                           said: str) -> None:
    err = _error(_corpus_with(tmp_path, {"docs/guide/x.md": text}))
    assert err.path == "docs/guide/x.md" and said in str(err)


def test_a_probe_front_matter_error_names_the_file_line(tmp_path: Path) -> None:
    root = _corpus_with(tmp_path, {"docs/probes/p1.md": (
        "---\nid: HW-PRB-0001\ntitle: T\nanswers: []\nexamines: [docs/a.md\n---\n## Task\nx\n")})
    err = _error(root)
    # the flow sequence opens on file line 5, column 11; the front matter ends before line 6
    assert err.path == "docs/probes/p1.md" and "line 6, column 1" in str(err)
    assert "(from line 5, column 11)" in str(err)
