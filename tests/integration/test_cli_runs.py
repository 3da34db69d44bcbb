"""`run`, `record`, preflight and signals through the CLI, with the real CLI under real bwrap.

Expected values come from docs/cli.md's exit statuses and docs/batch.md's layout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from demo import ScriptedProvider, example_paths, load_scripts
from sandbox._config import CONFIG_ROOT
from tests import contract_check

REPO = Path(__file__).resolve().parents[2]
FAKE_BWRAP = REPO / "tests" / "fixtures" / "bug_inputs" / "BC-15_fake_bwrap.sh"
CANARY = "canary-7f3e9b1d-must-never-appear"


def _cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, env=env, timeout=timeout, check=False)


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with example_paths() as (_, scripts), ScriptedProvider(load_scripts(scripts)) as p:
        yield p


@pytest.fixture
def corpus() -> Iterator[Path]:
    with example_paths() as (root, _):
        yield root


def _our_cfg_dirs(pid: int) -> list[Path]:
    if not CONFIG_ROOT.exists():
        return []
    return [p for p in CONFIG_ROOT.iterdir() if p.name.startswith((f"{pid}-", f"{pid}."))]


def test_preflight_failure_exits_12_before_anything(tmp_path: Path, corpus: Path,
                                                    harness: Path) -> None:
    # RC-05: without a working bwrap the runner exits 12 before any harness call,
    # any credentials copy, any ledger line.
    fake = tmp_path / "bwrap"
    shutil.copy(FAKE_BWRAP, fake)
    fake.chmod(0o755)
    batch = tmp_path / "b"
    env = {**os.environ, "HW_KEY": "k"}  # bwrap runs with an empty env: default mode uidmap
    proc = _cli("run", str(corpus), "--batch-dir", str(batch), "--bwrap", str(fake),
                "--api-key-env", "HW_KEY", "--provider-url", "http://127.0.0.1:9",
                "--harness", str(harness), env=env)
    assert proc.returncode == 12, proc.stderr
    assert "setting up uid map: Permission denied" in proc.stderr  # bwrap's own message
    assert not (batch / "ledger.jsonl").exists()
    assert not (batch / "sessions").exists()
    # Nothing written: the same --batch-dir is usable once the host is fixed.
    assert {p.name for p in batch.iterdir()} <= {".lock"}


def test_missing_credentials_exit_12_before_anything(tmp_path: Path, corpus: Path,
                                                     harness: Path) -> None:
    # The checks doctor runs stop a batch with 12; credentials are one of them.
    env = {k: v for k, v in os.environ.items() if k != "HW_UNSET_KEY"}
    batch = tmp_path / "b"
    proc = _cli("run", str(corpus), "--batch-dir", str(batch), "--api-key-env", "HW_UNSET_KEY",
                "--provider-url", "http://127.0.0.1:9", "--harness", str(harness), env=env)
    assert proc.returncode == 12, proc.stderr
    assert "HW_UNSET_KEY" in proc.stderr and "--api-key-env" in proc.stderr
    assert not batch.exists() or {p.name for p in batch.iterdir()} <= {".lock"}


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.timeout(300)
def test_run_with_api_key_env_against_provider(tmp_path: Path, corpus: Path, harness: Path,
                                               provider: ScriptedProvider, bwrap: str) -> None:
    # `run` with --provider-url and --api-key-env: tier regression = 4 probes x present x 1.
    batch = tmp_path / "b"
    env = {**os.environ, "HW_TEST_KEY": "sk-test-" + CANARY, "HW_CANARY": CANARY}
    proc = _cli("run", "--corpus", str(corpus), "--tier", "regression", "--batch-dir", str(batch),
                "--provider-url", provider.url, "--api-key-env", "HW_TEST_KEY",
                "--harness", str(harness), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"batch: {batch.resolve()}"
    text = (batch / "transcripts" / "present.md").read_text()
    assert contract_check.violations(text) == []
    _, events, _ = contract_check.parse(text)
    assert len(events) == 4
    assert not (batch / "transcripts" / "absent.md").exists()
    # The key and a canary of the runner's environment appear nowhere in the batch.
    for path in batch.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.timeout(300)
def test_record_names_sessions_r1_r2_and_refuses_other_plan(
    tmp_path: Path, corpus: Path, harness: Path, provider: ScriptedProvider, bwrap: str
) -> None:
    batch = tmp_path / "b"
    env = {**os.environ, "HW_TEST_KEY": "sk-test"}
    common = ["record", "--corpus", str(corpus), "--probe", "HW-PRB-0001", "--arm", "absent",
              "--batch-dir", str(batch), "--provider-url", provider.url,
              "--api-key-env", "HW_TEST_KEY", "--harness", str(harness)]
    first = _cli(*common, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    second = _cli(*common, env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    _, events, _ = contract_check.parse((batch / "transcripts" / "absent.md").read_text())
    assert [(e["probe"], e["session"]) for e in events] == [("HW-PRB-0001", "r1"),
                                                            ("HW-PRB-0001", "r2")]
    # docs/cli.md: record refuses (exit 2) when the batch's tier differs from its own.
    other = _cli(*common, "--tier", "regression", env=env)
    assert other.returncode == 2 and "tier" in other.stderr


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.timeout(300)
def test_sigterm_mid_batch_exits_143_and_leaves_nothing_running(
    tmp_path: Path, harness: Path, bwrap: str
) -> None:
    # docs/cli.md: exit 143 (resumable); every started attempt gets a final ledger line;
    # no credentials copy and no sandboxed process survive.
    batch = tmp_path / "b"
    proc = subprocess.Popen([sys.executable, "-m", "campaign", "demo", "--batch-dir", str(batch),
                             "--harness", str(harness)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    ledger = batch / "ledger.jsonl"
    while time.monotonic() < deadline:
        if ledger.exists() and ledger.read_text().count('"kind":"final"') >= 2:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    records = [json.loads(x) for x in ledger.read_text().splitlines()]
    started = {(r["arm"], r["probe"], r["session"]) for r in records if r["kind"] == "started"}
    final = {(r["arm"], r["probe"], r["session"]) for r in records if r["kind"] == "final"}
    assert started == final
    assert len(final) < 16
    assert _our_cfg_dirs(proc.pid) == []
    assert (batch / "transcripts" / "present.md").exists()
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    assert str(batch) not in ps.stdout


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.timeout(300)
def test_a_dry_run_names_the_probes_no_script_answered(tmp_path: Path, harness: Path) -> None:
    # The point of a scripted dry run is to find such mistakes before spending anything.
    from tests.integration import kit

    with kit.host_dir("hw-dry-") as root:
        tasks = {"DRY-1": "dry run probe one: answer", "DRY-2": "dry run probe two: answer"}
        corpus = kit.write_corpus(root / "corpus", tasks)
        kit.write_script(root / "scripts", "DRY-1", tasks["DRY-1"])  # none for DRY-2
        proc = kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                       str(root / "batch"), "--harness", str(harness), "--provider", "scripted",
                       "--scripts", str(root / "scripts"), env=kit.base_env())
        assert proc.returncode == 0, proc.stderr
        assert ("warning: the scripted provider answered 'no script for this request' 1 time: "
                "no script matches a task that begins 'dry run probe two: answer'") in proc.stderr
        # and before anything ran, by probe: only the one without a script
        early = proc.stderr.find("no script of the scripted provider matches probe DRY-2's task")
        assert 0 <= early < proc.stderr.find("DRY-1"), proc.stderr  # before any session ended
        assert "matches probe DRY-1" not in proc.stderr


@pytest.mark.timeout(120)
def test_a_script_that_does_not_load_refuses_the_run_and_leaves_no_batch_directory(
        tmp_path: Path) -> None:
    # Bad input loses nothing and makes nothing: the scripts are read before the batch
    # directory is made, so the run that is refused leaves no directory (with a .lock) behind.
    from tests.integration import kit

    with kit.host_dir("hw-badscript-") as root:
        tasks = {"BAD-1": "bad script probe: answer"}
        corpus = kit.write_corpus(root / "corpus", tasks)
        kit.write_script(root / "scripts", "BAD-1", tasks["BAD-1"])
        script = root / "scripts" / "BAD-1.json"
        script.write_text(script.read_text().replace('"match"', '"extra": 1, "match"'))
        proc = kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                       str(root / "batch"), "--provider", "scripted",
                       "--scripts", str(root / "scripts"), env=kit.base_env())
        assert proc.returncode == 2, proc.stderr
        assert "BAD-1.json" in proc.stderr and "extra" in proc.stderr, proc.stderr
        assert not (root / "batch").exists()
