"""One attempt of one session: seal, confine, drive, observe, record.

This is where the three packages meet: the ledger's two records, the seal, the store, the
session user and the egress are here; the drive itself is prepared, run and concluded in
`campaign.supervisor._attempt`, and every ending is one `AttemptOutcome` that
`campaign.supervisor._outcome.final_record` writes. Every attempt ends in exactly one
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
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

from campaign._errors import SealRefused
from campaign.batch import (
    EgressCounts,
    FinalRecord,
    SessionPaths,
    StartedRecord,
    session_paths,
    utc_now,
)
from campaign.corpus import Corpus
from campaign.plan import Plan
from campaign.seal import ResolvedSessions, seal_workspace
from campaign.supervisor._attempt import (
    SESSION_LABEL,
    conclude_attempt,
    drive_attempt,
    observe_end,
    prepare_attempt,
)
from campaign.supervisor._facts import Progress
from campaign.supervisor._outcome import AttemptOutcome, final_record, gated
from campaign.supervisor._staging import Staged, keep, sealed_extent, staged
from campaign.supervisor._streams import FINAL_TEXT_NAME, STREAM_NAME, StreamKeeper
from campaign.supervisor._writes import HostWriteRefused as HostWriteRefused
from campaign.supervisor._writes import host_writes
from campaign.supervisor._writes import refused_write as refused_write
from campaign.supervisor._writes import write_remedy as write_remedy
from recorder import SessionState, write_atomic
from sandbox import (
    DEFAULT_LIMITS,
    DEFAULT_WRITE_BYTES,
    ConfinementUnavailable,
    EgressProxy,
    HostLayout,
    Limits,
    NetworkMode,
    SessionPool,
    SessionUser,
    SessionUserUnusable,
    lease_user,
    open_session_egress,
    remove_tree,
    session_config_dir,
    session_pool,
)
from sandbox.gateway import Gateway, SpendGate, Upstream, open_gateway

from ._gate import AttemptGate, AttemptRef, Prices, ProductPrices
from ._spend import BatchSpend

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from contextlib import AbstractAsyncContextManager

    from campaign.batch import Journal

    from ._spec import SessionSpec


class GatewayOpener(Protocol):
    """Opens one session's provider gateway (`sandbox.gateway.open_gateway` is the real
    one; a test passes a fake that needs no listener)."""

    def __call__(self, upstream: Upstream, gate: SpendGate, *,
                 max_connections: int | None = None,
                 peer_uids: frozenset[int] | None = None,
                 ) -> AbstractAsyncContextManager[Gateway]:  # fmt: skip
        """A context whose value is the session's `Gateway`, listening until exit."""
        ...



@dataclass(frozen=True, slots=True)
class BatchContext:
    """What every session of a batch shares (read-only while the batch runs)."""

    batch: Path
    corpus: Corpus
    plan: Plan
    harness_path: Path
    """Host path of the harness executable (resolved, bound read-only at HARNESS_MOUNT)."""
    bwrap: str
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
    upstream: Upstream
    """The batch's one way to the provider (`sandbox.gateway.open_upstream`): the one holder
    of the host's credential, outside every sandbox; each attempt's gateway forwards
    through it (RC-03)."""
    open_gateway: GatewayOpener = open_gateway
    """Opens each attempt's gateway (a test passes a fake)."""
    prices: Prices = field(default_factory=ProductPrices)
    """The price table each attempt's gateway rows are priced with (RC-14)."""
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
    for a root runner the host's session users (`sandbox.SessionPool`), of which each attempt
    leases one for its whole life (`sandbox.lease_user`), dropped to before bwrap starts. Read
    when the context is made; raises `SessionUserUnusable` there when a root runner has
    none."""
    sealed_extent: tuple[int, int] = field(init=False)
    """``(bytes, files)`` a sealed workspace holds at most (the corpus's regular files), measured
    once, when the context is made: each attempt's store is sized from it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sealed_extent", sealed_extent(self.corpus.root,
                                                                self.corpus.files))


def _refused_confinement(exc: ConfinementUnavailable) -> AttemptOutcome:
    """A session that could not be confined: refused before anything ran (RC-05)."""
    return AttemptOutcome(
        state="refused-confinement",
        reason=f"refused-confinement: the session cannot be confined: {exc} (no session "
               "may run unconfined; docs/glossary.md: RC-05)",
        retryable=False)


class AttemptRunner(Protocol):
    """What runs one attempt of a session and writes its two ledger records (`run_attempt`
    is the real one; the supervisor takes any, so its tests pass a fake)."""

    async def __call__(self, spec: SessionSpec, attempt: int, ctx: BatchContext,
                       journal: Journal, *, why_stopped: Callable[[], str],
                       spend: BatchSpend) -> FinalRecord:
        """Run attempt ``attempt`` of ``spec``, as `run_attempt` says."""
        ...


