"""``--max-wall D --hard-wall``: at D the sessions still running are cancelled (docs/batch.md,
"Budgets").

A real ``run`` under real bwrap whose stand-in harness prints its init line and then sleeps
for `SLEEP_S` seconds (far past the wall, well within ``--session-timeout``). Rules held:
the invocation ends soon after D, not when the sessions would have; each session still
running is written ``killed`` with ``counts: false`` (as a signal's are), its reason naming
the wall; the ledger has a ``budget-stop`` record of the wall and a ``stopped`` record with
reason ``budget``; the exit status is 3; the closing table and ``status`` count the two
sessions interrupted, none running or queued; and ``resume`` reruns them (attempt 2).
Without ``--max-wall``, ``--hard-wall`` is refused (exit 2) before anything runs; by
``resume`` too, on a batch whose run had no wall, even when nothing is left to run (seen
red: that resume exited 0, the flag unread).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

WALL_S = 4
SLEEP_S = 90
SLOW = r'''#!/usr/bin/python3
import json, os, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (hard wall stand-in)"); sys.exit(0)
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
      "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
time.sleep(SLEEP_S)
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": "nothing"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''
TASKS = {"WALL-1": "wait a while.", "WALL-2": "wait a while too."}


def test_the_hard_wall_cancels_running_sessions_and_resume_reruns_them(bwrap: str) -> None:
    with kit.host_dir("hw-hardwall-") as root:
        corpus = kit.write_corpus(root / "corpus", TASKS, tools=["Bash"])
        harness = kit.write_harness(root / "claude",
                                    SLOW.replace("time.sleep(SLEEP_S)", f"time.sleep({SLEEP_S})"))
        batch = root / "batch"
        began = time.monotonic()
        run = kit.run_scripted(root, corpus, harness, "--concurrency", "2", "--max-wall",
                               f"{WALL_S}s", "--hard-wall", "--session-timeout", "600")
        took = time.monotonic() - began
        assert run.returncode == 3, run.stderr
        assert took < SLEEP_S / 2, took  # ended at the wall, not when the sessions would have
        # Said before anything runs, and in the advice: the wall, hard, and --max-wall to change.
        assert (f"wall-clock budget: {WALL_S:g} s from this invocation's start (--max-wall)"
                in run.stderr) and "cancelled (--hard-wall" in run.stderr
        assert "Resume with a larger budget" in run.stderr and "--max-wall D" in run.stderr
        assert "--max-cost-cents N" not in run.stderr.split("Resume with a larger budget")[1]
        records = kit.ledger_dicts(batch)
        finals = [r for r in records if r["kind"] == "final"]
        assert sorted(r["probe"] for r in finals) == sorted(TASKS)
        for final in finals:
            assert (final["state"], final["counts"], final["retryable"]) == (
                "killed", False, True), final
            assert "wall-clock budget" in final["reason"] and "--hard-wall" in final["reason"]
        (stop,) = [r for r in records if r["kind"] == "budget-stop"]
        assert (stop["budget"], stop["limit"]) == ("wall", WALL_S)
        assert [r["reason"] for r in records if r["kind"] == "stopped"] == ["budget"]
        assert [r.get("hard_wall") for r in records if r["kind"] == "invocation"] == [True]
        row = next(line.split() for line in run.stdout.splitlines()
                   if line.startswith("present "))
        assert row[1:5] == ["0", "0", "2", "0/2"], run.stdout  # queued, running, interrupted

        status = json.loads(kit.cli("status", str(batch), "--json", env=kit.base_env()).stdout)
        assert status["outstanding"] == 2 and len(status["interrupted"]) == 2
        assert (status["arms"]["present"]["interrupted"],
                status["arms"]["present"]["queued"]) == (2, 0)

        harness.write_text(SLOW.replace("time.sleep(SLEEP_S)", "pass"))  # same version line
        resumed = kit.cli("resume", str(batch), "--max-wall", "120", env=kit.base_env())
        assert resumed.returncode == 0, resumed.stderr
        last = kit.finals(batch)
        assert {(p, r["state"], r["attempt"]) for (p, _), r in last.items()} == {
            (p, "recorded", 2) for p in TASKS}


def test_hard_wall_without_max_wall_is_refused_before_anything(bwrap: str) -> None:
    with kit.host_dir("hw-hardwall-") as root:
        corpus = kit.write_corpus(root / "corpus", TASKS, tools=["Bash"])
        harness = kit.write_harness(root / "claude", SLOW)
        run = kit.run_scripted(root, corpus, harness, "--hard-wall")
        assert run.returncode == 2, run.stderr
        assert "--hard-wall needs --max-wall" in run.stderr
        assert not (root / "batch").exists()


def test_resume_with_hard_wall_but_no_wall_is_refused_and_changes_nothing(bwrap: str) -> None:
    # the batch was run without --max-wall, so resume has no recorded wall either: its
    # --hard-wall would cancel at nothing, and must be refused as run's is
    with kit.host_dir("hw-hardwall-") as root:
        corpus = kit.write_corpus(root / "corpus", TASKS, tools=["Bash"])
        harness = kit.write_harness(root / "claude", SLOW.replace("time.sleep(SLEEP_S)", "pass"))
        batch = root / "batch"
        run = kit.run_scripted(root, corpus, harness)
        assert run.returncode == 0, run.stderr
        ledger = (batch / "ledger.jsonl").read_bytes()
        resumed = kit.cli("resume", str(batch), "--hard-wall", env=kit.base_env())
        assert resumed.returncode == 2, resumed.stderr
        assert "--hard-wall needs --max-wall" in resumed.stderr
        assert (batch / "ledger.jsonl").read_bytes() == ledger
