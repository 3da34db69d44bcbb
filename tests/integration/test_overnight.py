"""Overnight batches: budgets, a full disk, signals, and a runner killed again and again.

Every test here runs the real command line under real bwrap. Sessions are
stand-in harnesses (tests/standin.py: one self-contained file, data
embedded) so that hundreds of them take seconds; the real CLI's cases are in
test_resume_real.py. Expected values come from the rules (docs/batch.md):
every planned session ends exactly once in the transcripts, every attempt's
cost counts once, exit statuses as documented.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from campaign.batch._ledger import read_ledger
from campaign.batch._records import FinalRecord, StartedRecord, TornRecord
from campaign.supervisor._streams import stream_lines
from sandbox._config import CONFIG_ROOT
from sandbox.storage import STORE_ROOT
from tests import contract_check
from tests.campaign.corpora import write_files
from tests.integration import kit
from tests.standin import write_session_standin

pytestmark = [pytest.mark.bwrap]

MODEL = "claude-standin-1"


def make_corpus(root: Path, *, probes: int, repetitions: int, padding: int = 0) -> Path:
    """``probes`` probes, tier campaign (present and absent), a CLAUDE.md for absent to drop."""
    files: dict[str, str | bytes] = {
        ".headwater/probe.yml": (f"tiers:\n  campaign: {{arms: [present, absent], repetitions: "
                                 f"{repetitions}}}\ntools: [Read]\nmodel: {MODEL}\n"),
        "CLAUDE.md": "Answer briefly.\n",
        "docs/guide.md": "---\nid: HW-DOC-0001\n---\n\n# Guide\n\n" + "x" * padding + "\n",
    }
    for n in range(1, probes + 1):
        files[f"docs/probes/p{n:03d}.md"] = (
            f"---\nid: HW-PRB-{n:04d}\ntitle: Probe number {n}\nanswers: [yes, no]\n"
            f"examines: [docs/guide.md]\n---\n\n## Task\n\nIs it {n}? End with yes or no.\n")
    return write_files(root, files)


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return kit.cli(*args, env=kit.base_env(), timeout=timeout)


def start(*args: str) -> subprocess.Popen[str]:
    return kit.start_cli(*args, env=kit.base_env())


def run_args(corpus: Path, batch: Path, harness: Path, *extra: str) -> list[str]:
    return ["run", str(corpus), "--batch-dir", str(batch), "--harness", str(harness),
            "--provider", "scripted", "--scripts", str(corpus.parent / "scripts"),
            "--network", "host", *extra]


@pytest.fixture
def root() -> Iterator[Path]:
    with kit.host_dir("hw-night-") as path:
        # Most stand-ins never call the provider (the budget test's does, through its gateway).
        kit.write_script(path / "scripts", "unused", "no task says this")
        yield path


def finals(batch: Path) -> list[FinalRecord]:
    return [r for r in read_ledger(batch / "ledger.jsonl") if isinstance(r, FinalRecord)]


def transcript_rows(batch: Path) -> list[tuple[str, str, str, str]]:
    """(arm, probe, session, state) of every row of every transcript, each checked first."""
    rows = []
    for path in sorted((batch / "transcripts").glob("*.md")):
        text = path.read_text()
        assert contract_check.violations(text) == [], path
        _, _, table = contract_check.parse(text)
        rows += [(path.stem, r[0], r[1], r[2]) for r in table]
    check = cli("check-transcript", *map(str, sorted((batch / "transcripts").glob("*.md"))))
    assert check.returncode == 0, check.stdout
    return rows


def nothing_left(pids: list[int]) -> None:
    """No credentials copy of these runners and no sandboxed process of theirs is left."""
    mine = [p for p in CONFIG_ROOT.glob("*") if any(p.name.startswith((f"{pid}-", f"{pid}."))
                                                     for pid in pids)]
    assert mine == []
    kit.wait_for(lambda: not kit.processes_mentioning("hw-night-"), timeout_s=10,
                 what="every sandboxed process of the batch to be gone")


# --- budgets -------------------------------------------------------------------------------

PRICED_TURN_USAGE = {"input_tokens": 0, "output_tokens": 2000}
"""One turn's usage: 2,000 output tokens of claude-opus-4-8 at 25 USD per million
(recorder/_prices.py) is 5 cents, the provider's price of one session here."""
ASK_PROVIDER = r'''
import urllib.request
_key = os.environ.get("ANTHROPIC_API_KEY")
_headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
if _key:
    _headers["x-api-key"] = _key
else:
    _headers["authorization"] = "Bearer " + os.environ["ANTHROPIC_AUTH_TOKEN"]
_body = json.dumps({"model": MODEL, "max_tokens": 100, "stream": True, "messages": [
    {"role": "user", "content": "End with yes or no."}]}).encode()
_req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
                              + "/v1/messages?beta=true", data=_body, headers=_headers)
with urllib.request.urlopen(_req, timeout=60) as _answer:
    _answer.read()
'''


