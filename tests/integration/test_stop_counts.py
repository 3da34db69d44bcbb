"""After SIGINT mid-batch, the closing table and ``status`` agree: no session is running,
and the two cut short are interrupted, never queued (docs/batch.md, "status").

A real ``run`` under real bwrap of three sessions at once: one stand-in session ends at
once (recorded), two sleep far past the signal. SIGINT comes once the first is recorded and
the other two have started; their attempts are written ``killed`` with ``counts: false``.
"""

from __future__ import annotations

import json
import signal

import pytest

from tests.integration import kit
from tests.integration.test_hard_wall import SLOW

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

STANDIN = SLOW.replace("time.sleep(SLEEP_S)",
                       "time.sleep(90 if 'wait' in sys.argv[-1] else 0)")
TASKS = {"STOP-1": "wait a while.", "STOP-2": "wait a while too.", "STOP-3": "say nothing."}


def test_after_sigint_the_closing_table_and_status_count_no_session_running(
        bwrap: str) -> None:
    with kit.host_dir("hw-stopcounts-") as root:
        corpus = kit.write_corpus(root / "corpus", TASKS, tools=["Bash"])
        harness = kit.write_harness(root / "claude", STANDIN)
        kit.write_script(root / "scripts", "unused", "no task says this")
        batch = root / "batch"
        runner = kit.start_cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                               str(batch), "--harness", str(harness), "--provider", "scripted",
                               "--scripts", str(root / "scripts"), "--concurrency", "3",
                               "--retries", "0", env=kit.base_env())
        try:
            def ready() -> bool:
                records = kit.ledger_dicts(batch) if (batch / "ledger.jsonl").exists() else []
                kinds = [str(r["kind"]) for r in records]
                return kinds.count("started") == 3 and kinds.count("final") == 1
            kit.wait_for(ready, timeout_s=120, what="two sessions running, one recorded")
            runner.send_signal(signal.SIGINT)
            out, err = runner.communicate(timeout=120)
        finally:
            if runner.poll() is None:
                kit.kill_group(runner)
        assert runner.returncode == 130, err
        row = next(line.split() for line in out.splitlines() if line.startswith("present "))
        assert row[1:5] == ["0", "0", "2", "1/3"], out  # queued, running, interrupted, recorded
        status = json.loads(kit.cli("status", str(batch), "--json", env=kit.base_env()).stdout)
        arm = status["arms"]["present"]
        assert (arm["queued"], arm["running"], arm["interrupted"], arm["recorded"]) == (
            0, 0, 2, 1)
        assert len(status["interrupted"]) == 2 and status["outstanding"] == 2
