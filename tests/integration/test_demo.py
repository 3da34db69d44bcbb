"""The main job end to end: `demo` with the real CLI under real bwrap.

Expected values come from the probes' declared answers, the demo scripts'
final lines and the rules (RC-10, RC-11, RC-13, RC-08), never from the
runner's own output. The contract check used here is independent of the
recorder's reader (tests/contract_check.py).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from campaign.batch._ledger import read_ledger
from demo import ScriptedProvider, example_paths, load_scripts
from tests import contract_check

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.slow]

PROBES = ("HW-PRB-0001", "HW-PRB-0002", "HW-PRB-0003", "HW-PRB-0004")
# RC-13 over the scripts' final messages: 0001 ends "HW-DR-0052 current" where
# the request carries the CLAUDE.md line its script branches on (the set rule
# recovers the declared "current HW-DR-0052"), else "HW-DR-0031 current"
# ("current HW-DR-0031"); 0002 ends in a sentence (null); 0003 ends "2"; 0004
# ends "gridline".
EXPECTED_ANSWER: dict[str, str | None] = {
    "HW-PRB-0001": "current HW-DR-0052",
    "HW-PRB-0002": None,
    "HW-PRB-0003": "2",
    "HW-PRB-0004": "gridline",
}
WITHOUT_THE_LAYER: dict[str, str | None] = {**EXPECTED_ANSWER, "HW-PRB-0001": "current HW-DR-0031"}
"""The answers of arm absent, which removes the whole harness layer (CLAUDE.md with it)."""
BRANCH_LINE = "read a record's status before you cite it"
"""The text HW-PRB-0001's script branches on: a line of the corpus's CLAUDE.md."""


def _sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def demo_batch(tmp_path_factory: pytest.TempPathFactory, bwrap: str, harness: Path) -> Path:
    batch = tmp_path_factory.mktemp("demo") / "batch"
    proc = subprocess.run(
        [sys.executable, "-m", "campaign", "demo", "--batch-dir", str(batch),
         "--harness", str(harness)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, f"demo exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    last = proc.stdout.strip().splitlines()[-1]
    assert last == f"batch: {batch.resolve()}", proc.stdout
    (batch.parent / "demo.stdout").write_text(proc.stdout)
    return batch.resolve()


def _events(batch: Path, arm: str) -> list[dict[str, Any]]:
    _, events, _ = contract_check.parse((batch / "transcripts" / f"{arm}.md").read_text())
    return list(events)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("arm", ["present", "absent"])
def test_demo_transcript_passes_independent_contract_check(demo_batch: Path, arm: str) -> None:
    text = (demo_batch / "transcripts" / f"{arm}.md").read_text()
    assert contract_check.violations(text) == []
    identity, events, rows = contract_check.parse(text)
    assert identity["arm"] == arm and identity["tier"] == "campaign"
    assert identity["cost_cents"] > 0
    # campaign tier: 4 probes x 2 repetitions per arm, all recorded in the demo.
    assert sorted((e["probe"], e["session"]) for e in events) == sorted(
        (p, s) for p in PROBES for s in ("s1", "s2")
    )
    assert {r[2] for r in rows} == {"recorded"} and len(rows) == 8


@pytest.mark.timeout(600)
@pytest.mark.parametrize("arm", ["present", "absent"])
def test_demo_answers_follow_rc13(demo_batch: Path, arm: str) -> None:
    expected = EXPECTED_ANSWER if arm == "present" else WITHOUT_THE_LAYER
    for event in _events(demo_batch, arm):
        assert "answer" in event, event
        assert event["answer"] == expected[event["probe"]], event


def _calls(event: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["tool"], c["argument"]) for c in event["calls"]]


@pytest.mark.timeout(600)
def test_demo_arms_differ_only_where_the_layer_line_steers_the_script(demo_batch: Path) -> None:
    # The present arm loads the corpus's CLAUDE.md, which the CLI sends in the first user
    # message; absent removes it. HW-PRB-0001's script branches on one of its lines: with
    # it the session reads both retry records and answers the one in force; without it
    # the session stops at the first, superseded record and never opens HW-DR-0052. The
    # other scripts do not branch: the same calls and answers in both arms.
    with example_paths() as (corpus, _):
        assert BRANCH_LINE in (corpus / "CLAUDE.md").read_text()
    by_arm = {arm: {(e["probe"], e["session"]): e for e in _events(demo_batch, arm)}
              for arm in ("present", "absent")}
    new, old = "docs/decisions/HW-DR-0052.md", "docs/decisions/HW-DR-0031.md"
    for key, present in by_arm["present"].items():
        absent = by_arm["absent"][key]
        if key[0] != "HW-PRB-0001":
            assert (_calls(present), present["answer"]) == (_calls(absent), absent["answer"])
            continue
        assert present["answer"] == "current HW-DR-0052" and absent["answer"] == (
            "current HW-DR-0031")
        assert ("Read", new) in _calls(present) and ("Read", old) in _calls(present)
        assert ("Read", old) in _calls(absent)
        assert not any(argument == new for _, argument in _calls(absent)), absent


@pytest.mark.timeout(600)
def test_demo_ends_with_the_graded_summary_where_one_probe_differs(demo_batch: Path) -> None:
    """The demo's last word is the report's summary: each probe's graded share per arm.

    By the scripts and the probes' expect: (docs/provider.md), every session of both arms
    satisfies HW-PRB-0003 and HW-PRB-0004, none satisfies HW-PRB-0002 (its answer line is a
    sentence: RC-13 gives null), and HW-PRB-0001 is satisfied by present (2 of 2) and by no
    session of absent, whose Newcombe interval of -100 points lies below 0: "lower", which
    Fisher's exact test of [[0, 2], [2, 0]] (p = 1/6 + 1/6 = 1/3) does not confirm.
    """
    out = (demo_batch.parent / "demo.stdout").read_text()
    start = out.index("summary: per probe")
    rows = {line.split(":", 1)[0].strip("| "): line for line in out[start:].splitlines()
            if line.startswith("| HW-PRB-")}
    assert sorted(rows) == ["HW-PRB-0001", "HW-PRB-0002", "HW-PRB-0003", "HW-PRB-0004"], out
    cells = {probe: [c.strip() for c in line.strip("|").split("|")[1:]]
             for probe, line in rows.items()}
    expected = {"HW-PRB-0001": ("2/2", "0/2"), "HW-PRB-0002": ("0/2", "0/2"),
                "HW-PRB-0003": ("2/2", "2/2"), "HW-PRB-0004": ("2/2", "2/2")}
    for probe, (present, absent) in expected.items():
        assert cells[probe][0].startswith(present + " "), (probe, cells[probe])
        assert cells[probe][1].startswith(absent + " "), (probe, cells[probe])
    differing = [p for p, c in cells.items() if " lower" in c[1] or " higher" in c[1]]
    assert differing == ["HW-PRB-0001"], cells
    assert cells["HW-PRB-0001"][1].endswith("lower (Fisher p 0.33: unconfirmed)"), cells
    assert not any("ungraded" in line for line in rows.values()), rows
    assert f"the whole report: headwater-campaign report {demo_batch}" in out


@pytest.mark.timeout(600)
def test_demo_read_results_equal_manifest_and_corpus_digests(demo_batch: Path) -> None:
    # RC-10: a Read of a file in the sealed workspace has that file's manifest
    # digest; for a document the seal leaves whole, that is the digest of the
    # corpus's own bytes (the plan's digest form), computed here with hashlib.
    with example_paths() as (corpus, _):
        checked = 0
        for arm in ("present", "absent"):
            for event in _events(demo_batch, arm):
                root = demo_batch / "sessions" / arm / event["probe"] / event["session"]
                manifest = json.loads((root / "manifest.json").read_text())
                for call in event["calls"]:
                    if call["tool"] == "Read" and call["argument"] in manifest:
                        assert call["result"] == manifest[call["argument"]], call
                        assert call["result"] == _sha(corpus / call["argument"]), call
                        checked += 1
    # Per repetition: present reads 2 (0001), 1 (0002), 2 (0003), 1 (0004); absent the
    # same but 1 for 0001 (without CLAUDE.md its script reads the first record only).
    assert checked == 2 * (6 + 5)


@pytest.mark.timeout(600)
def test_demo_produced_result_is_digest_of_file_left(demo_batch: Path) -> None:
    # RC-11: produced result = sha256 of the file after the session, in its workspace.
    seen = 0
    for arm in ("present", "absent"):
        for event in _events(demo_batch, arm):
            root = demo_batch / "sessions" / arm / event["probe"] / event["session"]
            for art in event.get("produced", []):
                assert art["result"] == _sha(root / "workspace" / art["path"])
                assert "findings" not in art  # no checker configured: no key (RC-12)
                seen += 1
            if event["probe"] == "HW-PRB-0003":
                assert [a["path"] for a in event["produced"]] == ["notes/summary.md"]
                assert event["produced"][0]["cites"] == ["HW-DR-0040", "HW-DR-0044"]
    assert seen == 4


@pytest.mark.timeout(600)
def test_demo_outside_read_fails_in_sandbox_and_is_counted(demo_batch: Path) -> None:
    home = Path(os.environ["HOME"]).resolve()
    for arm in ("present", "absent"):
        transcript = (demo_batch / "transcripts" / f"{arm}.md").read_text()
        _, events, rows = contract_check.parse(transcript)
        outside = {(r[0], r[1]): int(r[3]) for r in rows}
        for event in events:
            if event["probe"] != "HW-PRB-0004":
                continue
            # RC-08: the named host path counts; RC-10: its argument is the path named.
            assert outside[(event["probe"], event["session"])] >= 1
            read = [c for c in event["calls"] if c["argument"] == f"{home}/.bashrc"]
            assert len(read) == 1
            root = demo_batch / "sessions" / arm / event["probe"] / event["session"]
            assert not (root / "workspace" / ".bashrc").exists()


_HOME_SKIP = {".pyenv", ".cache", ".npm", ".cargo", ".rustup", ".local", "node_modules"}


def _home_needles(home: Path) -> list[bytes]:
    """Distinctive lines of the host's files under $HOME (depth <= 2, < 64 KiB each)."""
    needles: list[bytes] = []
    for top in home.iterdir():
        if top.name in _HOME_SKIP:
            continue
        files = [top] if top.is_file() else list(top.iterdir()) if top.is_dir() else []
        for f in files:
            try:
                if f.is_file() and not f.is_symlink() and 0 < f.stat().st_size < 1 << 16:
                    needles += [ln.strip() for ln in f.read_bytes().splitlines()
                                if len(ln.strip()) >= 16]
            except OSError:
                continue
    return needles


