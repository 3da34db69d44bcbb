"""An attempt under real bwrap whose provider is its gateway (a fake one passed in).

Rules (docs/batch.md "Session states", "The ledger"; RC-03):

* the session is given its gateway's base URL and placeholder, in the gateway's key
  variable, and nothing secret: no credentials file in its config directory, no host key;
* every request the gateway handed over is a ``request`` record of the attempt, written
  before its final record, which carries the gateway's counts (``gateway``);
* the served model is the provider's, from the row of the final message's ``message.id``,
  not the stream's;
* a session the gateway refused for the budget ends ``budget-stopped`` (retryable, the
  reason names the budget and the larger ``--max-cost-cents`` of a resume); a login the
  gateway could not use ends it ``harness-error``, not retryable, saying how to log in.

The stand-in harness (one self-contained Python file, RC-02) writes what it sees of its
environment and config directory into its workspace, then prints a fixed stream; the
gateway is `tests.fakes.FakeGateways`, which replays the requests a test gives it through
the attempt's real gate, so the ledger, the prices and the budget are the real ones.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import pwd
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest

from campaign.batch import FinalRecord, RequestRecord, SessionKey
from campaign.batch._journal import Journal
from campaign.batch._ledger import read_ledger
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import compose_plan
from campaign.seal import resolve_sessions
from campaign.supervisor._session import BatchContext, GatewayOpener, run_attempt
from campaign.supervisor._spec import SessionSpec, planned_sessions
from campaign.supervisor._spend import BatchSpend
from sandbox import measure_host_layout
from sandbox.gateway import GatewayStats, ProviderRequest, Upstream, Usage
from tests.fakes import FakeGateways, FakeUpstream
from tests.integration.test_record_standins import (
    PROBE,
    STANDIN_WORKSPACE,
    init,
    line,
    make_corpus,
    result,
)
from tests.supervisor.test_gate import TablePrices

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap, pytest.mark.timeout(120)]

STREAM = (init()
          + line({"type": "assistant", "parent_tool_use_id": None, "message": {
              "id": "msg_final", "model": "stream-model",
              "content": [{"type": "text", "text": "HW-DR-0052"}]}})
          + result())
STANDIN = '''#!/usr/bin/python3
import base64, json, os, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (gateway stand-in)"); sys.exit(0)
cfg = os.environ.get("CLAUDE_CONFIG_DIR", "")
seen = {"env": dict(os.environ), "config": sorted(os.listdir(cfg)) if cfg else None}
open("seen.json", "w").write(json.dumps(seen))
os.write(1, base64.b64decode(%r))
'''
SERVED = ProviderRequest(
    at="2026-12-03T12:00:00Z", method="POST", path="/v1/messages?beta=true", status=200,
    request_id="req_1", message_id="msg_final", model="claude-x", requested_model="claude-x",
    usage=Usage(input_tokens=1000, output_tokens=200), stop_reason="end_turn",
    latency_s=0.1, duration_s=0.2)
"""The provider's answer of the final message: served by claude-x, 0.002 USD."""


def _context(tmp_path: Path, bwrap: str, gateways: FakeGateways) -> BatchContext:
    corpus = load_corpus(make_corpus(tmp_path / "corpus"))
    plan = compose_plan(corpus, tier="campaign")
    harness = tmp_path / "standin"
    harness.write_text(STANDIN % base64.b64encode(STREAM).decode())
    harness.chmod(0o755)
    (tmp_path / "batch").mkdir()
    return BatchContext(
        batch=tmp_path / "batch", corpus=corpus, plan=plan,
        sessions=resolve_sessions(corpus, plan.probes, plan.arm_specs),
        harness_path=harness, bwrap=bwrap, layout=measure_host_layout(),
        upstream=cast(Upstream, FakeUpstream()), open_gateway=cast(GatewayOpener, gateways),
        prices=TablePrices(), session_timeout_s=60.0, watchdog_s=30.0,
        post_result_grace_s=5.0, invocation=1, workspace_path=STANDIN_WORKSPACE,
        network="host")


async def _run(ctx: BatchContext, spend_before: Decimal = Decimal(0),
               max_cost_cents: int | None = None) -> tuple[FinalRecord, list[Any]]:
    with Journal(ctx.batch, ctx.plan, planned=planned_sessions(ctx.plan), network="host",
                 provider_note="Provider: a stand-in.") as journal:
        spend = BatchSpend(journal.fold, max_cost_cents=max_cost_cents)
        if spend_before:  # another session in flight has spent this much
            spend.add(SessionKey("present", PROBE, "other"), 1, spend_before)
        spec = SessionSpec(probe=ctx.plan.probes[0], arm=ctx.plan.arm_spec("present"),
                           repetition=1, session="s1")
        final = await run_attempt(spec, 1, ctx, journal, spend=spend)
        assert spend.running_usd() == spend_before  # the attempt's own left with its final
    records = [r for r in read_ledger(ctx.batch / "ledger.jsonl")
               if isinstance(r, RequestRecord | FinalRecord)]
    return final, records


