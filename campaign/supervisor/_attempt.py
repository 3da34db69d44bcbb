"""One attempt's drive in three steps: prepare the sandbox, run the harness in it, conclude.

* `prepare_attempt`: the init policy, the stream's observer and the sandbox's recipe
  (`ConfinedSpec`) of one session, from its sealed workspace, config directory, session
  user and egress; nothing runs.
* `drive_attempt`: the sandbox opened and the harness driven to its end; what the batch
  keeps of the workspace and log is copied into it once every process of the session is
  gone (`Driven`).
* `conclude_attempt`: from the `Observation` of the stream and what the drive saw, the
  attempt's typed `AttemptOutcome`: its state and reason (docs/batch.md "Session states"),
  and for a recorded session the checker's findings and the event (RC-10..RC-15).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import anyio

from campaign.batch import EgressCounts
from campaign.supervisor._facts import (
    Progress,
    kept_stream_check,
    limit_reason,
    silent_stdout,
    uncontained_reason,
)
from campaign.supervisor._gate import GateVerdict
from campaign.supervisor._outcome import AttemptOutcome
from campaign.supervisor._staging import Staged, keep
from recorder import (
    MAX_SESSION_LINES,
    PERMISSION_MODE,
    DriveResult,
    InitPolicy,
    Observation,
    StreamObserver,
    UnreadFile,
    build_event,
    declared_mcp_servers_of,
    drive_child,
    harness_command,
    host_skill_names,
    observed_calls,
    run_checker,
)
from sandbox import (
    BRIDGE_URL,
    CONFIG_MOUNT,
    DEFAULT_WRITE_BYTES,
    HARNESS_MOUNT,
    LOG_MOUNT,
    ConfinedSpec,
    EgressProxy,
    LimitHit,
    Limits,
    Sandbox,
    SessionUser,
    format_bytes,
    open_confined,
    session_environment,
)
from sandbox.gateway import Gateway
from sandbox.storage import file_size_limit

if TYPE_CHECKING:
    from collections.abc import Mapping

    from campaign.batch import SessionPaths

    from ._session import BatchContext
    from ._spec import SessionSpec
    from ._streams import StreamKeeper

SESSION_LABEL: Final = "session"
"""The label of every session's config directory, cgroup and scratch names: the same for
every session, so that no name a session can read names its arm, probe or session (RC-02)."""
LEFT_OUT_NAMED: Final = 5
"""Entries the copy into the batch left out that a reason names; further ones are counted."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """One session's sandbox, ready to open: what its init line is held to, the observer of
    its stream (held to that policy) and the sandbox's recipe."""

    policy: InitPolicy
    observer: StreamObserver
    confined: ConfinedSpec


@dataclass(frozen=True, slots=True)
class Driven:
    """What the drive of one session saw, besides its stream."""

    result: DriveResult
    contained: bool
    """The sandbox's cgroup emptied within its bound after the kill (else ``uncontained``)."""
    limit_hit: LimitHit | None
    """The sandbox's limit the session passed (the first), or None."""
    left_out: tuple[str, ...] = ()
    """What the copy of the workspace and log into the batch left out (docs/storage.md)."""