def write_priced_standin(path: Path) -> Path:
    """A session stand-in that first sends one streamed request to its provider gateway
    (``ANTHROPIC_BASE_URL``, its placeholder key), which the scripted provider answers with
    `PRICED_TURN_USAGE`: with the gateway, a session's cost is its requests' usage priced
    (RC-14 as docs/gateway.md has it), not the harness's ``total_cost_usd`` (said 5 cents
    too, so the two agree)."""
    write_session_standin(path, cost="0.05")
    text = path.read_text()
    marker = "\ntime.sleep(SLEEP_S)\n"
    assert marker in text
    path.write_text(text.replace(marker, "\n" + ASK_PROVIDER + marker), encoding="ascii")
    return path


def test_a_cost_budget_stops_the_batch_and_a_larger_one_finishes_it_counting_each_attempt(
    root: Path,
) -> None:
    corpus = make_corpus(root / "corpus", probes=3, repetitions=1)
    kit.write_script(root / "scripts", "priced", "End with yes or no.")
    script = root / "scripts" / "priced.json"
    body = json.loads(script.read_text())
    body["turns"] = [{"blocks": [{"type": "text", "text": "Done.\nyes"}],
                      "usage": PRICED_TURN_USAGE}]
    script.write_text(json.dumps(body))
    harness = write_priced_standin(root / "harness")  # 5 cents a session, priced
    batch = root / "batch"
    first = cli(*run_args(corpus, batch, harness, "--concurrency", "1", "--max-cost-cents", "12"))
    # Sessions run one at a time: after two (10 cents), 10 + 5 for the next would pass 12.
    assert first.returncode == 3, first.stderr
    assert len(finals(batch)) == 2
    assert "budget" in first.stderr and f"headwater-campaign resume {batch}" in first.stderr
    budget_stops = [r for r in read_ledger(batch / "ledger.jsonl") if r.kind == "budget-stop"]
    assert len(budget_stops) == 1
    prose = (batch / "transcripts" / "present.md").read_text()
    assert "This batch is incomplete" in prose or "This batch is incomplete" in (
        batch / "transcripts" / "absent.md").read_text()
    status = cli("status", str(batch), "--json")
    assert status.returncode == 0 and '"outstanding": 4' in status.stdout
    second = cli("resume", str(batch), "--max-cost-cents", "100")
    assert second.returncode == 0, second.stderr
    records = finals(batch)
    assert len(records) == 6 and all(r.state == "recorded" for r in records)
    assert sum(Decimal(r.cost_usd or "0") for r in records) == Decimal("0.30")
    assert all(r.gateway is not None and r.gateway.forwarded == 1 for r in records)
    assert sum(Decimal(r.gateway.provider_cost_usd or "0") for r in records
               if r.gateway is not None) == Decimal("0.30")
    rows = transcript_rows(batch)
    assert Counter((a, p, s) for a, p, s, _ in rows) == Counter(
        {(arm, f"HW-PRB-{n:04d}", "s1"): 1 for arm in ("present", "absent") for n in (1, 2, 3)})
    for arm in ("present", "absent"):
        identity, _, _ = contract_check.parse((batch / "transcripts" / f"{arm}.md").read_text())
        assert identity["cost_cents"] == 15  # three sessions of 5 cents, each counted once
        assert "incomplete" not in (batch / "transcripts" / f"{arm}.md").read_text()
    invocations = [r for r in read_ledger(batch / "ledger.jsonl") if r.kind == "invocation"]
    again = cli("resume", str(batch))  # a finished batch: nothing to do, nothing written
    assert again.returncode == 0 and "nothing to resume" in again.stdout
    assert [r for r in read_ledger(batch / "ledger.jsonl") if r.kind == "invocation"] == invocations


