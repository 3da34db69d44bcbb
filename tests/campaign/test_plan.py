"""compose_plan, dump_plan, load_plan_file (docs/plan.md, the six identity members; `plan`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from campaign._errors import PlanError, TreeMismatch, UnknownTier
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan, dump_plan, load_plan_file
from tests.campaign.corpora import minimal_corpus, probe_doc, seal_corpus, write_files

EXAMPLE = Path(__file__).resolve().parents[2] / "demo" / "example" / "corpus"


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _lines_digest(entries: dict[str, bytes]) -> str:
    """The tree formula, written from docs/plan.md with hashlib only."""
    ordered = sorted(entries, key=lambda p: p.encode("utf-8"))
    return _sha("".join(f"{_sha(entries[p])} {p}\n" for p in ordered).encode("utf-8"))


def test_plan_digests_by_hand_on_a_three_file_corpus(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    write_files(root, {".git/HEAD": "ref: refs/heads/main\n"})  # not part of the tree
    raw = {p: (root / p).read_bytes()
           for p in (".headwater/probe.yml", "docs/probes/p1.md", "docs/a.md")}
    plan = compose_plan(load_corpus(root), tier="campaign", seed=7)
    assert plan.tree == _lines_digest(raw)
    assert plan.lock == _sha(raw[".headwater/probe.yml"])
    assert plan.lock_source == "probe.yml (no lock file)"
    assert plan.selection == _sha(b"HW-PRB-0001")
    assert plan.read_set == _lines_digest({p: raw[p] for p in ("docs/probes/p1.md", "docs/a.md")})
    assert plan.seed == 7 and plan.runner_version.startswith("headwater-campaign ")
    assert (plan.arms, plan.repetitions, plan.session_count) == (("present", "absent"), 2, 4)
    assert [(f.path, f.digest) for f in plan.read_set_files] == [
        ("docs/a.md", _sha(raw["docs/a.md"])),
        ("docs/probes/p1.md", _sha(raw["docs/probes/p1.md"])),
    ]


def test_selection_is_sorted_ids_joined_by_newline(tmp_path: Path) -> None:
    plan = compose_plan(load_corpus(seal_corpus(tmp_path / "c")), tier="regression")
    assert plan.selection == _sha(b"HW-PRB-001\nHW-PRB-0012\nHW-PRB-002")
    assert [p.id for p in plan.probes] == ["HW-PRB-001", "HW-PRB-0012", "HW-PRB-002"]
    assert plan.session_count == 3 * 1 * 1


def test_unknown_tier_lists_the_known_ones(tmp_path: Path) -> None:
    corpus = load_corpus(minimal_corpus(tmp_path / "c"))
    with pytest.raises(UnknownTier) as caught:
        compose_plan(corpus, tier="documentation")
    assert caught.value.known == ("campaign", "regression") and caught.value.exit_status == 2
    assert f"corpus {corpus.root}: .headwater/probe.yml declares no such tier (it declares: " \
        "campaign, regression)" in str(caught.value)


TASK = "- starts with a dash: `x`  \n\n\tindented \"quoted\" 'single' # not a comment\nünïcode: ok"
CRLF_TASK = "  leading spaces\r\nthen CRLF\r\nend"


@pytest.fixture
def plan_and_corpus(tmp_path: Path) -> tuple[Plan, Path]:
    root = seal_corpus(tmp_path / "c")
    write_files(root, {"docs/probes/client-retries.md": probe_doc(
        "HW-PRB-002", "How many retries does the client make", answers=["three", "five"],
        examines=["docs/decisions/HW-DR-0052.md"], task=TASK + "\n")})
    write_files(root, {"docs/probes/hook-log.md": probe_doc(
        "HW-PRB-0012", "Which hook logs intents", task=CRLF_TASK + "\r\n")})
    plan = compose_plan(load_corpus(root), tier="campaign", seed=3)
    assert (plan.probes[1].task, plan.probes[2].task) == (CRLF_TASK, TASK)
    return plan, root


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_plan_file_round_trip(plan_and_corpus: tuple[Plan, Path], tmp_path: Path,
                              fmt: str) -> None:
    plan, root = plan_and_corpus
    path = tmp_path / f"plan.{fmt}"
    text = dump_plan(plan, fmt)  # type: ignore[arg-type]
    path.write_bytes(text.encode("utf-8"))
    assert load_plan_file(path, load_corpus(root)) == plan
    # the file itself carries every value byte for byte (tasks included), not only the loader
    assert YAML(typ="safe", pure=True).load(text) == plan.model_dump(mode="json")


def test_yaml_plan_writes_multi_line_tasks_as_block_scalars(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    write_files(root, {"docs/probes/p1.md": probe_doc("HW-PRB-0001", "T", task="One.\nTwo.\n")})
    plan = compose_plan(load_corpus(root), tier="campaign")
    text = dump_plan(plan, "yaml")
    assert "task: |-\n    One.\n    Two.\n" in text
    path = tmp_path / "plan.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_plan_file(path, load_corpus(root)) == plan


def test_plan_file_with_another_tree_is_refused(plan_and_corpus: tuple[Plan, Path],
                                                tmp_path: Path) -> None:
    plan, root = plan_and_corpus
    path = tmp_path / "plan.yaml"
    path.write_text(dump_plan(plan, "yaml"), encoding="utf-8")
    write_files(root, {"notes/new.txt": "a new file moves the tree\n"})
    corpus = load_corpus(root)
    with pytest.raises(TreeMismatch) as caught:
        load_plan_file(path, corpus)
    assert caught.value.exit_status == 2
    assert plan.tree in str(caught.value) and corpus.tree in str(caught.value)


def test_plan_file_may_select_fewer_probes(plan_and_corpus: tuple[Plan, Path],
                                           tmp_path: Path) -> None:
    plan, root = plan_and_corpus
    data = json.loads(dump_plan(plan, "json"))
    data["probes"] = data["probes"][:1]
    data["selection"] = _sha(b"HW-PRB-001")
    data["read_set_files"] = [f for f in data["read_set_files"]
                              if f["path"] in {"docs/probes/retry-budget.md",
                                               "docs/decisions/HW-DR-0052.md"}]
    data["read_set"] = _lines_digest({f: (root / f).read_bytes() for f in
                                      ("docs/probes/retry-budget.md",
                                       "docs/decisions/HW-DR-0052.md")})
    data["session_count"] = 1 * 2 * 2
    data["probes"][0]["task"] = "a stale task text is replaced by the corpus's"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded = load_plan_file(path, load_corpus(root))
    assert [p.id for p in loaded.probes] == ["HW-PRB-001"] and loaded.session_count == 4
    assert loaded.probes[0].task == plan.probes[0].task


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda d: d.update(seeds=1), "unknown key 'seeds'"),
        (lambda d: d.pop("harness"), "missing key 'harness'"),
        (lambda d: d.update(selection="sha256:" + "0" * 64), "selection sha256:000"),
        (lambda d: d.update(session_count=5), "session_count 5"),
        (lambda d: d["probes"][0].update(id="HW-PRB-404"), "HW-PRB-404"),
        (lambda d: d.update(tree="md5:abc"), "tree"),
        (lambda d: d.update(seed=-3), "seed must be at least 0, not -3"),
    ],
    ids=["typo-key", "missing-key", "selection", "count", "unknown-probe", "bad-digest",
         "negative-seed"],
)
def test_bad_plan_file_is_a_plan_error(plan_and_corpus: tuple[Plan, Path], tmp_path: Path,
                                       edit: object, named: str) -> None:
    plan, root = plan_and_corpus
    data = json.loads(dump_plan(plan, "json"))
    edit(data)  # type: ignore[operator]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PlanError) as caught:
        load_plan_file(path, load_corpus(root))
    assert named in str(caught.value) and str(path) in str(caught.value)


def test_text_plan_shows_members_count_tasks_and_read_set(
        plan_and_corpus: tuple[Plan, Path]) -> None:
    plan, _ = plan_and_corpus
    text = dump_plan(plan, "text")
    for member in ("tree", "lock", "selection", "read_set", "seed", "harness"):
        assert f"  {member} " in text
    assert "3 probes x 2 arms x 2 repetitions = 12" in text.splitlines()[1]
    assert "    \tindented \"quoted\"" in text and "probe HW-PRB-002: How many" in text
    for f in plan.read_set_files:
        assert f"  {f.digest} {f.path}\n" in text


@pytest.mark.skipif(not EXAMPLE.is_dir(), reason="the bundled example corpus is not written yet")
def test_example_corpus_plan_round_trips(tmp_path: Path) -> None:
    corpus = load_corpus(EXAMPLE)
    plan = compose_plan(corpus, tier="campaign")
    assert plan.session_count == 4 * 2 * 2
    path = tmp_path / "plan.yaml"
    path.write_text(dump_plan(plan, "yaml"), encoding="utf-8")
    assert load_plan_file(path, corpus) == plan


UNTYPED = {"docs/guide/CLAUDE.md": "Folder rules.\n", "docs/README.md": "Read me.\n",
           "docs/probes/README.md": "How the shelf works.\n"}


@pytest.fixture
def untyped_root(tmp_path: Path) -> Path:
    return write_files(minimal_corpus(tmp_path / "c"), UNTYPED)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_plan_lists_the_untyped_files_sorted(untyped_root: Path, fmt: str) -> None:
    text = dump_plan(compose_plan(load_corpus(untyped_root), tier="campaign"), fmt)  # type: ignore[arg-type]
    data = json.loads(text) if fmt == "json" else YAML(typ="safe", pure=True).load(text)
    assert data["untyped_files"] == ["docs/README.md", "docs/guide/CLAUDE.md",
                                     "docs/probes/README.md"]  # sorted by path bytes


def test_text_plan_counts_the_untyped_files(untyped_root: Path) -> None:
    text = dump_plan(compose_plan(load_corpus(untyped_root), tier="campaign"), "text")
    assert "\nuntyped files: 3 (Markdown under docs/ without front matter" in text
    assert "  docs/probes/README.md: on the shelf without front matter, so not a probe\n" in text


def test_a_plan_file_without_the_untyped_files_is_refused_saying_why(untyped_root: Path,
                                                                     tmp_path: Path) -> None:
    data = json.loads(dump_plan(compose_plan(load_corpus(untyped_root), tier="campaign"), "json"))
    del data["untyped_files"]
    path = tmp_path / "old-plan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PlanError) as caught:
        load_plan_file(path, load_corpus(untyped_root))
    assert caught.value.exit_status == 2
    assert "missing key 'untyped_files', the corpus's untyped files" in str(caught.value)
    assert "compose it again" in str(caught.value) and str(path) in str(caught.value)


def test_a_plan_file_with_other_untyped_files_is_refused(untyped_root: Path,
                                                         tmp_path: Path) -> None:
    data = json.loads(dump_plan(compose_plan(load_corpus(untyped_root), tier="campaign"), "json"))
    data["untyped_files"] = ["docs/README.md"]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PlanError, match="untyped_files differs from the corpus's untyped files"):
        load_plan_file(path, load_corpus(untyped_root))


def test_a_plan_file_yaml_error_keeps_its_line_and_column(untyped_root: Path,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("tree: x\nseed: [0\n", encoding="utf-8")
    with pytest.raises(PlanError) as caught:
        load_plan_file(path, load_corpus(untyped_root))
    assert "not valid YAML, at line 3, column 1: " in str(caught.value)
    assert "  while parsing a flow sequence (from line 2, column 7)" in str(caught.value)
