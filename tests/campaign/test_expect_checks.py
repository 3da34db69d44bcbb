"""`expect:` checked against the corpus (docs/expectations.md): plan and run refuse, by name.

Each rule is the one docs/expectations.md states; the corpus is `seal_corpus`'s, whose probe
HW-PRB-002 (docs/probes/client-retries.md) answers ``three`` or ``five``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from campaign.corpus._corpus import load_corpus
from campaign.expect import ExpectationsRefused, checked_expectations
from campaign.plan._plan import compose_plan, dump_plan, load_plan_file
from tests.campaign.corpora import ANSWER_KEY, probe_yml, seal_files, write_files

PROBE = "docs/probes/client-retries.md"


def _probe_with(expect: Any) -> str:
    front = json.dumps({"id": "HW-PRB-002", "title": "How many retries does the client make",
                        "answers": ["three", "five"],
                        "examines": ["docs/decisions/HW-DR-0052.md"], "expect": expect})
    return f"---\n{front}\n---\n\n# How many retries\n\n## Task\n\nCount them.\n"


def _corpus(tmp_path: Path, expect: Any) -> Path:
    files = seal_files()
    files[PROBE] = _probe_with(expect)
    return write_files(tmp_path / "c", files)


def _refusal(tmp_path: Path, expect: Any) -> str:
    corpus = load_corpus(_corpus(tmp_path, expect))
    with pytest.raises(ExpectationsRefused) as caught:
        compose_plan(corpus, tier="campaign")
    assert caught.value.exit_status == 2
    assert caught.value.path == PROBE  # the message names the probe file
    return str(caught.value)


def test_well_formed_expectations_pass_and_plan_lists_them(tmp_path: Path) -> None:
    expect = {"answered": "three", "opened": ["docs/decisions/HW-DR-0052.md", "CLAUDE.md"],
              "not_opened": ["docs/decisions/HW-DR-0053.md"], "cites": ["HW-DR-0052"],
              "clean": True}
    corpus = load_corpus(_corpus(tmp_path, expect))
    plan = compose_plan(corpus, tier="campaign")
    found = checked_expectations(corpus, [p.id for p in plan.probes])
    assert set(found) == {"HW-PRB-002"} and found["HW-PRB-002"].answered == "three"
    text = dump_plan(plan, "text", found)
    block = text[text.index("probe HW-PRB-002"):]
    assert "    answered: three\n" in block
    assert "    opened: docs/decisions/HW-DR-0052.md, CLAUDE.md\n" in block
    assert "    clean: true\n" in block
    assert "expect: none declared" in text[text.index("probe HW-PRB-001"):]
    for fmt in ("yaml", "json"):  # the plan file, which the supervisor reads, never holds them
        assert "answered" not in dump_plan(plan, fmt, found)


def test_answered_must_be_a_declared_answer_in_its_declared_form(tmp_path: Path) -> None:
    message = _refusal(tmp_path, {"answered": "seven"})
    assert "answered 'seven' is not one of the probe's answers ('three', 'five')" in message


def test_answered_with_the_words_of_an_answer_names_the_one_meant(tmp_path: Path) -> None:
    # RC-13 compares word sets and writes the declared form: "Three." has the words of "three".
    message = _refusal(tmp_path, {"answered": "Three."})
    assert "has the words of the declared answer 'three'" in message


def test_answered_when_the_probe_declares_no_answers(tmp_path: Path) -> None:
    files = seal_files()
    files[PROBE] = _probe_with({"answered": "three"}).replace('"answers": ["three", "five"]',
                                                              '"answers": []')
    with pytest.raises(ExpectationsRefused, match="declares no `answers`"):
        compose_plan(load_corpus(write_files(tmp_path / "c", files)), tier="campaign")


def test_opened_must_be_a_file_of_the_corpus(tmp_path: Path) -> None:
    message = _refusal(tmp_path, {"opened": ["docs/missing.md"]})
    assert "expect: opened: 'docs/missing.md' is not a file of the corpus" in message


def test_an_untyped_file_can_be_expected(tmp_path: Path) -> None:
    # CLAUDE.md and src/retry.py have no front matter: files of the tree all the same.
    corpus = load_corpus(_corpus(tmp_path, {"opened": ["CLAUDE.md"],
                                            "not_opened": ["src/retry.py"]}))
    assert compose_plan(corpus, tier="campaign").probes


@pytest.mark.parametrize(("path", "why"), [
    (PROBE, "the probe shelf docs/probes/ never enters a workspace"),
    (".headwater/probe.yml", ".headwater/ never enters a workspace"),
])
def test_a_path_no_workspace_holds_is_refused(tmp_path: Path, path: str, why: str) -> None:
    message = _refusal(tmp_path, {"not_opened": [path]})
    assert f"expect: not_opened: {path!r} is never in a session's workspace ({why})" in message


def test_an_answer_key_of_the_probe_is_refused(tmp_path: Path) -> None:
    files = seal_files()
    files[PROBE] = _probe_with({"opened": [ANSWER_KEY]})
    files[".headwater/probe.yml"] = probe_yml(folds={"HW-PRB-001": ["src/retry.py"]},
                                              answer_keys={"HW-PRB-002": [ANSWER_KEY]})
    corpus = load_corpus(write_files(tmp_path / "c", files))
    assert corpus.answer_keys_of("HW-PRB-002") == (ANSWER_KEY,)
    with pytest.raises(ExpectationsRefused, match="an answer key of the probe"):
        compose_plan(corpus, tier="campaign")


def test_another_probes_answer_key_can_be_expected(tmp_path: Path) -> None:
    # The answer key of HW-PRB-001 stays in HW-PRB-002's workspaces.
    assert compose_plan(load_corpus(_corpus(tmp_path, {"not_opened": [ANSWER_KEY]})),
                        tier="campaign").probes


def test_a_path_in_both_opened_and_not_opened(tmp_path: Path) -> None:
    message = _refusal(tmp_path, {"opened": ["CLAUDE.md"], "not_opened": ["CLAUDE.md"]})
    assert "'CLAUDE.md' is in both opened and not_opened" in message


def test_cites_must_be_document_ids(tmp_path: Path) -> None:
    message = _refusal(tmp_path, {"cites": ["HW-DR-0099"]})
    assert "cites: 'HW-DR-0099' is not the id of a document of the corpus" in message


def test_unknown_key_is_refused_by_name(tmp_path: Path) -> None:
    message = _refusal(tmp_path, {"answerd": "three"})
    assert "answerd" in message


def test_a_plan_file_is_checked_too(tmp_path: Path) -> None:
    root = _corpus(tmp_path, {"answered": "three"})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(dump_plan(compose_plan(load_corpus(root), tier="campaign"), "yaml"))
    (root / PROBE).write_text(_probe_with({"answered": "seven"}))
    with pytest.raises(ExpectationsRefused, match="'seven' is not one of"):
        load_plan_file(_replan(plan_file, root), load_corpus(root))


def _replan(plan_file: Path, root: Path) -> Path:
    """``plan_file`` with its ``tree`` set to what ``root`` has now: the expectations are
    checked once the tree matches, before the other members are compared."""
    yaml = YAML()
    data = yaml.load(plan_file.read_text())
    data["tree"] = load_corpus(root).tree
    with plan_file.open("w") as fp:
        yaml.dump(data, fp)
    return plan_file


@pytest.mark.parametrize("expect", [
    {"answered": None},
    {"opened": None},
    {"clean": None},
    {"answered": "three", "cites": None},  # beside a real key, the null one is not dropped
    {"answered": None, "opened": None, "not_opened": None, "cites": None, "clean": None},
])
def test_a_null_value_is_refused(tmp_path: Path, expect: dict[str, Any]) -> None:
    message = _refusal(tmp_path, expect)
    null_key = next(key for key, value in expect.items() if value is None)
    assert f"expect: {null_key}: a null value declares nothing: give a value or leave the key " \
           "out" in message


@pytest.mark.parametrize(("value", "shown"), [(False, "false"), ("yes", '"yes"'),
                                              ("true", '"true"')])
def test_clean_takes_only_true(tmp_path: Path, value: object, shown: str) -> None:
    message = _refusal(tmp_path, {"clean": value})
    assert f"expect: clean: {shown} is refused: clean takes only `true` (every produced " \
           "artifact has `findings: []`); leave the key out to expect nothing of findings" \
           in message


def test_a_key_that_is_not_a_name_is_refused(tmp_path: Path) -> None:
    files = seal_files()  # JSON front matter cannot hold an integer key; YAML can
    files[PROBE] = ("---\nid: HW-PRB-002\ntitle: How many retries does the client make\n"
                    "answers: [three, five]\nexamines: [docs/decisions/HW-DR-0052.md]\n"
                    "expect: {1: x}\n---\n\n# How many retries\n\n## Task\n\nCount them.\n")
    with pytest.raises(ExpectationsRefused) as caught:
        compose_plan(load_corpus(write_files(tmp_path / "c", files)), tier="campaign")
    assert "expect: the key 1 is not a name: the keys of `expect:` are the five names " \
           "answered, opened, not_opened, cites, clean" in str(caught.value)


@pytest.mark.parametrize(("key", "entry"), [("opened", "CLAUDE.md"),
                                            ("not_opened", "src/retry.py"),
                                            ("cites", "HW-DR-0052")])
def test_an_entry_listed_twice_is_refused(tmp_path: Path, key: str, entry: str) -> None:
    message = _refusal(tmp_path, {key: [entry, entry]})
    assert f"expect: {key}: {entry!r} is listed twice" in message


@pytest.mark.parametrize("probe_id", ["HW-PRB-001", "HW-PRB-002"])  # another probe, its own
def test_cites_of_a_probe_id_is_refused(tmp_path: Path, probe_id: str) -> None:
    message = _refusal(tmp_path, {"cites": [probe_id]})
    assert f"cites: {probe_id!r} is a probe's id, which no session's workspace holds as a " \
           "document" in message