async def run_attempt(spec: SessionSpec, attempt: int, ctx: BatchContext,
                      journal: Journal, *,
                      why_stopped: Callable[[], str] = lambda: "a signal",
                      spend: BatchSpend | None = None) -> FinalRecord:
    """Run attempt ``attempt`` of ``spec`` and write its two ledger records.

    The attempt's provider gateway (`BatchContext.open_gateway`) is its only provider: its
    requests are held to ``spend``'s budget (the batch's realized spend, shared by every
    attempt; None: a spend of its own with no budget), each written as a ``request``
    record as its response ends, before the final record, which carries the gateway's
    counts (``gateway``). Until that final record is folded, the attempt's priced requests
    count in ``spend``; from then on the fold's cost does.

    **Cancellation:** the harness is reaped by the driver, the gateway closed,
    the config directory removed, the attempt is written as ``killed`` (reason: the runner
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
    spend = spend or BatchSpend(journal.fold)
    try:
        return await _attempt_recorded(spec, attempt, ctx, journal, paths=paths,
                                       started=started, progress=progress, spend=spend,
                                       why_stopped=why_stopped)
    finally:  # its final record is folded (or it has none): the fold holds its cost now
        spend.settled(spec.key, attempt)


async def _attempt_recorded(spec: SessionSpec, attempt: int, ctx: BatchContext,
                            journal: Journal, *, paths: SessionPaths, started: str,
                            progress: Progress, spend: BatchSpend,
                            why_stopped: Callable[[], str]) -> FinalRecord:
    """`run_attempt`'s two records around the attempt itself (`_attempt`)."""
    gate = AttemptGate(AttemptRef(spec.key, spec.repetition, attempt, ctx.invocation),
                       spend=spend, journal=journal, prices=ctx.prices)
    with host_writes("the ledger"):
        await journal.record(StartedRecord(
            arm=spec.arm.arm, probe=spec.probe.id, session=spec.session,
            repetition=spec.repetition, attempt=attempt, invocation=ctx.invocation,
            position=spec.position, at=started))
    try:
        with host_writes("the session's workspace"):
            record = await _attempt(spec, attempt, ctx, paths, started, progress, gate)
    except (anyio.get_cancelled_exc_class(), KeyboardInterrupt):
        # The runner is stopping (a signal, a refused write): the attempt ends killed, with
        # what it observed until then. Any other exception is a bug: it propagates (exit 1),
        # and the attempt stays without a final record, which is the truth (it never
        # finished).
        stopped = f"the runner stopped ({why_stopped()}) while the session ran"
        if progress.uncontained is not None:  # an outcome all the same: not retried
            state: SessionState
            state, reason, retryable = "uncontained", f"{progress.uncontained}; {stopped}", False
        else:
            state, reason, retryable = "killed", f"killed: {stopped}", True
        with anyio.CancelScope(shield=True):  # its reads (digests of files it made) off the loop
            seen = await anyio.to_thread.run_sync(lambda: progress.stopped(
                ctx.batch, state=state, reason=reason, retryable=retryable,
                counts=state != "killed"))
        with host_writes("the ledger"):
            await journal.record(final_record(seen, spec, attempt=attempt,
                                              invocation=ctx.invocation, started=started))
        raise
    with host_writes("the ledger"):
        await journal.record(record)
    if ctx.discard_workspaces:
        await anyio.to_thread.run_sync(_discard, paths.workspace)
    return record


def _keep_refused(stage: Staged, paths: SessionPaths) -> None:
    """A refused seal's workspace, as far as it got, into the batch (the refusal names it)."""
    keep(stage, workspace=paths.workspace, log_dir=paths.log_dir, log_bytes=0)


def _discard(workspace: Path) -> None:
    """``--discard-workspaces``: the workspace goes, however deep the session nested it."""
    with contextlib.suppress(OSError):
        remove_tree(workspace)


