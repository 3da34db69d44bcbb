"""One attempt of one session: seal, confine, drive, observe, record.

This is where the three packages meet. Every attempt ends in exactly one
state of DESIGN.md's table and leaves two ledger lines ("started", then
"final"); only a ``recorded`` attempt carries an event. Nothing observed is
lost: a refusal, a fault or a cancellation still writes its final line (a
cancelled attempt is written as ``killed`` before the cancellation goes on).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import anyio

from recorder._command import PERMISSION_MODE, harness_command
from recorder._driver import drive_child
from recorder._event import build_event, observed_calls
from recorder._findings import run_checker
from recorder._initcheck import InitPolicy, declared_mcp_servers_of, host_skill_names
from recorder._transform import Observation, StreamObserver
from sandbox._argv import NetworkMode
from sandbox._config import Credentials, session_config_dir
from sandbox._confined import ConfinedSpec, open_confined
from sandbox._egress import EgressProxy
from sandbox._env import session_environment
from sandbox._errors import ConfinementUnavailable
from sandbox._layout import HostLayout
from sandbox._network import BRIDGE_URL, open_session_egress
from sandbox._privileges import SessionUser
from sandbox._privileges import session_user as _current_session_user

from ._batch import session_paths
from ._corpus import Corpus
from ._errors import SealRefused
from ._ledger import Ledger, utc_now
from ._plan import Plan
from ._seal import seal_workspace

HARNESS_MOUNT: Final = "/opt/harness/claude"
"""Where the harness binary is bound read-only inside the sandbox (RC-02)."""
WATCHDOG_S: Final = 600.0
"""No-output watchdog default (DESIGN.md, defaults)."""
SESSION_TIMEOUT_S: Final = 1800.0
"""Per-session wall limit default (DESIGN.md, ``--session-timeout``)."""


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """One session to run: a probe, an arm, a repetition, and its name in the batch."""

    probe: str
    arm: str
    repetition: int
    session: str
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class BatchContext:
    """What every session of a batch shares (read-only while the batch runs)."""

    batch: Path
    corpus: Corpus
    plan: Plan
    harness: Path
    """Host path of the harness executable (resolved, bound read-only at HARNESS_MOUNT)."""
    bwrap: str
    credentials: Credentials
    provider_url: str | None
    layout: HostLayout
    session_timeout_s: float = SESSION_TIMEOUT_S
    watchdog_s: float = WATCHDOG_S
    host_skill_dirs: tuple[Path, ...] = ()
    produced_extra: tuple[str, ...] = ()
    discard_workspaces: bool = False
    network: NetworkMode = "confined"
    """``confined``: own network namespace, egress proxy to the provider only (the default);
    ``host``: the host's network (RC-05's one admitted exception; the prose says so)."""
    session_user: SessionUser | None = field(default_factory=_current_session_user)
    """Who sessions run as (issue 5, no root inside): None for a runner that is not root; for
    a root runner ``headwater-session``, dropped to before bwrap starts. Looked up when the
    context is made; raises `SessionUserUnusable` there when a root runner has no such user."""


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """The final state of one attempt, as written to the ledger."""

    spec: SessionSpec
    state: str
    reason: str
    cost_usd: Decimal | None
    outside_paths: int
    record: dict[str, Any] = field(repr=False)


def _final_record(spec: SessionSpec, started: str, **facts: Any) -> dict[str, Any]:
    return {
        "kind": "final",
        "arm": spec.arm,
        "probe": spec.probe,
        "session": spec.session,
        "repetition": spec.repetition,
        "attempt": spec.attempt,
        "started_at": started,
        "at": utc_now(),
        **facts,
    }


async def run_session(spec: SessionSpec, ctx: BatchContext, ledger: Ledger) -> SessionOutcome:
    """Run one attempt of ``spec`` and write its two ledger lines.

    **Cancellation:** the harness is reaped by the driver, the credentials
    copy is removed, the attempt is written as ``killed`` (reason
    "cancelled"), and the cancellation propagates.

    Returns:
        The outcome. A non-recorded state is data, not an exception.

    Raises:
        Only unexpected errors (bugs); refusals and faults become states.
    """
    paths = session_paths(ctx.batch, arm=spec.arm, probe=spec.probe, session=spec.session)
    started = utc_now()
    ledger.append(
        {"kind": "started", "arm": spec.arm, "probe": spec.probe, "session": spec.session,
         "repetition": spec.repetition, "attempt": spec.attempt, "at": started}
    )
    if paths.root.exists():  # a rerun of an attempt that did not finish
        shutil.rmtree(paths.root)
    paths.root.mkdir(parents=True)
    paths.log_dir.mkdir()
    try:
        sealed = await anyio.to_thread.run_sync(
            lambda: seal_workspace(
                ctx.corpus, probe_id=spec.probe, arm=spec.arm, out=paths.workspace
            )
        )
    except SealRefused as exc:
        return _finish(spec, ledger, _final_record(
            spec, started, state="refused-seal", reason=f"RC-09: {exc}", cost_usd=None,
            cost_known=True, outside_paths=0, anomalies=0, retryable=False,
            served_model=None, claude_code_version=None,
        ))
    paths.manifest.write_text(json.dumps(sealed.manifest, indent=1, sort_keys=True) + "\n")
    try:
        owner = (ctx.session_user.uid, ctx.session_user.gid) if ctx.session_user else None
        async with open_session_egress(ctx.network, ctx.provider_url, owner=owner) as egress:
            record = await _drive(spec, ctx, paths, sealed.manifest, started, egress)
    except (anyio.get_cancelled_exc_class(), KeyboardInterrupt):
        # The runner is stopping (a signal, a budget): the attempt ends killed.
        # Synchronous (no checkpoint): written whole even while cancelled. Any
        # other exception is a bug: it propagates (exit 1), and the attempt
        # stays without a final line, which is the truth (it never finished).
        _finish(spec, ledger, _final_record(
            spec, started, state="killed", reason="cancelled: the runner stopped mid-session",
            cost_usd=None, cost_known=False, outside_paths=0, anomalies=0, retryable=True,
            served_model=None, claude_code_version=None,
        ))
        raise
    if ctx.discard_workspaces:
        shutil.rmtree(paths.workspace, ignore_errors=True)
    return _finish(spec, ledger, record)


def _finish(spec: SessionSpec, ledger: Ledger, record: dict[str, Any]) -> SessionOutcome:
    ledger.append(record)
    cost = record.get("cost_usd")
    return SessionOutcome(
        spec=spec,
        state=str(record["state"]),
        reason=str(record.get("reason", "")),
        cost_usd=Decimal(cost) if cost is not None else None,
        outside_paths=int(record.get("outside_paths", 0)),
        record=record,
    )


async def _drive(
    spec: SessionSpec, ctx: BatchContext, paths: Any, manifest: dict[str, str], started: str,
    egress: EgressProxy | None = None,
) -> dict[str, Any]:
    probe = ctx.corpus.probes[spec.probe]
    name = f"{spec.arm}-{spec.probe}-{spec.session}"
    with session_config_dir(ctx.credentials, name=name, owner=ctx.session_user) as cfg:
        policy = InitPolicy(
            permission_mode=PERMISSION_MODE,
            declared_mcp_servers=declared_mcp_servers_of(paths.workspace),
            host_skill_names=host_skill_names([*ctx.host_skill_dirs, cfg / "skills"]),
            config_dir=str(cfg),
        )
        observer = StreamObserver(policy=policy, workspace=paths.workspace)
        env = session_environment(
            config_dir=cfg, log_dir=paths.log_dir, provider_url=ctx.provider_url,
            credentials=ctx.credentials, egress_proxy=BRIDGE_URL if egress else None,
        )
        command = harness_command(
            harness_mount=HARNESS_MOUNT, task=probe.task, model=ctx.plan.model,
            allowed_tools=ctx.plan.arm_spec(spec.arm).allowed_tools,  # per arm (mcp adds)
        )
        # The recipe of every sandbox: hand-over to the session user, init shell and
        # lifeline, the bridge with a confined network, --args, teardown (sandbox._confined).
        confined = ConfinedSpec(
            command=command, executable=ctx.harness, mount=HARNESS_MOUNT,
            network="confined" if egress else "host",
            egress_socket=egress.socket_path if egress else None, env=env, bwrap=ctx.bwrap,
            layout=ctx.layout, user=ctx.session_user, workspace=paths.workspace,
            log_dir=paths.log_dir, config_dir=cfg, name=name,
        )
        try:  # a refusal before the spawn has spent nothing
            async with open_confined(confined) as sandbox:
                result = await drive_child(
                    sandbox.child, on_line=observer.feed, stderr_tail=paths.stderr_tail,
                    wall_limit_s=ctx.session_timeout_s, watchdog_s=ctx.watchdog_s,
                )
        except ConfinementUnavailable as exc:  # no session user, no cgroup, no filter
            return _final_record(
                spec, started, state="refused-confinement", reason=f"RC-05: {exc}",
                cost_usd=None, cost_known=True, outside_paths=0, anomalies=0,
                retryable=False, served_model=None, claude_code_version=None,
            )
    obs = observer.finish(end=result.end, exit_status=result.exit_status, tail=result.tail,
                          too_long=str(result.line_too_long) if result.line_too_long else None)
    facts: dict[str, Any] = {
        "state": obs.state,
        "reason": obs.reason,
        "cost_usd": str(obs.cost_usd) if obs.cost_usd is not None else None,
        "cost_known": obs.cost_usd is not None,
        "outside_paths": len(obs.outside_paths),
        "anomalies": obs.anomaly_count,
        "retryable": obs.retryable,
        "served_model": obs.served_model,
        "claude_code_version": obs.claude_code_version,
        "exit_status": result.exit_status,
        "end": result.end,
        "duration_s": round(result.duration_s, 3),
        "lines": result.lines,
        "network": "confined" if egress else "host",
    }
    if egress is not None:  # the harness has exited: the counts are final
        facts["egress"] = egress.stats().as_record()
    facts.update(_observed_extras(obs))
    if obs.state == "recorded":
        findings = None
        if ctx.corpus.config.checker:  # RC-11: no checker -> no findings key
            checked = await run_checker(
                ctx.corpus.config.checker, corpus_root=ctx.corpus.root,
                workspace=paths.workspace, bwrap=ctx.bwrap, layout=ctx.layout,
                stderr_tail=paths.root / "checker.stderr.tail", user=ctx.session_user,
            )
            findings = checked.findings
            if checked.note is not None:  # never a pass: no findings key, and said
                facts["findings_note"] = checked.note
        event = await anyio.to_thread.run_sync(
            lambda: build_event(
                obs, probe=spec.probe, session=spec.session, workspace=paths.workspace,
                manifest=manifest, declared_answers=probe.answers, corpus_ids=ctx.corpus.ids,
                produced_extra=ctx.produced_extra, findings=findings,
            )
        )
        facts["event"] = event.model_dump(mode="json", exclude_unset=True)
    else:  # nothing observed is lost: the calls stay in the ledger (BC-01)
        facts["calls"] = [
            call.model_dump(mode="json", exclude_unset=True)
            for call in observed_calls(obs.calls, workspace=paths.workspace, manifest=manifest)
        ]
    return _final_record(spec, started, **facts)


def _observed_extras(obs: Observation) -> dict[str, Any]:
    """Anomalies and orphan results, kept with the attempt (RC-07, RC-10); {} when none."""
    extras: dict[str, Any] = {}
    if obs.anomalies:
        extras["anomaly_lines"] = [
            {"line": a.line_number, "size_bytes": a.size_bytes, "excerpt": a.excerpt}
            for a in obs.anomalies
        ]
    if obs.orphan_results:
        extras["orphan_results"] = [
            {"line": o.line_number, "tool_use_id": o.tool_use_id, "result": o.result_digest,
             "repeated": o.repeated}
            for o in obs.orphan_results
        ]
    return extras