@pytest.mark.timeout(600)
def test_demo_no_byte_of_home_files_in_batch(demo_batch: Path) -> None:
    # Nothing of the host's home may reach the batch: every file of the batch
    # (transcripts, ledger, config, manifests, stderr tails, logs, workspaces)
    # is searched for every distinctive line of the files under $HOME.
    home = Path(os.environ["HOME"]).resolve()
    needles = _home_needles(home)
    assert needles, "no needle found under $HOME: the check would prove nothing"
    blobs = [p.read_bytes() for p in demo_batch.rglob("*") if p.is_file()]
    for needle in needles:
        assert not any(needle in blob for blob in blobs), needle[:40]


@pytest.mark.timeout(600)
def test_demo_batch_layout(demo_batch: Path) -> None:
    yaml = YAML(typ="safe", pure=True)
    plan = yaml.load(io.StringIO((demo_batch / "plan.yaml").read_text()))
    assert plan["session_count"] == 16
    config = (demo_batch / "config.yaml").read_text()
    assert "sk-" not in config  # no secrets in config.yaml
    ledger = [json.loads(x) for x in (demo_batch / "ledger.jsonl").read_text().splitlines()]
    assert sum(r["kind"] == "final" for r in ledger) == 16
    s = demo_batch / "sessions" / "present" / "HW-PRB-0001" / "s1"
    for name in ("workspace", "manifest.json", "log", "stderr.tail"):
        assert (s / name).exists(), name
    # The present arm keeps the hook, which writes one line per tool call.
    assert (s / "log" / "hook.log").read_text().count("\n") >= 3
    session = demo_batch / "sessions" / "absent" / "HW-PRB-0001" / "s1"
    assert not (session / "log" / "hook.log").exists()


