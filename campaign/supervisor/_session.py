"""One attempt of one session: seal, confine, drive, observe, record.

This is where the three packages meet. Every attempt ends in exactly one
state of docs/batch.md "Session states" and leaves two ledger records (``started``, then
``final``); only a ``recorded`` attempt carries an event. Nothing observed is
lost: a refusal, a fault or a cancellation still writes its final record (a
cancelled attempt is written as ``killed``, not counted against ``--retries``,
before the cancellation goes on). A session's sandbox whose cgroup did not empty
within its bound after the kill ends ``uncontained``: nothing it left is read (no
copy into the batch, no digest, no checker, no event).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from campaign._errors import SealRefused
from campaign.batch import FinalRecord, StartedRecord, session_paths, utc_now
from campaign.corpus import Corpus
from campaign.plan import Plan
from campaign.seal import ResolvedSessions, seal_workspace
from campaign.supervisor._facts import (
    Progress,
    kept_stream_check,
    limit_reason,
    observed_extras,
    silent_stdout,
    uncontained_reason,
)
from campaign.supervisor._staging import Staged, keep, sealed_extent, staged
from campaign.supervisor._streams import FINAL_TEXT_NAME, STREAM_NAME, StreamKeeper
from campaign.supervisor._writes import HostWriteRefused as HostWriteRefused
from campaign.supervisor._writes import host_writes
from campaign.supervisor._writes import refused_write as refused_write
from campaign.supervisor._writes import write_remedy as write_remedy
from recorder import (
    MAX_SESSION_LINES,
    PERMISSION_MODE,
    InitPolicy,
    StreamObserver,
    UnreadFile,
    build_event,
    declared_mcp_servers_of,
    drive_child,
    harness_command,
    host_skill_names,
    observed_calls,
    run_checker,
    write_atomic,
)
from sandbox import (
    BRIDGE_URL,
    CONFIG_MOUNT,
    DEFAULT_LIMITS,
    DEFAULT_WRITE_BYTES,
    HARNESS_MOUNT,
    LOG_MOUNT,
    ConfinedSpec,
    ConfinementUnavailable,
    Credentials,
    EgressProxy,
    HostLayout,
    LimitHit,
    Limits,
    NetworkMode,
    Sandbox,
    SessionPool,
    SessionUser,
    SessionUserUnusable,
    format_bytes,
    lease_user,
    open_confined,
    open_session_egress,
    remove_tree,
    session_config_dir,
    session_environment,
    session_pool,
)
from sandbox.storage import file_size_limit

if TYPE_CHECKING:
    from collections.abc import Callable

    from campaign.batch import Journal

    from ._spec import SessionSpec

LEFT_OUT_NAMED: Final = 5
"""Entries the copy into the batch left out that a reason names; further ones are counted."""
SESSION_LABEL: Final = "session"
"""The label of every session's config directory, cgroup and scratch names: the same for
every session, so that no name a session can read names its arm, probe or session (RC-02)."""


@dataclass(frozen=True, slots=True)
class BatchContext:
    """What every session of a batch shares (read-only while the batch runs)."""

    batch: Path
    corpus: Corpus
    plan: Plan
    harness_path: Path
    """Host path of the harness executable (resolved, bound read-only at HARNESS_MOUNT)."""
    bwrap: str
    credentials: Credentials
    provider_url: str | None
    layout: HostLayout
    session_timeout_s: float
    watchdog_s: float
    post_result_grace_s: float
    invocation: int
    """The ledger's number of the invocation running these sessions."""
    workspace_path: str
    """Where every session sees its workspace (``--workspace-path``; RC-02, blind sessions)."""
    sessions: ResolvedSessions
    """Each probe and arm the batch may run, resolved once (`campaign.seal.resolve_sessions`)."""
    host_skill_dirs: tuple[Path, ...] = ()
    produced_extra: tuple[str, ...] = ()
    discard_workspaces: bool = False
    keep_streams: bool = True
    """Keep each attempt's stdout, compressed, in ``attempt-<n>/`` (``--no-keep-streams``)."""
    network: NetworkMode = "confined"
    """``confined``: own network namespace, egress proxy to the provider only (the default);
    ``host``: the host's network (RC-05's one admitted exception; the prose says so)."""
    limits: Limits = DEFAULT_LIMITS
    """Each session's limits (`sandbox.Limits`; ``--max-processes`` and friends)."""
    session_pool: SessionPool | None = field(default_factory=session_pool)
    """Who sessions run as (no root inside): None for a runner that is not root (as itself);
    for a root runner the host's session users (`sandbox._pool`), of which each attempt
    leases one for its whole life (`sandbox._lease`), dropped to before bwrap starts. Read
    when the context is made; raises `SessionUserUnusable` there when a root runner has
    none."""
    sealed_extent: tuple[int, int] = field(init=False)
    """``(bytes, files)`` a sealed workspace holds at most (the corpus's regular files), measured
    once, when the context is made: each attempt's store is sized from it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sealed_extent", sealed_extent(self.corpus.root,
                                                                self.corpus.files))


def _final(spec: SessionSpec, attempt: int, ctx: BatchContext, started: str,
           **facts: Any) -> FinalRecord:
    return FinalRecord(arm=spec.arm.arm, probe=spec.probe.id, session=spec.session,
                       repetition=spec.repetition, attempt=attempt, invocation=ctx.invocation,
                       started_at=started, **facts)


_NOTHING_RAN: Final = {"cost_usd": None, "cost_known": True, "retryable": False}


def _refused_confinement(exc: ConfinementUnavailable) -> dict[str, Any]:
    return {"state": "refused-confinement",
            "reason": f"refused-confinement: the session cannot be confined: {exc} (no "
                      "session may run unconfined; docs/glossary.md: RC-05)",
            **_NOTHING_RAN}


async def run_attempt(spec: SessionSpec, attempt: int, ctx: BatchContext,
                      journal: Journal, *,
                      why_stopped: Callable[[], str] = lambda: "a signal") -> FinalRecord:
    """Run attempt ``attempt`` of ``spec`` and write its two ledger records.

    **Cancellation:** the harness is reaped by the driver, the credentials
    copy is removed, the attempt is written as ``killed`` (reason: the runner
    stopped, and ``why_stopped()``: a signal, a refused write; it does not
    count against ``--retries``), and the cancellation propagates. A sandbox
    whose cgroup did not empty is written ``uncontained`` instead (an outcome:
    not retried; docs/batch.md "Session states").

    Returns:
        The final record. A non-recorded state is data, not an exception.

    Raises:
        HostWriteRefused: the host refused a write (disk full); no final record.
        Exception: only unexpected errors (bugs); refusals and faults become states.
    """
    paths = session_paths(ctx.batch, arm=spec.arm.arm, probe=spec.probe.id,
                          session=spec.session)
    started = utc_now()
    progress = Progress()
    with host_writes("the ledger"):
        await journal.record(StartedRecord(
            arm=spec.arm.arm, probe=spec.probe.id, session=spec.session,
            repetition=spec.repetition, attempt=attempt, invocation=ctx.invocation,
            position=spec.position, at=started))
    try:
        with host_writes("the session's workspace"):
            record = await _attempt(spec, attempt, ctx, paths, started, progress)
    except (anyio.get_cancelled_exc_class(), KeyboardInterrupt):
        # The runner is stopping (a signal, a refused write): the attempt ends killed, with
        # what it observed until then. Any other exception is a bug: it propagates (exit 1),
        # and the attempt stays without a final record, which is the truth (it never
        # finished).
        with anyio.CancelScope(shield=True):  # its reads (digests of files it made) off the loop
            seen = await anyio.to_thread.run_sync(progress.facts, ctx.batch)
        stopped = f"the runner stopped ({why_stopped()}) while the session ran"
        if progress.uncontained is not None:  # an outcome all the same: not retried
            outcome = {"state": "uncontained", "reason": f"{progress.uncontained}; {stopped}",
                       "retryable": False}
        else:
            outcome = {"state": "killed", "reason": f"killed: {stopped}", "retryable": True,
                       "counts": False}
        with host_writes("the ledger"):
            await journal.record(_final(spec, attempt, ctx, started, cost_usd=None,
                                        cost_known=False, **outcome, **seen))
        raise
    with host_writes("the ledger"):
        await journal.record(record)
    if ctx.discard_workspaces:
        await anyio.to_thread.run_sync(_discard, paths.workspace)
    return record


def _file_bound(stage: Staged, write_bytes: int | None) -> int | None:
    """``RLIMIT_FSIZE`` for the session: a staging directory bounds nothing, so a runner that
    is not root bounds each file (`file_size_limit`); a store of its own needs none."""
    if stage.store.kernel_bounded:
        return None
    return file_size_limit(write_bytes or DEFAULT_WRITE_BYTES)


def _keep_refused(stage: Staged, paths: Any) -> None:
    """A refused seal's workspace, as far as it got, into the batch (the refusal names it)."""
    keep(stage, workspace=paths.workspace, log_dir=paths.log_dir, log_bytes=0)


