"""One attempt's drive, prepared and concluded, without a sandbox or a harness.

Rules: `prepare_attempt` holds the init line to what the driver asks (RC-04
``dontAsk``) and to the sealed workspace's own ``.mcp.json`` (RC-07), and the
session sees only fixed paths that name nothing of it (RC-02); the sandbox's
network is the batch's settled mode. `conclude_attempt` turns an observation of
the stream into the final record docs/batch.md "Session states" gives: only a
recorded session carries an event (RC-15), any other keeps its calls (BC-01);
retryable is the table's column; a cost is unknown when no result line was
read; a sandbox that did not empty ends ``uncontained`` (not retryable, no
event, the stream's reason quoted); a limit is named only in a
``limit-exceeded`` record.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import compose_plan
from campaign.seal import resolve_sessions
from campaign.supervisor._attempt import Driven, conclude_attempt, prepare_attempt
from campaign.supervisor._facts import Progress
from campaign.supervisor._gate import GateVerdict
from campaign.supervisor._outcome import AttemptOutcome
from campaign.supervisor._session import BatchContext
from campaign.supervisor._spec import SessionSpec, session_order
from campaign.supervisor._staging import Staged
from recorder import (
    PERMISSION_MODE,
    DriveResult,
    InitPolicy,
    Observation,
    StreamObserver,
    digest_text,
)
from recorder._observation import ObservedCall
from recorder.transcript import Call
from sandbox import (
    CONFIG_MOUNT,
    DEFAULT_WRITE_BYTES,
    LimitHit,
    measure_host_layout,
)
from sandbox.gateway import Gateway, Upstream
from sandbox.storage import SessionStore, file_size_limit
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files
from tests.fakes import FakeGateway, FakeUpstream
from tests.recorder.test_transform import POLICY, WS, init, tool_result, tool_use

pytestmark = pytest.mark.anyio
PROBE = "HW-PRB-0001"
INSIDE = "/workspace/corpus"
DIGEST = "sha256:" + "ab" * 32
GATEWAY = cast(Gateway, FakeGateway(base_url="http://127.0.0.1:40001",
                                    placeholder="placeholder-1",
                                    key_variable="ANTHROPIC_AUTH_TOKEN"))
"""A session's gateway for a host login: its placeholder is a bearer token."""


@pytest.fixture
def ctx(tmp_path: Path) -> BatchContext:
    root = write_files(tmp_path / "corpus", {
        ".headwater/probe.yml": probe_yml(tiers={"campaign": {"arms": ["present"],
                                                              "repetitions": 1}}),
        "docs/probes/p1.md": probe_doc(PROBE, "A probe", task="Find the decision.\n"),
        "docs/a.md": doc("HW-A-0001", "A.\n"),
    })
    corpus = load_corpus(root)
    plan = compose_plan(corpus, tier="campaign")
    (tmp_path / "batch").mkdir()
    return BatchContext(
        batch=tmp_path / "batch", corpus=corpus, plan=plan,
        sessions=resolve_sessions(corpus, plan.probes, plan.arm_specs),
        harness_path=Path("/usr/bin/true"), bwrap="bwrap",
        upstream=cast(Upstream, FakeUpstream()), layout=measure_host_layout(),
        session_timeout_s=60.0, watchdog_s=30.0, post_result_grace_s=5.0, invocation=1,
        workspace_path=INSIDE, network="host", session_pool=None)


@pytest.fixture
def spec(ctx: BatchContext) -> SessionSpec:
    return next(session_order(ctx.plan))


def _stage(tmp_path: Path, *, kernel_bounded: bool) -> Staged:
    workspace = tmp_path / "store" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / ".mcp.json").write_text('{"mcpServers": {"docs-search": {"command": "x"}}}')
    (tmp_path / "store" / "log").mkdir()
    store = cast(SessionStore, SimpleNamespace(kernel_bounded=kernel_bounded))
    return Staged(store=store, workspace=workspace, log_dir=tmp_path / "store" / "log")