def test_cli_refuses_batch_dir_under_home(tmp_path: Path) -> None:
    # RC-06: exit 2 with a clear message before any session starts.
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "campaign", "demo", "--batch-dir", str(home / "b")],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "RC-06" in proc.stderr and "$HOME" in proc.stderr
    assert not (home / "b").exists()


@pytest.mark.timeout(300)
def test_outside_read_fails_inside_the_sandbox(tmp_path: Path, bwrap: str, harness: Path) -> None:
    # The provider sees what the Read of {home}/.bashrc returned inside the
    # sandbox: an error, and none of the file's bytes ($HOME is not mounted).
    home = Path(os.environ["HOME"]).resolve()
    with example_paths() as (corpus, scripts), ScriptedProvider(load_scripts(scripts)) as provider:
        proc = subprocess.run(
            [sys.executable, "-m", "campaign", "record", "--corpus", str(corpus),
             "--probe", "HW-PRB-0004", "--arm", "present", "--batch-dir", str(tmp_path / "b"),
             "--provider-url", provider.url, "--api-key-env", "HW_DEMO_KEY",
             "--harness", str(harness)],
            capture_output=True, text=True, timeout=240, check=False,
            env={**os.environ, "HW_DEMO_KEY": "sk-test"},
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        is_error, text = provider.tool_results["toolu_hw4_outside"]
    assert is_error, text
    # The invocation says what it ran: one session, not the batch's planned ones.
    stopped = [r for r in read_ledger(tmp_path / "b" / "ledger.jsonl") if r.kind == "stopped"]
    assert [r.detail for r in stopped] == [
        "record ran one session (present HW-PRB-0004 r1); the batch's planned sessions are run "
        "by run and resume"]
    assert "does not exist" in text.lower() or "no such file" in text.lower(), text
    bashrc = home / ".bashrc"
    if bashrc.exists():
        for line in bashrc.read_bytes().splitlines():
            if len(line.strip()) >= 16:
                assert line.strip().decode(errors="replace") not in text