def prepare_attempt(spec: SessionSpec, ctx: BatchContext, *, stage: Staged, config_dir: Path,
                    user: SessionUser | None, egress: EgressProxy | None,
                    gateway: Gateway, keeper: StreamKeeper | None) -> Prepared:
    """The init policy, observer and `ConfinedSpec` of one attempt of ``spec``.

    The session's provider is its ``gateway``: ``ANTHROPIC_BASE_URL`` is the gateway's
    base URL and its placeholder goes in the gateway's key variable (``ANTHROPIC_API_KEY``
    or ``ANTHROPIC_AUTH_TOKEN``); nothing secret enters the sandbox (RC-03).

    Args:
        stage: the attempt's store, its workspace sealed (`campaign.supervisor._staging`).
        config_dir: the session's config directory on the host (`sandbox.session_config_dir`).
        user: the leased session user (None: a runner that is not root runs as itself).
        egress: the session's egress proxy, whose one allowed target is the gateway; None
            exactly when the batch's network is ``host`` (`BatchContext.network`, settled
            when the batch opened): the harness then connects to the gateway directly.
        gateway: the session's provider gateway (`sandbox.gateway.open_gateway`).
        keeper: the kept stream, whose size the sandbox's watch holds to the writes limit.

    The policy holds the workspace's own ``.mcp.json`` declaration (the file this session's
    harness loads, after the arm), the host's skill names and the fixed paths the session
    sees (RC-02, RC-07). Reads the sealed workspace's ``.mcp.json`` and the skill
    directories; runs nothing.
    """
    inside = ctx.workspace_path
    policy = InitPolicy(
        permission_mode=PERMISSION_MODE,
        declared_mcp_servers=declared_mcp_servers_of(stage.workspace),
        host_skill_names=host_skill_names([*ctx.host_skill_dirs, config_dir / "skills"]),
        config_dir=CONFIG_MOUNT, cwd=inside,
    )
    observer = StreamObserver(policy=policy, workspace=stage.workspace, inside=inside)
    # What the session is told names nothing of it: its directories at fixed paths (RC-02).
    env = session_environment(
        config_dir=Path(CONFIG_MOUNT), log_dir=Path(LOG_MOUNT),
        provider_url=gateway.base_url,
        provider_key=(gateway.key_variable, gateway.placeholder),
        egress_proxy=BRIDGE_URL if egress else None,
    )
    command = harness_command(
        harness_mount=HARNESS_MOUNT, task=spec.probe.task, model=ctx.plan.model,
        allowed_tools=spec.arm.allowed_tools,  # per arm (mcp adds)
    )
    # The recipe of every sandbox: hand-over to the session user, init shell and
    # lifeline, the bridge with a confined network, --args, teardown (`sandbox.open_confined`).
    confined = ConfinedSpec(
        command=command, executable=ctx.harness_path, mount=HARNESS_MOUNT, network=ctx.network,
        egress_socket=egress.socket_path if egress else None, env=env, bwrap=ctx.bwrap,
        layout=ctx.layout, user=user, workspace=stage.workspace,
        log_dir=stage.log_dir, config_dir=config_dir, workspace_mount=inside,
        log_mount=LOG_MOUNT, config_mount=CONFIG_MOUNT, name=SESSION_LABEL, limits=ctx.limits,
        reclaim_log=False,  # copied from the store into the batch (_staging.keep)
        limit_checks=(*((egress.limit_hit,) if egress else ()),
                      *((kept_stream_check(keeper, ctx.limits.write_bytes),)
                        if keeper is not None and ctx.limits.write_bytes else ())),
        file_bytes=_file_bound(stage, ctx.limits.write_bytes),
    )
    return Prepared(policy=policy, observer=observer, confined=confined)


async def drive_attempt(prepared: Prepared, ctx: BatchContext, *, paths: SessionPaths,
                        stage: Staged, keeper: StreamKeeper | None,
                        progress: Progress | None) -> Driven:
    """Open the sandbox of ``prepared``, drive the harness to its end, keep what the batch keeps.

    Once every process of the session is gone, its workspace and log are copied from the
    store into the batch (past the writes limit: the listing, not the bytes;
    docs/storage.md). A sandbox whose cgroup did not empty keeps nothing: ``progress``
    learns the ``uncontained`` reason.

    **Cancellation:** the driver reaps the harness; the copy into the batch is shielded.

    Raises:
        ConfinementUnavailable: the sandbox could not be made (no session user, no cgroup,
            no filter): nothing ran.
    """
    sandbox: Sandbox | None = None
    left_out: list[str] = []
    try:
        async with open_confined(prepared.confined) as sandbox:
            result = await drive_child(
                sandbox.child, on_line=prepared.observer.feed, stderr_tail=paths.stderr_tail,
                wall_limit_s=ctx.session_timeout_s, watchdog_s=ctx.watchdog_s,
                post_result_grace_s=ctx.post_result_grace_s,
                on_chunk=keeper.write if keeper is not None else None,
                on_idle=keeper.flush if keeper is not None else None,
                max_stdout_bytes=ctx.limits.stdout_bytes,
                max_stderr_bytes=ctx.limits.stdout_bytes, max_lines=MAX_SESSION_LINES,
            )
    finally:  # every process of the session is gone: what the batch keeps, into it
        if sandbox is None or sandbox.contained:
            over = sandbox is not None and sandbox.limit_hit is not None \
                and sandbox.limit_hit.limit == "writes"
            with anyio.CancelScope(shield=True):
                left_out = await anyio.to_thread.run_sync(
                    lambda: keep(stage, workspace=paths.workspace, log_dir=paths.log_dir,
                                 log_bytes=ctx.limits.write_bytes or DEFAULT_WRITE_BYTES,
                                 over_writes=over))
        elif progress is not None:  # something of it may still write: nothing is kept
            progress.uncontained = uncontained_reason()
        if progress is not None:  # uncontained: the batch's, which holds nothing of it
            progress.workspace = paths.workspace
    return Driven(result=result, contained=sandbox.contained, limit_hit=sandbox.limit_hit,
                  left_out=tuple(left_out))