def _left_out_note(left_out: list[str]) -> str:
    """The reason's note on what the copy into the batch left out ('' for nothing)."""
    if not left_out:
        return ""
    shown = ", ".join(left_out[:LEFT_OUT_NAMED])
    more = f" and {len(left_out) - LEFT_OUT_NAMED} more" if len(left_out) > LEFT_OUT_NAMED else ""
    return f"; not kept in the batch: {shown}{more}"


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


def _discard(workspace: Path) -> None:
    """``--discard-workspaces``: the workspace goes, however deep the session nested it."""
    with contextlib.suppress(OSError):
        remove_tree(workspace)


async def _attempt(spec: SessionSpec, attempt: int, ctx: BatchContext, paths: Any,
                   started: str, progress: Progress) -> FinalRecord:
    def fresh() -> None:
        # A retry starts from a fresh seal: only the earlier attempts' kept streams stay.
        paths.root.mkdir(parents=True, exist_ok=True)
        for entry in paths.root.iterdir():
            if entry.name.startswith("attempt-") and entry.name != f"attempt-{attempt}":
                continue
            remove_tree(entry)  # any depth the earlier attempt nested; a symlink unlinked
        paths.attempt_dir(attempt).mkdir()

    await anyio.to_thread.run_sync(fresh)
    keeper = StreamKeeper(paths.attempt_dir(attempt) / STREAM_NAME) if ctx.keep_streams else None
    progress.keeper = keeper
    try:
        # The attempt's own store, sealed into, its workspace and log copied into the batch
        # when the sandbox has ended (campaign.supervisor._staging: blind mounts, disk bound).
        async with staged(sealed_bytes=ctx.sealed_extent[0], sealed_files=ctx.sealed_extent[1],
                          write_bytes=ctx.limits.write_bytes or DEFAULT_WRITE_BYTES) as stage:
            try:
                session = ctx.sessions.of(spec.probe.id, spec.arm.arm)  # resolved per batch
                sealed = await anyio.to_thread.run_sync(
                    lambda: seal_workspace(ctx.corpus, session, out=stage.workspace))
            except SealRefused as exc:
                await anyio.to_thread.run_sync(_keep_refused, stage, paths)
                return _final(spec, attempt, ctx, started, state="refused-seal",
                              reason=f"refused-seal: {exc}", **_NOTHING_RAN)
            manifest = json.dumps(sealed.manifest, indent=1, sort_keys=True) + "\n"
            await anyio.to_thread.run_sync(write_atomic, paths.manifest, manifest.encode())
            progress.workspace, progress.manifest = stage.workspace, sealed.manifest
            # One session user for the attempt's whole life: its egress socket, config
            # directory, sandbox (until its cgroup is empty and its files are the runner's)
            # and checker. A wait for a free one (other runners' sessions hold the pool)
            # spends nothing.
            async with lease_user(ctx.session_pool) as user:
                owner = (user.uid, user.gid) if user else None
                async with open_session_egress(ctx.network, ctx.provider_url, owner=owner,
                                               max_connections=ctx.limits.connections,
                                               directory=stage.egress_dir) as egress:
                    facts = await _drive(spec, ctx, paths, sealed.manifest, started, user,
                                         egress, keeper, progress, stage)  # fmt: skip
    except SessionUserUnusable as exc:  # no user could be leased (the drive maps its own)
        facts = _refused_confinement(exc)
    except ConfinementUnavailable as exc:  # no store could be made
        facts = _refused_confinement(exc)
    finally:
        if keeper is not None:  # shielded: a cancelled attempt's stream is kept too
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(keeper.close)
    if keeper is not None:
        facts["stream"] = keeper.path.relative_to(ctx.batch).as_posix()
        facts["stream_bytes"] = keeper.bytes_in
    final_text = facts.pop("final_text", None)
    if final_text is not None:
        # A lone surrogate ("\udfff" in the stream's JSON) in its three-byte form, as its
        # digests take it: strict UTF-8 stopped the batch on it (show reads it replaced).
        await anyio.to_thread.run_sync(
            write_atomic, paths.attempt_dir(attempt) / FINAL_TEXT_NAME,
            final_text.encode("utf-8", "surrogatepass"))
    return _final(spec, attempt, ctx, started, **facts)