def _seen(ctx: BatchContext) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(
        (ctx.batch / f"sessions/present/{PROBE}/s1/workspace/seen.json").read_text())
    return seen


async def test_the_session_talks_to_its_gateway_and_the_rows_make_its_record(
        tmp_path: Path, bwrap: str) -> None:
    gateways = FakeGateways(requests=(SERVED,))
    ctx = _context(tmp_path, bwrap, gateways)
    final, records = await _run(ctx)
    assert final.state == "recorded", final.reason
    (gateway, _), = gateways.opened
    seen = _seen(ctx)
    assert seen["env"]["ANTHROPIC_BASE_URL"] == gateway.base_url
    assert seen["env"]["ANTHROPIC_API_KEY"] == gateway.placeholder
    assert "ANTHROPIC_AUTH_TOKEN" not in seen["env"]
    assert seen["config"] == []  # no credentials file: the host's stays with the gateway
    assert gateways.max_connections == [ctx.limits.connections]
    # It takes connections of the runner's user (the egress proxy) and the session's own.
    (peers,) = gateways.peer_uids
    assert peers is not None and os.getuid() in peers
    others = peers - {os.getuid()}
    if ctx.session_pool is not None:  # a root runner: the session ran as a session user
        (other,) = others
        assert pwd.getpwuid(other).pw_name.startswith("headwater-session")
    else:
        assert not others
    # The request record first, then the final record with the gateway's counts.
    assert [type(r).__name__ for r in records] == ["RequestRecord", "FinalRecord"]
    assert records[0].cost_usd == Decimal("0.002") and records[0].session == "s1"
    assert final.served_model == "claude-x"  # the provider's, not the stream's
    assert final.gateway is not None
    assert (final.gateway.forwarded, final.gateway.provider_cost_usd,
            final.gateway.prices) == (1, Decimal("0.002"), "2026-11-30")


async def test_without_a_row_for_the_final_message_the_streams_model_stands(
        tmp_path: Path, bwrap: str) -> None:
    other = ProviderRequest(**{**{f: getattr(SERVED, f) for f in SERVED.__slots__},
                               "message_id": "msg_other"})
    ctx = _context(tmp_path, bwrap, FakeGateways(requests=(other,)))
    final, _ = await _run(ctx)
    assert final.served_model == "stream-model"


async def test_a_session_refused_for_the_budget_ends_budget_stopped(
        tmp_path: Path, bwrap: str) -> None:
    ctx = _context(tmp_path, bwrap, FakeGateways(requests=(SERVED, SERVED)))
    final, records = await _run(ctx, spend_before=Decimal("0.05"), max_cost_cents=5)
    assert (final.state, final.retryable) == ("budget-stopped", True)
    assert "5 cents" in final.reason and "larger --max-cost-cents" in final.reason
    assert [r.refused for r in records if isinstance(r, RequestRecord)] == ["budget"] * 2
    assert final.gateway is not None and final.gateway.refused == {"budget": 2}


async def test_a_login_the_gateway_could_not_use_ends_harness_error_not_retried(
        tmp_path: Path, bwrap: str) -> None:
    failure = "the host's login expired at 2026-12-03T11:00:00Z"
    ctx = _context(tmp_path, bwrap, FakeGateways(stats=GatewayStats(login_failure=failure)))
    final, _ = await _run(ctx)
    assert (final.state, final.retryable) == ("harness-error", False)
    assert failure in final.reason and "log in again" in final.reason
    assert final.gateway is not None and final.gateway.login_failure == failure


async def test_with_a_confined_network_the_egress_allows_the_gateway_and_nothing_else(
        tmp_path: Path, bwrap: str) -> None:
    # RC-02 with the gateway: the egress proxy's one allowed target is the session's
    # gateway on host loopback; the provider itself is reachable only by the gateway.
    gateways = FakeGateways(requests=(SERVED,))
    ctx = dataclasses.replace(_context(tmp_path, bwrap, gateways), network="confined")
    final, _ = await _run(ctx)
    (gateway, _), = gateways.opened
    assert final.egress is not None
    assert final.egress.allowed_target == gateway.base_url.removeprefix("http://")
    assert _seen(ctx)["env"]["HTTPS_PROXY"].startswith("http://127.0.0.1:")


async def test_a_gateway_that_cannot_listen_refuses_the_session_before_it_runs(
        tmp_path: Path, bwrap: str) -> None:
    unbound = OSError(98, "Address already in use")
    ctx = _context(tmp_path, bwrap, FakeGateways(unbound=unbound))
    final, records = await _run(ctx)
    assert [r for r in records if isinstance(r, RequestRecord)] == []
    assert (final.state, final.retryable) == ("refused-confinement", False)
    assert "provider gateway could not listen" in final.reason
    assert "Address already in use" in final.reason
    assert not (ctx.batch / f"sessions/present/{PROBE}/s1/workspace/seen.json").exists()