def observe_end(observer: StreamObserver, driven: Driven,
                limits: Limits) -> tuple[Observation, LimitHit | None]:
    """The stream's `Observation` as the drive ended it, and the limit the session passed.

    The record's own bound, when the stream passed one, was passed before the reader's
    stdout bound ended the session: the first bound passed is the one named.
    """
    result = driven.result
    hit = driven.limit_hit or (None if observer.bound_passed else _stdout_hit(result.end, limits))
    obs = observer.finish(end=result.end, exit_status=result.exit_status, tail=result.tail,
                          too_long=result.line_too_long,
                          limit_exceeded=limit_reason(hit))
    return obs, hit


async def conclude_attempt(
    obs: Observation, driven: Driven, *, spec: SessionSpec, ctx: BatchContext,
    workspace: Path, checker_tail: Path, manifest: Mapping[str, str], policy: InitPolicy,
    hit: LimitHit | None = None, egress: EgressCounts | None = None,
    user: SessionUser | None = None, verdict: GateVerdict | None = None,
) -> AttemptOutcome:
    """The typed outcome of an attempt whose harness ran, from what its stream showed.

    Args:
        obs: the stream's observation (`observe_end`), whose state and retryable are the
            stream's (docs/batch.md "Session states").
        driven: what the drive saw; a sandbox that is not ``contained`` makes the attempt
            ``uncontained`` whatever the stream said (not retryable), and nothing of its
            workspace is read: no checker, no event.
        workspace: the batch's copy of the session's workspace (read for a recorded one).
        checker_tail: where the probe's checker's stderr tail goes, if it runs.
        manifest: the sealed workspace's digests (RC-09), for the calls' Read results.
        policy: what the init line was held to (kept, for ``retranscribe``).
        hit: the limit the session passed (`observe_end`); named in the record only when
            the state is ``limit-exceeded``.
        egress: the egress proxy's counts, final (the harness has exited); None with
            ``--network host``.
        user: the session user the checker runs as.
        verdict: what the provider gateway's refusals make of the attempt
            (`AttemptGate.verdict`: ``budget-stopped``, or ``harness-error`` for a login it
            could not use); it replaces the stream's state, reason and retryable (a
            sandbox that is not contained is ``uncontained`` all the same).

    Returns:
        For ``recorded``: the event (RC-15) and, when the corpus names a checker (RC-11),
        its findings in the event or the reason it gave none. For any other state: the
        calls seen, so nothing observed is lost (BC-01).
    """
    result = driven.result
    contained = driven.contained
    if verdict is not None and verdict.only_over in (None, obs.state):  # the gateway's word
        obs = replace(obs, state=verdict.state, reason=verdict.reason,
                      retryable=verdict.retryable)
    outcome = AttemptOutcome(
        state=obs.state if contained else "uncontained",
        reason=_reason(obs, result, driven.left_out, contained),
        retryable=obs.retryable and contained,
        cost_usd=obs.cost_usd, cost_known=obs.cost_usd is not None,
        outside_paths=len(obs.outside_paths), anomalies=obs.anomaly_count,
        served_model=obs.served_model, served_message_id=obs.served_message_id,
        claude_code_version=obs.claude_code_version,
        api_error_status=obs.api_error_status, exit_status=result.exit_status,
        end=result.end, duration_s=round(result.duration_s, 3), lines=result.lines,
        network=ctx.network, egress=egress,
        limit=hit.limit if hit is not None and obs.state == "limit-exceeded" else None,
        anomaly_lines=obs.anomalies, orphan_results=obs.orphan_results,
        permission_denials=obs.denied_tools, init_policy=policy, final_text=obs.final_text,
        unknown_init_keys=obs.unknown_init_keys,
    )
    inside = policy.cwd
    if outcome.state != "recorded":  # nothing observed is lost: the calls stay (BC-01)
        # Uncontained: the workspace holds nothing of the attempt (not kept), so no file
        # the session made is read; a sealed file's Read keeps the manifest's digest.
        calls = observed_calls(obs.calls, workspace=workspace, manifest=manifest,
                               inside=inside)
        return replace(outcome, calls=tuple(calls))
    findings = None
    findings_note = None
    if ctx.corpus.config.checker:  # RC-11: no checker -> no findings key
        checked = await run_checker(
            ctx.corpus.config.checker, corpus_root=ctx.corpus.root, workspace=workspace,
            bwrap=ctx.bwrap, layout=ctx.layout, stderr_tail=checker_tail, user=user)
        findings = checked.findings
        findings_note = checked.note  # never a pass: no findings key, and said
    unread: list[UnreadFile] = []
    event = await anyio.to_thread.run_sync(
        lambda: build_event(
            obs, probe=spec.probe.id, session=spec.session, workspace=workspace,
            manifest=manifest, declared_answers=spec.probe.answers, corpus_ids=ctx.corpus.ids,
            produced_extra=ctx.produced_extra, findings=findings, unread=unread,
            inside=inside,
        )
    )
    return replace(outcome, event=event, findings_note=findings_note,
                   unread_artifacts=tuple(unread))


