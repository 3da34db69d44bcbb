"""The last budget given stays the batch's until another is given (docs/batch.md, "Budgets").

Real ``run`` and ``resume`` under real bwrap, with a stand-in harness that no session
reaches: ``--est-session-cents 5`` projects more than every budget given here, so each
invocation's budget stops it before any session starts (exit 3), and what each one ran
with is its ``invocation`` record's ``max_cost_cents``.

Rules held: ``resume --max-cost-cents N`` sets the batch's budget, and config.yaml records
it with the invocation that set it; a plain ``resume`` runs with that budget (not the one
the batch was made with); ``status`` shows the spend against it and names its setter; a
batch whose config.yaml has no ``budget`` key (written before the key existed, same
format) still resumes, with the budget its last invocation ran with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

PROBE = "BUDGET-1"
STANDIN = r'''#!/usr/bin/python3
import sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (budget stand-in)"); sys.exit(0)
sys.exit(1)  # never reached: every budget here stops the batch before a session starts
'''


def _budgets_run(batch: Path) -> list[tuple[str, int | None]]:
    return [(r["command"], r.get("max_cost_cents")) for r in kit.ledger_dicts(batch)
            if r["kind"] == "invocation"]


def _config(batch: Path) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((batch / "config.yaml").read_text())
    return data


def test_a_plain_resume_keeps_the_last_budget_given_and_status_shows_it(bwrap: str) -> None:
    with kit.host_dir("hw-budget-") as root:
        corpus = kit.write_corpus(root / "corpus", {PROBE: "say nothing."})
        harness = kit.write_harness(root / "claude", STANDIN)
        batch = root / "batch"
        env = kit.base_env()
        made = kit.run_scripted(root, corpus, harness, "--max-cost-cents", "1",
                                "--est-session-cents", "5")
        assert made.returncode == 3, made.stderr
        budget = _config(batch)["budget"]
        assert (budget["max_cost_cents"], budget["invocation"], budget["command"]) == (1, 1,
                                                                                       "run")
        given = kit.cli("resume", str(batch), "--max-cost-cents", "2", env=env)
        assert given.returncode == 3, given.stderr
        budget = _config(batch)["budget"]
        assert (budget["max_cost_cents"], budget["invocation"], budget["command"]) == (
            2, 2, "resume")
        assert _config(batch)["options"]["max_cost_cents"] == 1  # what the batch was made with
        plain = kit.cli("resume", str(batch), env=env)
        assert plain.returncode == 3, plain.stderr
        assert _budgets_run(batch) == [("run", 1), ("resume", 2), ("resume", 2)]
        assert _config(batch)["budget"]["invocation"] == 2  # a plain resume sets nothing
        status = json.loads(kit.cli("status", str(batch), "--json", env=env).stdout)
        assert status["max_cost_cents"] == 2
        assert status["budget_set_by"]["invocation"] == 2
        shown = kit.cli("status", str(batch), env=env).stdout
        assert "of a $0.02 budget (--max-cost-cents 2; set by resume, invocation 2)" in shown, shown


def test_a_batch_whose_config_records_no_budget_resumes_with_its_last_invocations(
        bwrap: str) -> None:
    with kit.host_dir("hw-budget-") as root:
        corpus = kit.write_corpus(root / "corpus", {PROBE: "say nothing."})
        harness = kit.write_harness(root / "claude", STANDIN)
        batch = root / "batch"
        env = kit.base_env()
        assert kit.run_scripted(root, corpus, harness, "--max-cost-cents", "1",
                                "--est-session-cents", "5").returncode == 3
        assert kit.cli("resume", str(batch), "--max-cost-cents", "2",
                       env=env).returncode == 3
        # What a runner from before the key wrote: the same format, no `budget`.
        config = _config(batch)
        del config["budget"]
        yaml = YAML(typ="safe")
        yaml.default_flow_style = False
        with (batch / "config.yaml").open("w") as f:
            yaml.dump(config, f)
        assert config["format"] == 2
        plain = kit.cli("resume", str(batch), env=env)
        assert plain.returncode == 3, plain.stderr  # resumed (a refusal is 2), then budget
        assert _budgets_run(batch) == [("run", 1), ("resume", 2), ("resume", 2)]
        assert "budget" not in _config(batch)  # a plain resume leaves the file as it was