async def _drive(
    spec: SessionSpec, ctx: BatchContext, paths: Any, manifest: dict[str, str], started: str,
    user: SessionUser | None, egress: EgressProxy | None, keeper: StreamKeeper | None,
    progress: Progress | None, stage: Staged,
) -> dict[str, Any]:
    probe = spec.probe
    inside = ctx.workspace_path
    with session_config_dir(ctx.credentials, name=SESSION_LABEL, owner=user,
                            path=stage.config_dir) as cfg:
        policy = InitPolicy(
            permission_mode=PERMISSION_MODE,
            # The workspace's own declaration, not the batch's: the file this session's
            # harness loads, after the arm (absent has none). A proof of the sealed file.
            declared_mcp_servers=declared_mcp_servers_of(stage.workspace),
            host_skill_names=host_skill_names([*ctx.host_skill_dirs, cfg / "skills"]),
            config_dir=CONFIG_MOUNT, cwd=inside,
        )
        observer = StreamObserver(policy=policy, workspace=stage.workspace, inside=inside)
        if progress is not None:
            progress.observer, progress.inside = observer, inside
        # What the session is told names nothing of it: its directories at fixed paths (RC-02).
        env = session_environment(
            config_dir=Path(CONFIG_MOUNT), log_dir=Path(LOG_MOUNT),
            provider_url=ctx.provider_url, credentials=ctx.credentials,
            egress_proxy=BRIDGE_URL if egress else None,
        )
        command = harness_command(
            harness_mount=HARNESS_MOUNT, task=probe.task, model=ctx.plan.model,
            allowed_tools=spec.arm.allowed_tools,  # per arm (mcp adds)
        )
        # The recipe of every sandbox: hand-over to the session user, init shell and
        # lifeline, the bridge with a confined network, --args, teardown (sandbox._confined).
        confined = ConfinedSpec(
            command=command, executable=ctx.harness_path, mount=HARNESS_MOUNT,
            network="confined" if egress else "host",
            egress_socket=egress.socket_path if egress else None, env=env, bwrap=ctx.bwrap,
            layout=ctx.layout, user=user, workspace=stage.workspace,
            log_dir=stage.log_dir, config_dir=cfg, workspace_mount=inside, log_mount=LOG_MOUNT,
            config_mount=CONFIG_MOUNT, name=SESSION_LABEL, limits=ctx.limits,
            reclaim_log=False,  # copied from the store into the batch (_staging.keep)
            limit_checks=(*((egress.limit_hit,) if egress else ()),
                          *((kept_stream_check(keeper, ctx.limits.write_bytes),)
                            if keeper is not None and ctx.limits.write_bytes else ())),
            file_bytes=_file_bound(stage, ctx.limits.write_bytes),
        )
        sandbox: Sandbox | None = None
        left_out: list[str] = []
        try:  # a refusal before the spawn has spent nothing
            async with open_confined(confined) as sandbox:
                result = await drive_child(
                    sandbox.child, on_line=observer.feed, stderr_tail=paths.stderr_tail,
                    wall_limit_s=ctx.session_timeout_s, watchdog_s=ctx.watchdog_s,
                    post_result_grace_s=ctx.post_result_grace_s,
                    on_chunk=keeper.write if keeper is not None else None,
                    on_idle=keeper.flush if keeper is not None else None,
                    max_stdout_bytes=ctx.limits.stdout_bytes,
                    max_stderr_bytes=ctx.limits.stdout_bytes, max_lines=MAX_SESSION_LINES,
                )
        except ConfinementUnavailable as exc:  # no session user, no cgroup, no filter
            return _refused_confinement(exc)
        finally:  # every process of the session is gone: what the batch keeps, into it
            if sandbox is None or sandbox.contained:
                # Past the writes limit: the workspace's listing, not its bytes
                # (docs/storage.md).
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
    assert sandbox is not None  # open_confined yielded: a refusal returned above
    # The record's own bound, when the stream passed one, was passed before the reader's
    # stdout bound ended the session: the first bound passed is the one named.
    hit = sandbox.limit_hit or (None if observer.bound_passed
                                else _stdout_hit(result.end, ctx.limits))
    obs = observer.finish(end=result.end, exit_status=result.exit_status, tail=result.tail,
                          too_long=str(result.line_too_long) if result.line_too_long else None,
                          limit_exceeded=limit_reason(hit))
    facts: dict[str, Any] = {
        "state": obs.state,
        "reason": obs.reason + silent_stdout(result.lines, result.stderr_end)
        + _left_out_note(left_out),
        "cost_usd": str(obs.cost_usd) if obs.cost_usd is not None else None,
        "cost_known": obs.cost_usd is not None,
        "outside_paths": len(obs.outside_paths),
        "anomalies": obs.anomaly_count,
        "retryable": obs.retryable,
        "served_model": obs.served_model,
        "claude_code_version": obs.claude_code_version,
        "api_error_status": obs.api_error_status,
        "exit_status": result.exit_status,
        "end": result.end,
        "duration_s": round(result.duration_s, 3),
        "lines": result.lines,
        "network": "confined" if egress else "host",
        "final_text": obs.final_text,
        "init_policy": {"permission_mode": policy.permission_mode,
                        "declared_mcp_servers": sorted(policy.declared_mcp_servers),
                        "host_skill_names": sorted(policy.host_skill_names),
                        "config_dir": policy.config_dir, "cwd": policy.cwd},
    }
    if obs.denied_tools:
        facts["permission_denials"] = list(obs.denied_tools)
    if not sandbox.contained:  # no post-session read: no limit walk, event, checker, digest
        facts.update(state="uncontained", reason=uncontained_reason(facts["reason"]),
                     retryable=False)
    if egress is not None:  # the harness has exited: the counts are final
        facts["egress"] = egress.stats().as_record()
    if hit is not None and obs.state == "limit-exceeded":
        facts["limit"] = hit.limit
    facts.update(observed_extras(obs))
    if facts["state"] == "recorded":
        findings = None
        if ctx.corpus.config.checker:  # RC-11: no checker -> no findings key
            checked = await run_checker(
                ctx.corpus.config.checker, corpus_root=ctx.corpus.root,
                workspace=paths.workspace, bwrap=ctx.bwrap, layout=ctx.layout,
                stderr_tail=paths.root / "checker.stderr.tail", user=user,
            )
            findings = checked.findings
            if checked.note is not None:  # never a pass: no findings key, and said
                facts["findings_note"] = checked.note
        unread: list[UnreadFile] = []
        event = await anyio.to_thread.run_sync(
            lambda: build_event(
                obs, probe=spec.probe.id, session=spec.session, workspace=paths.workspace,
                manifest=manifest, declared_answers=probe.answers, corpus_ids=ctx.corpus.ids,
                produced_extra=ctx.produced_extra, findings=findings, unread=unread,
                inside=inside,
            )
        )
        facts["event"] = event.model_dump(mode="json", exclude_unset=True)
        if unread:  # path only in the event; why, here and in the prose
            facts["unread_artifacts"] = [
                {"path": u.path, "reason": u.reason, "size_bytes": u.size_bytes} for u in unread]
    else:  # nothing observed is lost: the calls stay in the ledger (BC-01)
        # Uncontained: paths.workspace holds nothing of the attempt (not kept), so no file
        # the session made is read; a sealed file's Read keeps the manifest's digest.
        facts["calls"] = [
            call.model_dump(mode="json", exclude_unset=True)
            for call in observed_calls(obs.calls, workspace=paths.workspace, manifest=manifest,
                                       inside=inside)
        ]
    return facts


