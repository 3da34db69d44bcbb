"""What the gateway relays and records from the provider: a 529 as it came, the served model and
usage as the provider sent them, and a budget that stops a session mid-way.

The real CLI under real bwrap, against the scripted provider over TLS (docs/gateway.md).
Expected values come from the scripts (what the provider sent) and the rules:

* a provider's 529 passes through as it came (docs/gateway.md, "What it does"): the harness
  retries it as it does without a gateway (three requests in all, then its error result,
  docs/gateway.md "What the pinned harness sends"), the attempt ends ``harness-error``,
  retryable, with ``api_error_status`` 529, and the runner's retry records the session; each
  529 is a forwarded ``request`` row with its status;
* each forwarded row's ``model`` and ``usage`` are the provider's (``message_start`` and
  ``message_delta``: the turn's model and token counts), ``stop_reason`` the turn's, and the
  final record's ``served_model`` the provider's model;
* with ``--max-cost-cents 1`` and a first turn whose usage costs far more, the next request is
  refused ``budget`` (400), the session ends ``budget-stopped`` and the run exits 3; the refused
  requests never reach the provider; ``resume --max-cost-cents`` with a budget that allows it
  reruns the session and records it.

Seen red by weakening the gateway: a 529 relayed as 502 (the rows' statuses); the served
model reported as the requested one (the rows' ``model``); the budget side never refusing (the
first run exits 0, the session recorded).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.slow,
              pytest.mark.timeout(500)]  # fmt: skip

FIRST_USAGE = {"input_tokens": 1234, "output_tokens": 56, "cache_creation_input_tokens": 78,
               "cache_read_input_tokens": 910}
DEFAULT_USAGE = {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
"""A turn's usage when its script names none (docs/provider.md, "Script files")."""
COSTLY_USAGE = {"input_tokens": 1000, "output_tokens": 400_000}
"""Hundreds of thousands of output tokens: dollars at any listed price, past a 1-cent budget."""


def _forwarded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if not r.get("refused")]


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_a_529_passes_through_and_the_rows_hold_the_providers_model_and_usage(
        network: str, harness: Path, bwrap: str) -> None:
    probe, task = "GW-USAGE", "gateway usage: one tool turn, then the answer"
    turns: list[dict[str, Any]] = [
        {"blocks": [kit.bash("t1", "echo usage")], "usage": FIRST_USAGE},
        {"blocks": [{"type": "text", "text": "done\nnothing"}]},
    ]
    with kit.host_dir("hw-gw-usage-") as root, gk.host(root) as h:
        corpus = kit.write_corpus(root / "corpus", {probe: task})
        gk.write_script(root / "scripts", probe, task, turns)
        batch = root / "batch"
        with gk.provider(h, root / "scripts", overloaded_first=3) as served:
            done = gk.run(h, served, corpus, batch, harness, network, "--retries", "1")
            assert done.returncode == 0, done.stderr
            assert served.refused_credentials == 0

        overloaded = gk.request_rows(batch, probe, 1)
        assert [(r["status"], r.get("refused")) for r in overloaded] == [(529, None)] * 3
        assert all(r["request_id"].startswith("req_") for r in overloaded)
        assert all("usage" not in r and "model" not in r for r in overloaded)
        first = gk.final_of(batch, probe, 1)
        assert (first["state"], first["retryable"], first["api_error_status"]) == (
            "harness-error", True, 529)
        assert first["gateway"]["forwarded"] == 3 and first["gateway"]["refused"] == {}

        rows = gk.request_rows(batch, probe, 2)
        assert len(rows) == 2 and _forwarded(rows) == rows
        assert [r["status"] for r in rows] == [200, 200]
        assert [r["model"] for r in rows] == [kit.SERVED_MODEL] * 2
        assert [r["requested_model"] for r in rows] == [kit.MODEL] * 2
        assert [r["usage"] for r in rows] == [FIRST_USAGE, DEFAULT_USAGE]
        assert [r["stop_reason"] for r in rows] == ["tool_use", "end_turn"]
        assert all(r["message_id"].startswith("msg_") for r in rows)
        assert all(r["request_id"].startswith("req_") for r in rows)
        assert all(r["system_digest"].startswith("sha256:") for r in rows)
        assert all(r["cost_usd"] and float(r["cost_usd"]) > 0 for r in rows)
        second = gk.final_of(batch, probe, 2)
        assert second["state"] == "recorded"
        assert second["served_model"] == kit.SERVED_MODEL
        assert second["gateway"]["forwarded"] == 2


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_a_budget_stops_a_session_mid_way_and_a_larger_budget_reruns_it(
        network: str, harness: Path, bwrap: str) -> None:
    probe, task = "GW-BUDGET", "gateway budget: a costly first turn"
    turns: list[dict[str, Any]] = [
        {"blocks": [kit.bash("t1", "echo costly")], "usage": COSTLY_USAGE},
        {"blocks": [{"type": "text", "text": "done\nnothing"}]},
    ]
    with kit.host_dir("hw-gw-budget-") as root, gk.host(root) as h:
        corpus = kit.write_corpus(root / "corpus", {probe: task})
        gk.write_script(root / "scripts", probe, task, turns)
        batch = root / "batch"
        with gk.provider(h, root / "scripts") as served:
            stopped = gk.run(h, served, corpus, batch, harness, network, "--retries", "0",
                             "--max-cost-cents", "1")
            assert stopped.returncode == 3, stopped.stderr
            assert served.requests == {probe: 1}  # the costly turn; the refused never came

            rows = gk.request_rows(batch, probe, 1)
            assert rows[0]["status"] == 200 and "refused" not in rows[0]
            assert float(rows[0]["cost_usd"]) > 0.01
            refusals = rows[1:]
            assert all((r["refused"], r["status"]) == ("budget", 400) for r in refusals)
            assert len(refusals) == 6  # the pinned harness sends a 400 again five times
            # (each with one beta fewer: docs/gateway.md, "What the pinned harness sends")
            final = gk.final_of(batch, probe, 1)
            assert (final["state"], final["retryable"]) == ("budget-stopped", True)
            assert final["gateway"]["forwarded"] == 1
            assert final["gateway"]["refused"] == {"budget": len(refusals)}

            again = kit.cli("resume", str(batch), "--max-cost-cents", "1000000",
                            "--provider-ca", str(h.ca_file), env=h.env())
            assert again.returncode == 0, again.stderr
            assert served.requests == {probe: 3}
        rerun = gk.final_of(batch, probe, 2)
        assert rerun["state"] == "recorded"
        assert [r["status"] for r in gk.request_rows(batch, probe, 2)] == [200, 200]