def _reason(obs: Observation, result: DriveResult, left_out: tuple[str, ...],
            contained: bool) -> str:
    """The stream's reason, what a silent harness's stderr said, what the batch did not keep;
    for a sandbox that was not contained, the ``uncontained`` reason that quotes it."""
    reason = obs.reason + silent_stdout(result.lines, result.stderr_end) + _left_out_note(
        left_out)
    return reason if contained else uncontained_reason(reason)


def _left_out_note(left_out: tuple[str, ...]) -> str:
    """The reason's note on what the copy into the batch left out ('' for nothing)."""
    if not left_out:
        return ""
    shown = ", ".join(left_out[:LEFT_OUT_NAMED])
    more = f" and {len(left_out) - LEFT_OUT_NAMED} more" if len(left_out) > LEFT_OUT_NAMED else ""
    return f"; not kept in the batch: {shown}{more}"


def _file_bound(stage: Staged, write_bytes: int | None) -> int | None:
    """``RLIMIT_FSIZE`` for the session: a staging directory bounds nothing, so a runner that
    is not root bounds each file (`file_size_limit`); a store of its own needs none."""
    if stage.store.kernel_bounded:
        return None
    return file_size_limit(write_bytes or DEFAULT_WRITE_BYTES)


def _stdout_hit(end: str, limits: Limits) -> LimitHit | None:
    """The runner's bound on what a session prints as a limit passed, when the driver ended
    the session for it: ``end="stdout-limit"`` (``--max-stdout``), ``"stderr-limit"`` (the
    same bound on stderr; docs/confinement.md "Limits") or ``"line-limit"``
    (`MAX_SESSION_LINES`; docs/recorder.md "Sharing the event loop"); else None."""
    if end == "line-limit":
        return LimitHit("lines", f"printed more than {MAX_SESSION_LINES:,} lines on stdout")
    if end not in ("stdout-limit", "stderr-limit") or limits.stdout_bytes is None:
        return None
    stream: Literal["stdout", "stderr"] = "stdout" if end == "stdout-limit" else "stderr"
    return LimitHit(stream, f"printed more than {format_bytes(limits.stdout_bytes)} on {stream}")
