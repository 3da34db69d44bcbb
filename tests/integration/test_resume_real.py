"""Overnight behaviour with the real pinned CLI under real bwrap, on the scripted provider.

A demo batch stopped with SIGINT is resumed to the end and reads the same as
one that ran through; ``status`` describes it while stopped; a provider that
answers 529 for a while is ridden out by the batch's retries.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from campaign.batch._ledger import read_ledger
from campaign.batch._records import FinalRecord, InvocationRecord
from demo import ScriptedProvider, load_scripts
from tests import contract_check
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness]


def _transcript_keys(batch: Path) -> Counter[tuple[str, str, str]]:
    keys: Counter[tuple[str, str, str]] = Counter()
    for path in sorted((batch / "transcripts").glob("*.md")):
        text = path.read_text()
        assert contract_check.violations(text) == [], path
        for row in contract_check.parse(text)[2]:
            keys[(path.stem, row[0], row[1])] += 1
    return keys


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_demo_stopped_with_sigint_is_described_by_status_and_finished_by_resume(
    tmp_path: Path, harness: Path, bwrap: str,
) -> None:
    batch = tmp_path / "demo"
    env = kit.base_env()
    runner = subprocess.Popen([sys.executable, "-m", "campaign", "demo", "--batch-dir",
                               str(batch), "--harness", str(harness)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=kit.REPO)
    ledger = batch / "ledger.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if ledger.exists() and ledger.read_text().count('"kind":"final"') >= 3:
            break
        time.sleep(0.1)
    runner.send_signal(signal.SIGINT)
    _, err = runner.communicate(timeout=120)
    assert runner.returncode == 130, err
    assert f"headwater-campaign resume {batch}" in err

    status = kit.cli("status", str(batch), "--json", env=env)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["running"] is False and data["stopped"]["reason"] == "signal"
    assert 0 < data["outstanding"] < 16
    assert sum(a["planned"] for a in data["arms"].values()) == 16
    plain = kit.cli("status", str(batch), env=env)
    assert "not running" in plain.stdout and "resume" in plain.stdout
    prose = (batch / "transcripts" / "present.md").read_text()
    assert "This batch is incomplete" in prose

    resumed = kit.cli("resume", str(batch), env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.rstrip().splitlines()[-1] == f"batch: {batch}"
    keys = _transcript_keys(batch)
    assert len(keys) == 16 and set(keys.values()) == {1}
    records = list(read_ledger(ledger))
    assert [r.command for r in records if isinstance(r, InvocationRecord)] == ["demo", "resume"]
    killed = [r for r in records if isinstance(r, FinalRecord) and r.state == "killed"]
    assert all(not r.counts for r in killed)
    after = json.loads(kit.cli("status", str(batch), "--json", env=env).stdout)
    assert after["outstanding"] == 0 and after["stopped"]["reason"] == "done"
    for arm in ("present", "absent"):
        assert "incomplete" not in (batch / "transcripts" / f"{arm}.md").read_text()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_provider_overloaded_for_a_while_is_ridden_out_by_retries(
    tmp_path: Path, harness: Path, bwrap: str,
) -> None:
    with kit.host_dir("hw-529-") as root:
        tasks = {"OVL-1": "overload probe one: answer", "OVL-2": "overload probe two: answer"}
        corpus = kit.write_corpus(root / "corpus", tasks)
        for probe, task in tasks.items():
            kit.write_script(root / "scripts", probe, task)
        # The CLI gives up after three 529s in a row: six overloaded requests fail the
        # first attempt of both sessions, and then the provider is well again.
        with ScriptedProvider(load_scripts(root / "scripts"), overloaded_first=6) as provider:
            env = kit.base_env(HW_KEY="sk-scripted-not-a-secret")
            proc = kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                           str(root / "batch"), "--harness", str(harness), "--provider-url",
                           provider.url, "--api-key-env", "HW_KEY", "--concurrency", "2",
                           "--retry-backoff", "1", env=env)
        assert proc.returncode == 0, proc.stderr
        finals = [r for r in read_ledger(root / "batch" / "ledger.jsonl")
                  if isinstance(r, FinalRecord)]
        first = [r for r in finals if r.attempt == 1]
        assert first and all(r.state == "harness-error" and r.retryable for r in first)
        assert all("529" in r.reason for r in first)  # the reason keeps the provider's status
        last = {(r.probe, r.session): r for r in finals}
        assert {r.state for r in last.values()} == {"recorded"}
        assert all(r.attempt >= 2 for r in last.values())
        assert "retry 1 of 2" in proc.stderr