# --- exit 5 ----------------------------------------------------------------------------------

def test_a_batch_that_records_nothing_exits_5(root: Path) -> None:
    corpus = make_corpus(root / "corpus", probes=1, repetitions=1)
    harness = root / "harness"  # prints an init line and ends: no result line (no-result)
    harness.write_text("#!/usr/bin/python3\nimport json,os,sys\nif sys.argv[1:]==['--version']:\n"
                       " print('0.0.0'); sys.exit(0)\nprint(json.dumps({'type':'system',"
                       "'subtype':'init','cwd':os.getcwd(),'permissionMode':'dontAsk',"
                       "'claude_code_version':'2.1.197',"
                       "'mcp_servers':[],"
                       "'skills':[],'plugins':[],'memory_paths':{}}))\n")
    harness.chmod(0o755)
    proc = cli(*run_args(corpus, root / "batch", harness, "--retries", "0", "--no-keep-streams"))
    assert proc.returncode == 5, proc.stderr
    assert {r.state for r in finals(root / "batch")} == {"no-result"}
    assert "no session of the batch was recorded" in proc.stderr
    assert list((root / "batch" / "sessions").rglob("stdout.jsonl.zst")) == []
    assert all(r.stream is None for r in finals(root / "batch"))


def test_a_batch_whose_stderr_reader_went_away_records_every_session(root: Path) -> None:
    # `run ... 2>&1 | tee log` whose tee died: the batch goes on, its output goes nowhere.
    corpus = make_corpus(root / "corpus", probes=3, repetitions=1)
    harness = write_session_standin(root / "harness", cost="0.01")
    batch = root / "batch"
    proc = start(*run_args(corpus, batch, harness, "--concurrency", "1"))
    assert proc.stderr is not None
    proc.stderr.close()  # the reader of stderr is gone before the runner prints anything
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    records = finals(batch)
    assert sorted((r.arm, r.probe, r.state) for r in records) == sorted(
        (arm, f"HW-PRB-{n:04d}", "recorded") for arm in ("present", "absent") for n in (1, 2, 3))
    stopped = [r for r in read_ledger(batch / "ledger.jsonl") if r.kind == "stopped"]
    assert [(r.reason, r.outstanding) for r in stopped] == [("done", 0)]


# --- a full disk ---------------------------------------------------------------------------