def test_prepare_holds_the_init_line_to_the_sealed_workspace_and_fixed_paths(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    stage = _stage(tmp_path, kernel_bounded=True)
    prepared = prepare_attempt(spec, ctx, stage=stage, config_dir=tmp_path / "cfg", user=None,
                               egress=None, gateway=GATEWAY, keeper=None)
    assert prepared.policy == InitPolicy(
        permission_mode="dontAsk", declared_mcp_servers=frozenset({"docs-search"}),
        host_skill_names=frozenset(), config_dir=CONFIG_MOUNT, cwd=INSIDE)
    confined = prepared.confined
    assert (confined.workspace_mount, confined.config_mount) == (INSIDE, CONFIG_MOUNT)
    assert confined.name == "session"  # no arm, probe or session in any name it can read
    assert "Find the decision." in " ".join(confined.command)
    assert PERMISSION_MODE in confined.command
    # The batch settled host networking: no egress socket is bound in.
    assert (confined.network, confined.egress_socket) == ("host", None)
    assert confined.file_bytes is None  # a store of its own: the kernel bounds it


def test_the_session_is_given_its_gateway_and_its_placeholder_and_nothing_secret(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    # RC-03 with the gateway: the harness's provider is its gateway's loopback URL and its
    # key that gateway's placeholder, in the variable the host's kind of credential names.
    stage = _stage(tmp_path, kernel_bounded=True)
    prepared = prepare_attempt(spec, ctx, stage=stage, config_dir=tmp_path / "cfg", user=None,
                               egress=None, gateway=GATEWAY, keeper=None)
    env = prepared.confined.env
    assert isinstance(env, dict)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:40001"
    assert env["ANTHROPIC_AUTH_TOKEN"] == "placeholder-1"
    assert "ANTHROPIC_API_KEY" not in env
    assert not any(name.startswith("HTTP") for name in env)  # host network: no proxy


def test_prepare_bounds_each_file_when_the_store_bounds_nothing(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    stage = _stage(tmp_path, kernel_bounded=False)
    prepared = prepare_attempt(spec, ctx, stage=stage, config_dir=tmp_path / "cfg", user=None,
                               egress=None, gateway=GATEWAY, keeper=None)
    assert prepared.confined.file_bytes == file_size_limit(
        ctx.limits.write_bytes or DEFAULT_WRITE_BYTES)


RECORDED = Observation(
    state="recorded", reason="recorded: the last result line has is_error false",
    calls=(ObservedCall(tool="Bash", argument="ls", tool_use_id="t1", result_digest=DIGEST,
                        result_is_error=False, read_path=None, outside_paths=frozenset(),
                        in_subagent=False),),
    produced_paths=(), final_text=None, served_model="claude-x",
    cost_usd=Decimal("0.009600000000000001"), claude_code_version="2.1.0", anomalies=(),
    anomaly_count=0, outside_paths=frozenset(), retryable=False, api_error_status=None,
    lines=4)
"""A recorded session's observation, with one Bash call answered."""


def _obs(**over: Any) -> Observation:
    return replace(RECORDED, **over)


def _driven(*, contained: bool = True, end: str = "exited", lines: int = 4,
            left_out: tuple[str, ...] = (), hit: LimitHit | None = None,
            stderr_end: bytes = b"") -> Driven:
    result = DriveResult(exit_status=0, end=end, tail=None, lines=lines,  # type: ignore[arg-type]
                         stdout_bytes=100, stderr_bytes=0, duration_s=1.23456,
                         line_too_long=None, stderr_end=stderr_end)
    return Driven(result=result, contained=contained, limit_hit=hit, left_out=left_out)


async def _conclude(tmp_path: Path, ctx: BatchContext, spec: SessionSpec, obs: Observation,
                    driven: Driven, hit: LimitHit | None = None,
                    verdict: GateVerdict | None = None) -> AttemptOutcome:
    workspace = tmp_path / "kept"
    workspace.mkdir(exist_ok=True)
    policy = InitPolicy(permission_mode="dontAsk", declared_mcp_servers=frozenset(),
                        host_skill_names=frozenset(), config_dir=CONFIG_MOUNT, cwd=INSIDE)
    return await conclude_attempt(obs, driven, spec=spec, ctx=ctx, workspace=workspace,
                                  checker_tail=tmp_path / "checker.tail", manifest={},
                                  policy=policy, hit=hit, verdict=verdict)


async def test_a_recorded_session_carries_its_event_and_its_exact_cost(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    outcome = await _conclude(tmp_path, ctx, spec, _obs(), _driven())
    assert (outcome.state, outcome.retryable) == ("recorded", False)
    assert outcome.event is not None and outcome.calls is None  # calls only in the event
    assert (outcome.event.probe, outcome.event.session) == (PROBE, spec.session)
    assert outcome.event.calls == [Call(tool="Bash", argument="ls", result=DIGEST)]
    assert outcome.event.produced == [] and "answer" in outcome.event.model_fields_set
    assert (outcome.cost_usd, outcome.cost_known) == (Decimal("0.009600000000000001"), True)
    assert (outcome.network, outcome.egress, outcome.end) == ("host", None, "exited")
    assert outcome.duration_s == 1.235 and outcome.limit is None


BUDGET_STOP = GateVerdict("budget-stopped", "budget-stopped: the gateway refused a request",
                          retryable=True)


async def test_a_gateway_verdict_replaces_the_streams_state_and_keeps_the_calls(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    # docs/batch.md "Session states": a session the gateway refused for the budget ends
    # budget-stopped (retryable, cost counted), even when its stream ended as recorded: a
    # request of it went unanswered, so it is no event; nothing it observed is lost.
    outcome = await _conclude(tmp_path, ctx, spec, _obs(), _driven(), verdict=BUDGET_STOP)
    assert (outcome.state, outcome.retryable, outcome.event) == ("budget-stopped", True, None)
    assert outcome.reason == "budget-stopped: the gateway refused a request"
    assert outcome.calls == (Call(tool="Bash", argument="ls", result=DIGEST),)
    assert outcome.cost_known


UNREACHED = GateVerdict("harness-error", "harness-error: the provider gateway could not reach "
                        "the provider (connection refused)", retryable=True,
                        only_over="harness-error")


async def test_an_unreached_provider_names_the_cause_of_a_harness_error_only(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    # A provider the gateway once could not reach explains a stream that ended
    # harness-error; a session that recorded despite it stays recorded, its event kept.
    failed = _obs(state="harness-error", reason="harness-error: API Error: 502",
                  retryable=True)
    outcome = await _conclude(tmp_path, ctx, spec, failed, _driven(), verdict=UNREACHED)
    assert (outcome.state, outcome.retryable) == ("harness-error", True)
    assert "could not reach the provider (connection refused)" in outcome.reason
    kept = await _conclude(tmp_path, ctx, spec, _obs(), _driven(), verdict=UNREACHED)
    assert kept.state == "recorded" and kept.event is not None


async def test_a_sandbox_that_did_not_empty_is_uncontained_whatever_the_gateway_said(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    outcome = await _conclude(tmp_path, ctx, spec, _obs(), _driven(contained=False),
                              verdict=BUDGET_STOP)
    assert (outcome.state, outcome.retryable) == ("uncontained", False)


async def test_a_timed_out_session_keeps_its_calls_is_retryable_and_its_cost_unknown(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    obs = _obs(state="timed-out", reason="timed-out: the no-output watchdog fired",
               retryable=True, cost_usd=None)
    outcome = await _conclude(tmp_path, ctx, spec, obs, _driven(end="watchdog"))
    assert (outcome.state, outcome.retryable) == ("timed-out", True)
    assert outcome.event is None
    assert outcome.calls == (Call(tool="Bash", argument="ls", result=DIGEST),)
    assert (outcome.cost_usd, outcome.cost_known) == (None, False)


async def test_a_sandbox_that_did_not_empty_ends_uncontained_whatever_the_stream_said(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    outcome = await _conclude(tmp_path, ctx, spec, _obs(), _driven(contained=False))
    assert (outcome.state, outcome.retryable, outcome.event) == ("uncontained", False, None)
    assert outcome.reason.startswith("uncontained: ")
    assert outcome.reason.endswith("its stream alone said recorded: the last result line "
                                   "has is_error false")
    assert outcome.calls == (Call(tool="Bash", argument="ls", result=DIGEST),)
    assert outcome.cost_usd == Decimal("0.009600000000000001")  # the cost was read: counted


async def test_a_limit_is_named_only_when_the_state_is_limit_exceeded(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    hit = LimitHit("memory", "used more than 1 GiB")
    limited = _obs(state="limit-exceeded", reason="limit-exceeded: used more than 1 GiB",
                   retryable=False)
    outcome = await _conclude(tmp_path, ctx, spec, limited, _driven(hit=hit), hit=hit)
    assert (outcome.state, outcome.retryable, outcome.limit) == ("limit-exceeded", False,
                                                                 "memory")
    refused = _obs(state="refused-init", reason="refused-init: permissionMode (RC-07)")
    outcome = await _conclude(tmp_path, ctx, spec, refused, _driven(hit=hit), hit=hit)
    assert (outcome.state, outcome.limit) == ("refused-init", None)


async def test_the_reason_says_what_a_silent_harness_printed_and_what_was_not_kept(
        tmp_path: Path, ctx: BatchContext, spec: SessionSpec) -> None:
    obs = _obs(state="no-result", reason="no-result: the stream ended without a result line",
               retryable=True, cost_usd=None, lines=0)
    driven = _driven(lines=0, left_out=tuple(f"f{i}" for i in range(7)),
                     stderr_end=b"starting\nbwrap: No permissions to create namespace\n\n")
    outcome = await _conclude(tmp_path, ctx, spec, obs, driven)
    assert outcome.reason == (
        'no-result: the stream ended without a result line; nothing was printed on stdout, '
        'and stderr ends "bwrap: No permissions to create namespace"; not kept in the batch: '
        "f0, f1, f2, f3, f4 and 2 more")


def test_a_stopped_attempt_keeps_what_it_observed_with_its_cost_unknown(
        tmp_path: Path) -> None:
    """docs/batch.md: ``killed`` (the runner stopped mid-session) is retryable, its cost
    unknown; it does not count against ``--retries``; what it observed is kept (BC-01):
    its calls with their results' digests, its lines, its non-JSON lines (RC-07)."""
    observer = StreamObserver(policy=POLICY, workspace=WS)
    for line in (init(), tool_use("t1", "Bash", {"command": "ls"}), b"not json",
                 tool_result("t1", "a.md")):
        observer.feed(line)
    progress = Progress(workspace=tmp_path, manifest={}, observer=observer, inside=None)
    stopped = progress.stopped(tmp_path, state="killed", reason="killed: the runner stopped",
                               retryable=True, counts=False)
    assert (stopped.state, stopped.retryable, stopped.counts) == ("killed", True, False)
    assert (stopped.cost_usd, stopped.cost_known) == (None, False)
    assert stopped.calls == (Call(tool="Bash", argument="ls", result=digest_text("a.md")),)
    assert (stopped.lines, stopped.anomalies) == (4, 1)
    assert [a.excerpt for a in stopped.anomaly_lines] == ["not json"]
    assert stopped.event is None and stopped.stream is None  # no stream kept here