async def _attempt(spec: SessionSpec, attempt: int, ctx: BatchContext, paths: SessionPaths,
                   started: str, progress: Progress, gate: AttemptGate) -> FinalRecord:
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
                return final_record(
                    AttemptOutcome(state="refused-seal", reason=f"refused-seal: {exc}",
                                   retryable=False),
                    spec, attempt=attempt, invocation=ctx.invocation, started=started)
            manifest = json.dumps(sealed.manifest, indent=1, sort_keys=True) + "\n"
            await anyio.to_thread.run_sync(write_atomic, paths.manifest, manifest.encode())
            progress.workspace, progress.manifest = stage.workspace, sealed.manifest
            # One session user for the attempt's whole life: its egress socket, config
            # directory, sandbox (until its cgroup is empty and its files are the runner's)
            # and checker. A wait for a free one (other runners' sessions hold the pool)
            # spends nothing.
            async with lease_user(ctx.session_pool) as user:
                owner = (user.uid, user.gid) if user else None
                # The session's only provider, outside its sandbox (RC-03): its egress allows
                # the gateway's loopback address and nothing else (RC-02).
                async with _session_gateway(ctx, gate, user) as gateway:
                    progress.gate, progress.gateway = gate, gateway
                    async with open_session_egress(ctx.network, gateway.base_url, owner=owner,
                                                   max_connections=ctx.limits.connections,
                                                   directory=stage.egress_dir) as egress:
                        outcome = await _drive(spec, ctx, paths, sealed.manifest, user=user,
                                               egress=egress, gateway=gateway, gate=gate,
                                               keeper=keeper, progress=progress, stage=stage)
                # Every request has ended and is in the ledger: the final counts.
                outcome = gated(outcome, gate, gateway)
                if gate.write_error is not None:
                    raise HostWriteRefused("the ledger", gate.write_error)
    except SessionUserUnusable as exc:  # no user could be leased (the drive maps its own)
        outcome = _refused_confinement(exc)
    except ConfinementUnavailable as exc:  # no store could be made
        outcome = _refused_confinement(exc)
    finally:
        if keeper is not None:  # shielded: a cancelled attempt's stream is kept too
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(keeper.close)
    if keeper is not None:
        outcome = replace(outcome, stream=keeper.path.relative_to(ctx.batch).as_posix(),
                          stream_bytes=keeper.bytes_in)
    final_text = outcome.final_text
    if final_text is not None:
        # A lone surrogate ("\udfff" in the stream's JSON) in its three-byte form, as its
        # digests take it: strict UTF-8 stopped the batch on it (show reads it replaced).
        await anyio.to_thread.run_sync(
            write_atomic, paths.attempt_dir(attempt) / FINAL_TEXT_NAME,
            final_text.encode("utf-8", "surrogatepass"))
    return final_record(outcome, spec, attempt=attempt, invocation=ctx.invocation,
                        started=started)


@contextlib.asynccontextmanager
async def _session_gateway(ctx: BatchContext, gate: AttemptGate,
                           user: SessionUser | None) -> AsyncIterator[Gateway]:
    """The attempt's provider gateway (`BatchContext.open_gateway`), open for the block.

    It takes connections only of the runner's user (the session's egress proxy connects for a
    confined session) and of the session's own ``user`` (its harness, with ``--network
    host``), so no other session of the batch can reach it (RC-03); without session users
    (a runner that is not root) every session is the runner's user and this cannot tell them
    apart.

    Raises:
        ConfinementUnavailable: its listener could not be bound on host loopback: without
            its gateway the session has no provider but a credential it may not hold
            (RC-03), so it is refused before anything runs.
    """
    async with contextlib.AsyncExitStack() as stack:
        try:
            peers = frozenset({os.getuid()} | ({user.uid} if user is not None else set()))
            gateway = await stack.enter_async_context(ctx.open_gateway(
                ctx.upstream, gate, max_connections=ctx.limits.connections, peer_uids=peers))
        except OSError as exc:
            raise ConfinementUnavailable(
                f"the session's provider gateway could not listen on host loopback "
                f"({exc.strerror or exc})", "free a loopback port, or check what holds "
                "127.0.0.1 (`headwater-campaign doctor` checks the gateway)") from exc
        yield gateway


async def _drive(spec: SessionSpec, ctx: BatchContext, paths: SessionPaths,
                 manifest: dict[str, str], *, user: SessionUser | None,
                 egress: EgressProxy | None, gateway: Gateway, gate: AttemptGate,
                 keeper: StreamKeeper | None, progress: Progress,
                 stage: Staged) -> AttemptOutcome:
    """Prepare, run and conclude the drive of one sealed attempt (`._attempt`)."""
    with session_config_dir(name=SESSION_LABEL, owner=user, path=stage.config_dir) as cfg:
        prepared = prepare_attempt(spec, ctx, stage=stage, config_dir=cfg, user=user,
                                   egress=egress, gateway=gateway, keeper=keeper)
        progress.observer, progress.inside = prepared.observer, ctx.workspace_path
        try:  # a refusal before the spawn has spent nothing
            driven = await drive_attempt(prepared, ctx, paths=paths, stage=stage,
                                         keeper=keeper, progress=progress)
        except ConfinementUnavailable as exc:  # no session user, no cgroup, no filter
            return _refused_confinement(exc)
    obs, hit = observe_end(prepared.observer, driven, ctx.limits)
    return await conclude_attempt(
        obs, driven, spec=spec, ctx=ctx, workspace=paths.workspace,
        checker_tail=paths.root / "checker.stderr.tail", manifest=manifest,
        policy=prepared.policy, hit=hit,
        egress=None if egress is None else _counts(egress),  # the harness has exited: final
        user=user, verdict=gate.verdict(gateway.stats()))


def _counts(egress: EgressProxy) -> EgressCounts:
    """What the session's egress proxy counted, as the final record keeps it."""
    stats = egress.stats()
    return EgressCounts(allowed_target=stats.allowed_target, allowed=stats.allowed,
                        denied=dict(sorted(stats.denied.items())),
                        upstream_failures=stats.upstream_failures, most_open=stats.most_open)