@pytest.fixture
def small_disk(root: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs of the test's own (root only); removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = root / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount)],
                   check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_stops_the_batch_with_exit_6_and_resume_finishes_it(
    root: Path, small_disk: Path
) -> None:
    # Each seal copies ~200 KiB; a 1 MiB disk holds a few, then refuses a write.
    corpus = make_corpus(root / "corpus", probes=4, repetitions=1, padding=200_000)
    harness = write_session_standin(root / "harness")
    batch = small_disk / "batch"
    first = cli(*run_args(corpus, batch, harness, "--concurrency", "1"))
    assert first.returncode == 6, first.stderr
    assert "the host refused a write" in first.stderr and "resume" in first.stderr
    assert first.stderr.lower().count("free space") == 1, first.stderr  # said once
    for line in first.stdout.splitlines():  # a transcript named is one that is there
        if line.startswith("transcript: ") and not line.endswith("resume writes it)"):
            assert Path(line.removeprefix("transcript: ")).is_file(), line
    before = finals(batch)
    assert 0 < len(before) < 8
    assert all(r.state == "recorded" for r in before)  # nothing recorded was lost or marked
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    second = cli("resume", str(batch))
    assert second.returncode == 0, second.stderr
    rows = transcript_rows(batch)
    assert len(rows) == 8 and {s for *_, s in rows} == {"recorded"}
    assert finals(batch)[: len(before)] == before  # what was recorded stands as it was


# --- a runner killed at random moments, resumed each time ---------------------------------

@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_runner_killed_20_times_and_resumed_finishes_every_session_exactly_once(
    root: Path,
) -> None:
    corpus = make_corpus(root / "corpus", probes=25, repetitions=4)  # 25 x 2 x 4 = 200 sessions
    # Sessions of half a second, four at a time: 20 invocations killed within about 1.5 s of
    # work each cannot finish 200 (a faster stand-in once let the batch end first, and the
    # loop then waited for a kill that could never come).
    harness = write_session_standin(root / "harness", sleep_s=0.5)
    batch = root / "batch"
    ledger = batch / "ledger.jsonl"
    rng = random.Random(20261201)
    pids: list[int] = []
    kills = 0
    args = run_args(corpus, batch, harness, "--concurrency", "4")
    while kills < 20:
        runner = start(*args)
        pids.append(runner.pid)
        if rng.random() < 0.25:  # a moment of the start-up: lock, config, preflight
            time.sleep(rng.uniform(0.0, 1.0))
        else:  # a moment of the work: once this invocation has started a session
            begun = _started(ledger)
            kit.wait_for(lambda r=runner, n=begun: _started(ledger) > n or r.poll() is not None,
                         timeout_s=120, what="the invocation to start a session")
            time.sleep(rng.uniform(0.0, 1.5))
        if runner.poll() is not None:
            _, err = runner.communicate(timeout=60)
            pytest.fail(f"the runner ended by itself after {kills} kills (exit "
                        f"{runner.returncode}): the stand-in is too fast for 20\n{err}")
        os.kill(runner.pid, signal.SIGKILL)
        kills += 1
        runner.communicate(timeout=60)
        if (batch / "plan.yaml").exists():
            args = ["resume", str(batch)]
    last = cli("resume", str(batch), timeout=1200)
    assert last.returncode == 0, last.stderr
    records = list(read_ledger(batch / "ledger.jsonl"))
    started = Counter((r.arm, r.probe, r.session) for r in records
                      if isinstance(r, StartedRecord))
    final = [r for r in records if isinstance(r, FinalRecord)]
    rows = transcript_rows(batch)
    keys = Counter((a, p, s) for a, p, s, _ in rows)
    assert len(keys) == 200 and set(keys.values()) == {1}  # every session, exactly once
    assert {s for *_, s in rows} == {"recorded"}
    # Each attempt that ended has one final record; a killed runner's attempts have none.
    assert len(final) <= sum(started.values())
    torn = [r for r in records if isinstance(r, TornRecord)]
    nothing_left(pids)
    no_store_left(pids)
    print(f"\n200 sessions, {kills} SIGKILLs, {sum(started.values())} attempts started, "
          f"{len(final)} final, {len(torn)} torn lines set aside, duplicates in transcripts: "
          f"{sum(n - 1 for n in keys.values())}")


def no_store_left(pids: list[int]) -> None:
    """No session store of these (dead) runners is left: no directory under the store root,
    no mount in the host's mountinfo, no loop device backed by one of their images (the
    start-up sweep of the next invocation removes a killed runner's, RC-02 blind sessions)."""
    tags = tuple(f"{pid}." for pid in pids)
    left = [e.name for e in STORE_ROOT.iterdir()] if STORE_ROOT.is_dir() else []
    assert not [name for name in left if name.startswith(tags)], left
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False,
                           timeout=30).stdout.splitlines()  # fmt: skip
    for where in (mounts, loops):
        assert not [line for line in where for tag in tags if f"/store/{tag}" in line], where


