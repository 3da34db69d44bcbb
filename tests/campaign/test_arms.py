"""Arms (docs/arms.md): each arm's exact removals, its identity, and arms that change nothing.

Expected sets are written from the arm table of docs/arms.md over `_full_corpus`,
a corpus that has every component.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaign._errors import ArmError, PlanError
from campaign.batch._builder import ArmTranscript, arm_tools_and_identity
from campaign.corpus._corpus import Corpus, load_corpus
from campaign.plan._arms import (
    ARMS,
    NOTHING,
    apply_arm,
    arm_effect,
    arm_layer_digest,
    arm_spec,
    arms_without_effect,
    is_layer_path,
    mcp_servers,
)
from campaign.plan._plan import compose_plan, dump_plan, load_plan_file
from campaign.seal import resolve_session
from campaign.seal._seal import SealResult, seal_workspace
from recorder import McpConfigError
from tests.campaign.corpora import SETTINGS, probe_yml, seal_files, write_files

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("Read", "Grep", "Glob")
MCP = {"mcpServers": {"docs-search": {"command": "/usr/bin/python3", "args": ["s.py"]},
                      "tickets": {"command": "/usr/bin/true"}}}
CLAUDE_MDS = {"CLAUDE.md", "CLAUDE.local.md", "pkg/sub/CLAUDE.md"}
LAYER = CLAUDE_MDS | {".claude/settings.json", ".claude/settings.local.json",
                      ".claude/hooks/log.sh", ".claude/skills/style/SKILL.md",
                      ".claude/commands/review.md", ".mcp.json"}
EXPECTED: dict[str, dict[str, str]] = {
    "present": {},
    "absent": dict.fromkeys(LAYER, "file"),
    "no-hook": {".claude/hooks/log.sh": "file", ".claude/settings.local.json": "file",
                ".claude/settings.json": "edit"},
    "no-skills": {".claude/skills/style/SKILL.md": "file"},
    "no-claude-md": dict.fromkeys(CLAUDE_MDS, "file"),
    "mcp": {},
}
"""Arm -> what the arm itself removes ("file") or rewrites ("edit"), from the arm table."""


def _full_files() -> dict[str, str | bytes]:
    files = seal_files()
    files.update({
        ".claude/settings.local.json": json.dumps({"hooks": {"Stop": []}}) + "\n",
        ".claude/commands/review.md": "Review the diff.\n",
        ".mcp.json": json.dumps(MCP) + "\n",
    })
    return files


def _full_corpus(root: Path, drop: tuple[str, ...] = (), **over: str) -> Corpus:
    files = {k: v for k, v in _full_files().items() if not k.startswith(drop)}
    files.update({k.replace("__", "/"): v for k, v in over.items()})
    return load_corpus(write_files(root, files))


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    return _full_corpus(tmp_path / "corpus")


def _arm_changes(result: SealResult) -> dict[str, str]:
    return {r.path: r.kind for r in result.removals if "(arm " in r.reason}


@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("probe", ["HW-PRB-001", "HW-PRB-002"])
def test_each_arm_changes_exactly_its_component(corpus: Corpus, tmp_path: Path, arm: str,
                                                probe: str) -> None:
    result = seal_workspace(corpus, resolve_session(corpus, probe, arm), out=tmp_path / "ws")
    assert _arm_changes(result) == EXPECTED[arm]
    present = seal_workspace(corpus, resolve_session(corpus, probe, "present"), out=tmp_path / "p")
    gone = {p for p, kind in EXPECTED[arm].items() if kind == "file"}
    assert set(result.manifest) == set(present.manifest) - gone
    same = set(result.manifest) - set(EXPECTED[arm])
    assert {p: result.manifest[p] for p in same} == {p: present.manifest[p] for p in same}


def test_no_hook_keeps_every_other_setting(corpus: Corpus, tmp_path: Path) -> None:
    seal_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "no-hook"), out=tmp_path / "ws")
    settings = json.loads((tmp_path / "ws/.claude/settings.json").read_text())
    assert settings == {k: v for k, v in SETTINGS.items() if k != "hooks"}


def test_absent_leaves_no_empty_layer_directory(corpus: Corpus, tmp_path: Path) -> None:
    seal_workspace(corpus, resolve_session(corpus, "HW-PRB-001", "absent"), out=tmp_path / "ws")
    assert not (tmp_path / "ws/.claude").exists() and not (tmp_path / "ws/pkg").exists()


def test_apply_arm_on_a_workspace_matches_the_seal(tmp_path: Path) -> None:
    ws = write_files(tmp_path / "ws", {".claude/settings.local.json": '{"hooks": {}}',
                                       "sub/.claude/settings.json": '{"model": "x"}'})
    assert [r.path for r in apply_arm(ws, "no-hook")] == [".claude/settings.local.json"]
    assert not (ws / ".claude").exists() and (ws / "sub/.claude/settings.json").exists()


@pytest.mark.parametrize(
    ("path", "layer"),
    [(".claude/x", True), ("a/.claude/b/c", True), ("CLAUDE.md", True), ("d/CLAUDE.local.md", True),
     (".mcp.json", True), ("d/.mcp.json", False), ("claude/x", False), ("x.claude/y", False),
     ("CLAUDE.md.bak", False), (".claude", False)],
)
def test_layer_paths(path: str, layer: bool) -> None:
    assert is_layer_path(path) is layer


def test_no_hook_refuses_settings_that_are_not_json() -> None:
    with pytest.raises(ArmError, match="not valid JSON"):
        arm_effect("no-hook", ".claude/settings.json", b"{nope")


# --- mcp ----------------------------------------------------------------------------------

def test_mcp_extends_the_allowed_tools_and_keeps_the_layer(corpus: Corpus) -> None:
    mcp, present = arm_spec(corpus, "mcp", TOOLS), arm_spec(corpus, "present", TOOLS)
    assert mcp_servers(corpus) == ("docs-search", "tickets")
    assert mcp.allowed_tools == (*TOOLS, "mcp__docs-search", "mcp__tickets")
    assert present.allowed_tools == TOOLS
    assert mcp.layer == present.layer and mcp.flags != present.flags


def test_mcp_tool_already_listed_is_not_repeated(tmp_path: Path) -> None:
    corpus = _full_corpus(tmp_path / "c")
    assert arm_spec(corpus, "mcp", ("Read", "mcp__tickets")).allowed_tools == (
        "Read", "mcp__tickets", "mcp__docs-search")


@pytest.mark.parametrize("text", ['{"mcpServers": {"a b": {}}}', '{"mcpServers": []}', "[1]"])
def test_mcp_refuses_a_declaration_it_cannot_allow(tmp_path: Path, text: str) -> None:
    # Refused when the corpus is loaded (its one read, by the one reader), for every arm.
    with pytest.raises(McpConfigError, match=r"\.mcp\.json"):
        load_corpus(write_files(tmp_path / "c", {**_full_files(), ".mcp.json": text}))


def test_the_session_gets_the_arms_tool_list(tmp_path: Path) -> None:
    files = _full_files()
    files[".headwater/probe.yml"] = probe_yml(
        tiers={"campaign": {"arms": ["present", "mcp"], "repetitions": 1}},
        folds={"HW-PRB-001": ["src/retry.py"]},
        answer_keys={"HW-PRB-001": ["docs/runs/2026-09-30/transcript.md"]})
    plan = compose_plan(load_corpus(write_files(tmp_path / "c", files)), tier="campaign")
    assert plan.arm_spec("mcp").allowed_tools == (*TOOLS, "mcp__docs-search", "mcp__tickets")
    assert plan.arm_spec("present").allowed_tools == TOOLS
    with pytest.raises(PlanError, match="not an arm of this tier"):
        plan.arm_spec("absent")
    assert arm_tools_and_identity(plan, "mcp")[0] == plan.arm_spec("mcp").allowed_tools


# --- identity -----------------------------------------------------------------------------

def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_every_arm_has_its_own_identity(corpus: Corpus) -> None:
    specs = {arm: arm_spec(corpus, arm, TOOLS) for arm in ARMS}
    assert len({s.identity for s in specs.values()}) == len(ARMS)
    assert specs["absent"].layer == _sha(b"") and specs["absent"].layer_files == 0


def test_layer_digest_is_the_tree_formula_over_what_the_arm_keeps(corpus: Corpus) -> None:
    kept = sorted(LAYER - CLAUDE_MDS, key=lambda p: p.encode())
    lines = "".join(f"{corpus.files[p]} {p}\n" for p in kept)
    assert arm_layer_digest(corpus, "no-claude-md") == _sha(lines.encode())
    spec = arm_spec(corpus, "no-claude-md", TOOLS)
    flags = json.dumps({"allowed_tools": list(TOOLS), "disallowed_tools": ["WebSearch", "WebFetch"],
                        "permission_mode": "dontAsk", "setting_sources": "project,local"},
                       sort_keys=True, separators=(",", ":"))
    assert spec.flags == _sha(flags.encode())
    assert spec.identity == _sha(f"layer {spec.layer}\nflags {spec.flags}\n".encode())


def test_two_batches_of_the_same_corpus_know_they_ran_the_same_arm(tmp_path: Path) -> None:
    one, two = _full_corpus(tmp_path / "a"), _full_corpus(tmp_path / "b")
    assert arm_spec(one, "no-hook", TOOLS) == arm_spec(two, "no-hook", TOOLS)
    edited = _full_corpus(tmp_path / "c", **{".claude__skills__style__SKILL.md": "Other.\n"})  # type: ignore[arg-type]
    assert arm_spec(edited, "no-hook", TOOLS).identity != arm_spec(one, "no-hook", TOOLS).identity
    assert arm_spec(edited, "no-skills", TOOLS) == arm_spec(one, "no-skills", TOOLS)
    assert arm_spec(one, "present", ("Read",)).flags != arm_spec(one, "present", TOOLS).flags


def test_identity_is_in_the_plan_the_prose_and_round_trips(corpus: Corpus, tmp_path: Path) -> None:
    plan = compose_plan(corpus, tier="campaign")
    spec = arm_spec(corpus, "absent", corpus.config.tools)
    assert plan.arm_spec("absent").identity == spec.identity
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(dump_plan(plan, "yaml"))
    assert load_plan_file(plan_file, corpus) == plan
    plan_file.write_text(dump_plan(plan, "yaml").replace(spec.identity, _sha(b"other")))
    with pytest.raises(PlanError, match="identity"):
        load_plan_file(plan_file, corpus)
    prose = ArmTranscript(plan, "absent", network="host",
                          provider_note="Provider: x.").freeze().head()[0]
    assert f"Arm identity: {spec.identity}" in prose and spec.layer in prose and spec.flags in prose
    assert "note:" not in dump_plan(plan, "text")


# --- an arm that differs from present in nothing ------------------------------------------

@pytest.mark.parametrize(
    ("drop", "arm"),
    [((".claude/hooks/", ".claude/settings"), "no-hook"), ((".claude/skills/",), "no-skills"),
     (("CLAUDE", "pkg/"), "no-claude-md"), ((".mcp.json",), "mcp"),
     ((".claude/", "CLAUDE", "pkg/", ".mcp.json"), "absent no-hook no-skills no-claude-md mcp")],
)
def test_an_arm_whose_component_is_missing_is_reported(tmp_path: Path, drop: tuple[str, ...],
                                                       arm: str) -> None:
    corpus = _full_corpus(tmp_path / "c", drop)
    assert arms_without_effect(corpus, ARMS, TOOLS) == [
        f"arm {a} differs from present in nothing: {NOTHING[a]}" for a in arm.split()]


def test_two_arms_that_remove_the_same_files_are_reported(tmp_path: Path) -> None:
    # Only CLAUDE.md files: absent and no-claude-md remove exactly those, so they are one arm
    # run twice (the others equal present).
    corpus = _full_corpus(tmp_path / "c", (".claude/", ".mcp.json"))
    assert arms_without_effect(corpus, ["present", "absent", "no-claude-md"], TOOLS) == [
        "arm no-claude-md is the same as arm absent: they remove the same files and run with "
        "the same flags"]


def test_a_full_corpus_reports_nothing(corpus: Corpus) -> None:
    assert arms_without_effect(corpus, ARMS, TOOLS) == []


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, cwd=REPO, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_run_refuses_an_arm_that_changes_nothing_before_the_batch(tmp_path: Path) -> None:
    files = {k: v for k, v in _full_files().items() if not k.startswith(".claude/skills/")}
    files[".headwater/probe.yml"] = probe_yml(
        tiers={"campaign": {"arms": ["present", "no-skills"], "repetitions": 1}})
    root = write_files(tmp_path / "c", files)
    batch = tmp_path / "batch"
    proc = _cli("run", str(root), "--harness", "/bin/true", "--api-key-env", "HW_TEST_KEY",
                "--batch-dir", str(batch), env={"HW_TEST_KEY": "k"})
    assert proc.returncode == 2, proc.stderr
    assert "arm no-skills differs from present in nothing" in proc.stderr
    assert "drop the arm from the tier, or pass --allow-identical-arms" in proc.stderr
    assert not batch.exists()  # refused before the batch directory, before any spend
    assert "note: arm no-skills has the identity of present" in _cli(
        "plan", str(root)).stdout


def test_plan_notes_an_arm_with_the_identity_of_another(tmp_path: Path) -> None:
    files = {k: v for k, v in _full_files().items() if not k.startswith((".claude/", ".mcp.json"))}
    files[".headwater/probe.yml"] = probe_yml(
        tiers={"campaign": {"arms": ["absent", "present", "no-claude-md"], "repetitions": 1}})
    out = _cli("plan", str(write_files(tmp_path / "c", files))).stdout
    assert "note: arm no-claude-md has the identity of absent: its sessions would repeat " \
           "absent's (`run` refuses it)" in out
    assert "identity of present" not in out


def test_run_refuses_a_fold_that_states_an_answer_before_the_batch(tmp_path: Path) -> None:
    files = _full_files()
    files["src/retry.py"] = "# docs/probes/retry-budget.md\n# answer HW-DR-0052\n"
    root = write_files(tmp_path / "c", files)
    proc = _cli("run", str(root), "--harness", "/bin/true", "--api-key-env", "HW_TEST_KEY",
                "--batch-dir", str(tmp_path / "batch"), env={"HW_TEST_KEY": "k"})
    assert proc.returncode == 2 and "src/retry.py:2" in proc.stderr
    assert not (tmp_path / "batch").exists()
    planned = _cli("plan", str(root))  # refused as early as the plan, before anything is spent
    assert planned.returncode == 2 and "src/retry.py:2" in planned.stderr


def test_record_refuses_an_arm_outside_its_tier(tmp_path: Path) -> None:
    root = write_files(tmp_path / "c", _full_files())
    proc = _cli("record", "--corpus", str(root), "--probe", "HW-PRB-001", "--arm", "no-hook",
                "--harness", "/bin/true", "--batch-dir", str(tmp_path / "b"))
    assert proc.returncode == 2 and "not an arm of tier campaign" in proc.stderr


def test_an_arm_reads_only_the_settings_files_it_edits_and_those_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/arms.md: only no-hook's settings files (and .mcp.json) are read; each at most
    # MAX_READ_LAYER_BYTES, a bigger one refused (here the bound is 64 bytes).
    from campaign.plan import _arms
    from campaign.plan._arms import arm_spec, reads_bytes

    assert reads_bytes("no-hook", ".claude/settings.json")
    assert not reads_bytes("no-hook", ".claude/skills/s/SKILL.md")
    assert not reads_bytes("present", ".claude/settings.json")
    monkeypatch.setattr(_arms, "MAX_READ_LAYER_BYTES", 64)
    root = write_files(tmp_path / "c", {
        ".headwater/probe.yml": ("tiers: {campaign: {arms: [present], repetitions: 1}}\n"
                                 "tools: [Read]\nmodel: m\n"),
        "docs/probes/p.md": ("---\nid: HW-PRB-0001\ntitle: P\nanswers: []\nexamines: []\n---\n\n"
                             "## Task\n\nDo.\n"),
        ".claude/skills/s/SKILL.md": "x" * 1000,
        ".claude/settings.json": '{"hooks": {}, "pad": "' + "y" * 100 + '"}\n',
    })
    corpus = load_corpus(root)
    arm_spec(corpus, "no-skills", ["Read"])  # the 1000-byte skill is never read
    with pytest.raises(ArmError, match=r"\.claude/settings\.json is over 64 bytes"):
        arm_spec(corpus, "no-hook", ["Read"])


def test_config_records_each_arm_as_the_plan_holds_it_with_its_flags_spelled_out(
        corpus: Corpus) -> None:
    """config.yaml's ``facts.arms``: the plan's digests as they are, and the four harness
    flags whose canonical JSON is the ``flags`` digest (docs/arms.md)."""
    from campaign.batch._config import ArmFacts

    plan = compose_plan(corpus, tier="campaign")
    for spec in plan.arm_specs:
        facts = ArmFacts.of(spec)
        assert (facts.layer, facts.flags, facts.identity) == (spec.layer, spec.flags,
                                                              spec.identity)
        spelled = facts.model_dump(mode="json", include={
            "permission_mode", "setting_sources", "allowed_tools", "disallowed_tools"})
        assert facts.flags == _sha(json.dumps(spelled, sort_keys=True,
                                              separators=(",", ":")).encode())