# --- signals -------------------------------------------------------------------------------

STUBBORN = """#!/usr/bin/python3
import json, os, signal, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0"); sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(json.dumps({"type": "system", "subtype": "init", "cwd": os.getcwd(),
                  "permissionMode": "dontAsk", "claude_code_version": "2.1.197",
                  "mcp_servers": [], "skills": [], "plugins": [], "memory_paths": {}}),
      flush=True)
print(json.dumps({"type": "assistant", "parent_tool_use_id": None, "message": {
    "id": "msg_1", "model": "claude-stubborn", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}}),
      flush=True)
time.sleep(120)
"""


def _start_stubborn(root: Path) -> tuple[subprocess.Popen[str], Path]:
    corpus = make_corpus(root / "corpus", probes=2, repetitions=1)
    harness = root / "harness"
    harness.write_text(STUBBORN)
    harness.chmod(0o755)
    batch = root / "batch"
    runner = subprocess.Popen([sys.executable, "-m", "campaign", *run_args(
        corpus, batch, harness, "--concurrency", "2")], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=kit.base_env(), cwd=kit.REPO)
    kit.wait_for(lambda: sum(1 for r in read_ledger(batch / "ledger.jsonl")
                             if isinstance(r, StartedRecord)) == 2
                 if (batch / "ledger.jsonl").exists() else False,
                 timeout_s=120, what="both sessions to start")
    time.sleep(1.0)  # the stand-ins are up and ignoring SIGTERM
    return runner, batch


def _started(ledger: Path) -> int:
    """Started records in ``ledger`` so far (0 before it exists)."""
    if not ledger.exists():
        return 0
    return sum(1 for r in read_ledger(ledger) if isinstance(r, StartedRecord))


def _killed(batch: Path) -> list[dict[str, Any]]:
    return [{"state": r.state, "counts": r.counts} for r in finals(batch)]


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_the_sessions_in_flight_and_leaves_the_batch_resumable(
    root: Path, sig: int, status: int
) -> None:
    runner, batch = _start_stubborn(root)
    runner.send_signal(sig)
    _, err = runner.communicate(timeout=120)
    assert runner.returncode == status, err
    # Ended by the runner, so written killed and not held against --retries.
    assert _killed(batch) == [{"state": "killed", "counts": False}] * 2
    for final in finals(batch):  # what the attempt observed before the signal is kept
        assert (final.lines, final.served_model) == (2, "claude-stubborn")
        assert [(c.tool, c.argument) for c in final.calls or []] == [
            ("Bash", "ls")]
        assert final.stream is not None and final.stream_bytes
        kept = list(stream_lines(batch / final.stream))
        assert len(kept) == 2 and all(ended for _, ended in kept)
        assert final.stream_bytes == sum(len(line) + 1 for line, _ in kept)
    assert f"headwater-campaign resume {batch}" in err
    # retranscribe leaves them as recorded: their streams end where the runner stopped them
    again = cli("retranscribe", str(batch))
    assert again.returncode == 0, again.stderr
    assert "left as recorded (2): stopped by the runner (killed)" in again.stderr
    assert _killed(batch)[-2:] == [{"state": "killed", "counts": False}] * 2
    nothing_left([runner.pid])
    stopped = [r for r in read_ledger(batch / "ledger.jsonl") if r.kind == "stopped"]
    # Two were killed in flight, two never started: all four are outstanding.
    assert [(r.reason, r.outstanding) for r in stopped] == [("signal", 4)]

