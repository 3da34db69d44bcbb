"""Open a confined command: the one recipe for every sandbox the runner starts.

`open_confined(spec)` is how a session, the findings checker and every
preflight probe are run, so each rule of the confinement applies at every
spawn and no caller edits an argv. In order, it:

1. finds the host's cgroup hierarchies and, once per process, ends and
   removes what killed runners left there (`sandbox.cgroup._cgroup.sweep_once`),
   then, given a pool of session users, leases one for the sandbox's whole
   life (`sandbox.users._lease`: no other sandbox of the host runs as it until the
   last step below is done; given a user, the caller holds its lease);
   the sweep comes first, so a leftover it ends does not keep its user from
   the lease;
2. makes the scratch directories the spec leaves to it (a workspace, a log
   and a config directory, `sandbox._scratch`), hands the session's own
   directories over to the session user and lets it reach every bind source
   (`sandbox.users._privileges.hand_over`; nothing for a runner that is not root);
3. makes the sandbox's own cgroup (`sandbox.cgroup._cgroup`), with its ``pids`` and
   ``memory`` limits where the host has those controllers (`sandbox.cgroup._cgroup_limits`);
4. wraps the command in the session's init shell (`sandbox._init`: the pid-2
   guard, the lifeline watcher, the egress bridge with a confined network),
   whose last exec enters the session's Landlock domain (`sandbox._landlock`:
   nothing of the session reaches pid 1, the watcher or the bridge);
5. builds the argv: the join into the cgroups (and ``RLIMIT_NOFILE``), the privilege drop
   (`drop_argv`), then `bwrap_argv` with the network option and the seccomp
   filter that refuses ptrace and process_vm_readv/writev inside
   (`sandbox._seccomp`);
6. passes the RC-02 mounts (`bwrap_options`: each at its inside path, a
   read-only workspace if asked) and then the environment as the ``--args
   FD`` payload (nothing of either on the command line, which the session
   reads as ``/proc/1/cmdline``: a mount's source names the batch, the
   environment holds the secret, RC-03; bwrap itself starts with an empty
   environment) and the filter as the ``--seccomp FD`` one;
7. spawns on the calling thread, which must be the event loop's own
   (`sandbox._process.spawn`; ``--die-with-parent`` follows the thread), with
   the lifeline as stdin and both output pipes, and watches its limits while
   the caller's block runs (`sandbox.cgroup._watch`: a limit passed ends it at once);
8. on exit, however the block ends: reaps bwrap (SIGTERM, grace, SIGKILL,
   bounded), closes the lifeline, kills whatever is left in the cgroup and
   waits until it is empty (``cgroup.kill``, ``populated 0``), and removes
   the cgroup (reading, once it is empty, whether a limit was passed: the
   counters, and the writable directories once more); then takes back what
   the session made (`sandbox.storage._reclaim`: a
   given workspace becomes the runner's with the runner's modes, a given log
   directory is replaced by a copy of its regular files), removes the
   scratch directories and releases the lease. A cgroup that does not empty
   within its bound skips the last walk and the reclaim (``Sandbox.contained``
   False: something of it may still write there).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, final

import anyio

from ._argv import HARNESS_MOUNT, Confinement, SandboxNetwork, bwrap_argv, bwrap_options
from ._env import args_payload
from ._errors import SpawnFailed
from ._init import BRIDGE_PORT, SOCAT, session_init_command
from ._landlock import scoped_command
from ._layout import HostLayout, measure_host_layout
from ._payload import payload_pipe
from ._process import GRACE_S, Child, spawn
from ._remove import remove_tree
from ._scratch import make_scratch
from ._seccomp import session_filter
from .cgroup import (
    DEFAULT_WRITE_BYTES,
    EMPTY_TIMEOUT_S,
    CgroupHost,
    LimitHit,
    Limits,
    LimitWatch,
    SessionCgroup,
    allocated_bytes,
    find_cgroups,
    open_session_cgroup,
    sweep_once,
    watching,
)
from .storage import reclaim_tree, replace_with_copy
from .users import SessionPool, SessionUser, drop_argv, hand_over, lease_user

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping, Sequence
    from contextlib import AbstractAsyncContextManager

__all__ = ["ConfinedDirs", "ConfinedSpec", "Limits", "Sandbox", "open_confined"]

SCRATCH_DIR_MODE: Final = 0o700
"""Mode of the scratch directories before they are handed over."""
logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConfinedDirs:
    """The host directories a sandbox binds read-write (each at its own path)."""

    workspace: Path
    """The working directory; read-only inside with ``workspace_read_only``."""
    log_dir: Path
    """The session's own log directory (``HEADWATER_LOG_DIR``)."""
    config_dir: Path
    """The session's config directory (``HOME``, ``CLAUDE_CONFIG_DIR``)."""


def _no_env(dirs: ConfinedDirs) -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfinedSpec:
    """What to run in a sandbox and how (module docstring). Frozen; validated when made.

    Attributes:
        command: The command inside; ``command[0]`` an absolute path in the
            sandbox (e.g. ``mount``).
        executable: Host path of the file bound read-only at ``mount`` (the
            harness, the checker, a probe's tool); resolved here.
        network: `SandboxNetwork`: ``confined`` needs ``egress_socket`` (the
            bridge starts first), ``none`` has no way out, ``host`` shares the
            host's network (RC-05's one admitted exception).
        env: The whole environment inside, or a function of the directories
            (a scratch directory's path is known only once it is made). It
            travels on ``--args FD``, never on the command line (RC-03).
        mount: Where ``executable`` appears inside.
        bwrap: The bwrap executable, a name on PATH or a path.
        layout: How the host has /bin, /lib, /lib64, /sbin; None measures ``/``.
        user: Who the sandbox runs as: a root runner's pool (`sandbox.users._pool`),
            of which it leases a user for its life; a session user whose lease
            the caller holds (a session's, for its findings checker too;
            `sandbox.users._lease.lease_user`); or None for the runner itself (a
            runner that is not root).
        workspace, log_dir, config_dir: Host directories; None makes a scratch
            one, removed on exit. Given ones are the caller's to keep.
        workspace_mount, log_mount, config_mount: Where each appears inside;
            None: at its host path. A session's are fixed paths that name
            nothing of it (RC-02, blind sessions); ``env`` must then name the
            inside paths.
        workspace_read_only: Bind the workspace read-only (and do not hand it
            over: it stays the session's).
        egress_socket: The session's egress proxy socket (`sandbox.network._egress`).
        reclaim_log: Replace a given log directory by the runner's copy of its
            regular files on exit (False: the caller copies it elsewhere, as a
            session from its store does, `sandbox.storage._reclaim.copy_regular`).
        socat: The bridge's socat (with ``network="confined"``).
        bridge_port: The bridge's loopback port inside (the namespace is
            private; tests pick a unique one to find the bridge by its argv).
        limits: Resource limits (`sandbox.cgroup._limits.Limits`): ``pids`` and
            ``memory_bytes`` in its cgroups, ``tmp_bytes`` as bwrap ``--size``,
            ``open_files`` as ``RLIMIT_NOFILE``, ``write_bytes`` watched over
            the workspace, log and config directories (`sandbox.cgroup._watch`);
            ``connections`` is the egress proxy's (`sandbox.network._egress`).
        file_bytes: ``RLIMIT_FSIZE`` (soft and hard, bytes, rounded up to 512) of every
            process in it, set by the join shell before bwrap starts, or None for the
            runner's own: a runner that is not root sets it to bound each file its
            session writes, since no store of its own bounds them (docs/storage.md).
        limit_checks: The caller's own limit checks, polled by the watch while
            it runs (each returns a `LimitHit` once passed: the egress proxy's
            connection cap).
        cgroups: This host's cgroup hierarchies; None finds them (once per process).
        name: A short label for the scratch directory's and the cgroup's names.

    Raises:
        ValueError: ``command`` is empty or relative, ``egress_socket`` is
            missing with ``network="confined"`` or given without it.
    """

    command: Sequence[str]
    executable: Path
    network: SandboxNetwork
    env: Mapping[str, str] | Callable[[ConfinedDirs], Mapping[str, str]] = _no_env
    mount: str = HARNESS_MOUNT
    bwrap: str = "bwrap"
    layout: HostLayout | None = None
    user: SessionUser | SessionPool | None = None
    workspace: Path | None = None
    workspace_read_only: bool = False
    log_dir: Path | None = None
    config_dir: Path | None = None
    workspace_mount: str | None = None
    log_mount: str | None = None
    config_mount: str | None = None
    egress_socket: Path | None = None
    socat: str = SOCAT
    bridge_port: int = BRIDGE_PORT
    reclaim_log: bool = True
    limits: Limits = field(default_factory=Limits)
    limit_checks: Sequence[Callable[[], LimitHit | None]] = ()
    file_bytes: int | None = None
    cgroups: CgroupHost | None = None
    name: str = "probe"

    def __post_init__(self) -> None:
        if not self.command or not self.command[0].startswith("/"):
            raise ValueError(f"command[0] must be an absolute path, got {list(self.command[:1])}")
        if (self.network == "confined") != (self.egress_socket is not None):
            raise ValueError("network 'confined' needs an egress_socket, and only it takes one")


@final
class Sandbox:
    """A running confined command, as `open_confined` yields it.

    Attributes:
        child: bwrap (after the join and the privilege drop), with both output
            pipes; read it with `recorder.drive_child` or `sandbox._capture.capture`.
        dirs: The directories bound into it.
        argv: The argv it was started with (for tests and messages).
        cgroup: Its cgroup: every process of the sandbox is in it.
        watch: What holds it to its limits (`sandbox.cgroup._watch.LimitWatch`), or None
            when it has none to watch.
        user: Who it runs as (leased, or given); None for the runner itself.
        contained: After the exit, whether the cgroup was found empty and removed.
            When False (a process outlived the kill's bound), nothing the sandbox
            wrote was read or reclaimed (no last walk of its directories, no
            `sandbox.storage._reclaim`), and the caller must read none of it either: its
            workspace, log and config directories may still be written (a session
            ends ``uncontained``, docs/batch.md "Session states").
    """

    def __init__(
        self, child: Child, dirs: ConfinedDirs, argv: Sequence[str], cgroup: SessionCgroup,
        watch: LimitWatch | None = None, user: SessionUser | None = None,
    ) -> None:
        self.child = child
        self.dirs = dirs
        self.argv = tuple(argv)
        self.cgroup = cgroup
        self.watch = watch
        self.user = user
        self.contained = False

    def __repr__(self) -> str:
        return f"<Sandbox {self.child!r} workspace={self.dirs.workspace}>"

    @property
    def limit_hit(self) -> LimitHit | None:
        """The first limit the sandbox passed (then it was ended at once), or None.

        Final once the `open_confined` block is left: the counters and the
        writable directories are read once more after the sandbox is empty.
        """
        return None if self.watch is None else self.watch.hit


@asynccontextmanager
async def open_confined(spec: ConfinedSpec, *, grace_s: float = GRACE_S) -> AsyncIterator[Sandbox]:
    """Start ``spec`` in its sandbox; on exit, end it and everything it started.

    Call from the event loop's own thread (`sandbox._process.spawn`).

    **Cancellation:** the exit's teardown is shielded and bounded (the reap's
    bounds, then at most `sandbox.cgroup._cgroup.EMPTY_TIMEOUT_S` for the cgroup to
    empty); the cancellation then propagates. When the block is left,
    nothing of the sandbox runs any more, or ``sandbox.contained`` is False:
    a cgroup that did not empty within the bound is logged and left for the
    sweep, and nothing of the sandbox's directories is read or reclaimed.

    Args:
        spec: What to run and how.
        grace_s: Seconds between SIGTERM and SIGKILL when bwrap is still
            running at the exit.

    Raises:
        SpawnFailed: bwrap is not found, or cannot be executed (nothing ran).
        SessionUserUnusable: a root runner cannot lease a session user, hand
            the directories over or drop to the user (nothing ran).
        ContainmentUnavailable: no cgroup of its own can be made, a limit is
            asked whose controller the host lacks, or no seccomp filter exists
            for this machine (nothing ran).
        ValueError: the spec's paths do not make a valid `Confinement`, or the
            environment is too large for one pipe buffer.

    A limit passed is not an exception: the sandbox is ended at once and
    ``sandbox.limit_hit`` names it (`sandbox.cgroup._watch`). A sandbox given a pool
    may wait for a free user first (`sandbox.users._lease.lease_user`): that wait is
    not the sandbox's time.
    """
    executable = shutil.which(spec.bwrap)
    if executable is None:
        raise SpawnFailed(spec.bwrap, "not found on PATH")
    seccomp = session_filter()
    # The cgroup hierarchies and, once per process, the sweep of killed runners' cgroups:
    # before the lease, so that a leftover the sweep ends does not hold its user.
    cgroups = await anyio.to_thread.run_sync(_swept_cgroups, spec)
    async with _leased(spec.user) as user, _opened(spec, user, executable, seccomp, cgroups,
                                                   grace_s) as sandbox:  # fmt: skip
        yield sandbox


def _leased(user: SessionUser | SessionPool | None) -> AbstractAsyncContextManager[
        SessionUser | None]:
    """A pool's lease for the block; a given user (its lease the caller's) or None as it is."""
    if isinstance(user, SessionPool):
        return lease_user(user)
    return contextlib.nullcontext(user)


@asynccontextmanager
async def _opened(spec: ConfinedSpec, user: SessionUser | None, executable: str,
                  seccomp: bytes, cgroups: CgroupHost, grace_s: float) -> AsyncIterator[Sandbox]:
    """`open_confined`'s steps 2 to 8, as ``user``."""
    scratch = make_scratch(spec.name) if None in (spec.workspace, spec.log_dir,
                                                   spec.config_dir) else None  # fmt: skip
    try:
        # Directories, the hand-over (a walk of the workspace), the host's layout: off the loop.
        dirs, layout, bound, baseline = await anyio.to_thread.run_sync(
            _prepare, spec, user, scratch)
        cgroup = open_session_cgroup(cgroups, spec.name, spec.limits)
        sandbox: Sandbox | None = None
        watch = _watch(spec, dirs, cgroup, baseline)
        try:
            env = spec.env(dirs) if callable(spec.env) else spec.env
            conf = _confinement(spec, dirs, layout, bound)
            with ExitStack() as fds:
                args_fd = fds.enter_context(payload_pipe(args_payload(bwrap_options(conf), env)))
                seccomp_fd = fds.enter_context(payload_pipe(seccomp))
                argv = [*cgroup.join_argv(open_files=spec.limits.open_files,
                                          file_bytes=spec.file_bytes),
                        *drop_argv(user),
                        *_bwrap_argv(spec, executable, conf, args_fd=args_fd,
                                     seccomp_fd=seccomp_fd)]  # fmt: skip
                child = spawn(argv, stdin="lifeline", pass_fds=(args_fd, seccomp_fd))
            sandbox = Sandbox(child, dirs, argv, cgroup, watch, user)
            try:
                async with watching(watch):  # a limit passed kills the cgroup at once
                    yield sandbox
            finally:
                with anyio.CancelScope(shield=True):
                    await child.reap(grace_s)
                    child.close()  # the lifeline last: the watcher inside ends what is left
        finally:
            contained = await cgroup.end()  # shielded and bounded: nothing of it is left
            if sandbox is not None:
                sandbox.contained = contained
            if not contained:  # something of it may still write: nothing of it is read
                logger.warning("%s still had processes %.0f s after cgroup.kill; left for the "
                               "sweep, and nothing the sandbox wrote is read or reclaimed",
                               cgroup.path, EMPTY_TIMEOUT_S)  # fmt: skip
            else:
                with anyio.CancelScope(shield=True):
                    if sandbox is not None and watch is not None:
                        await anyio.to_thread.run_sync(watch.check_after)
                    await anyio.to_thread.run_sync(_reclaim, spec)
    finally:
        if scratch is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(remove_tree, scratch)


def _confinement(spec: ConfinedSpec, dirs: ConfinedDirs, layout: HostLayout,
                 bound: Path) -> Confinement:
    """What ``spec``'s sandbox mounts, and where (RC-02)."""
    return Confinement(
        workspace=dirs.workspace, harness=bound, harness_mount=spec.mount, log_dir=dirs.log_dir,
        config_dir=dirs.config_dir, host_layout=layout, network=spec.network,
        egress_socket=spec.egress_socket, workspace_read_only=spec.workspace_read_only,
        tmp_bytes=spec.limits.tmp_bytes, workspace_mount=spec.workspace_mount,
        log_mount=spec.log_mount, config_mount=spec.config_mount,
    )  # fmt: skip


def _bwrap_argv(spec: ConfinedSpec, executable: str, conf: Confinement, *, args_fd: int,
                seccomp_fd: int) -> list[str]:
    """bwrap's command line for ``spec``: the init shell around the command in its Landlock
    domain (`sandbox._landlock`); the mounts go on the ``--args`` fd (`bwrap_options`)."""
    command = session_init_command(scoped_command(spec.command), lifeline=True,
                                   bridge=spec.network == "confined", socat=spec.socat,
                                   port=spec.bridge_port)  # fmt: skip
    return bwrap_argv(conf, command, bwrap=executable, args_fd=args_fd, seccomp_fd=seccomp_fd)


def _watch(spec: ConfinedSpec, dirs: ConfinedDirs, cgroup: SessionCgroup,
           baseline: int) -> LimitWatch | None:
    """The watch of ``spec``'s limits, or None when it has nothing to watch."""
    limits = spec.limits
    if not (cgroup.groups or spec.limit_checks or limits.tmp_bytes or limits.write_bytes):
        return None
    writable = [dirs.log_dir, dirs.config_dir]
    if not spec.workspace_read_only:
        writable.insert(0, dirs.workspace)
    # A per-file bound means the writes are sampled, not held by a store's size: what the
    # session unlinked but holds open is counted too (docs/storage.md).
    return LimitWatch(limits, cgroup, writable, baseline, spec.limit_checks,
                      count_unlinked=spec.file_bytes is not None)


def _swept_cgroups(spec: ConfinedSpec) -> CgroupHost:
    """The host's cgroup hierarchies; a first call sweeps a killed runner's cgroups (blocking)."""
    cgroups = spec.cgroups or _host_cgroups()
    sweep_once(cgroups)
    return cgroups


def _prepare(
    spec: ConfinedSpec, user: SessionUser | None, scratch: Path | None
) -> tuple[ConfinedDirs, HostLayout, Path, int]:
    """Make the scratch directories and hand everything over to ``user`` (blocking: run in a
    thread).

    Returns the directories, the host layout, the resolved executable to bind
    and, with a writes limit, what the writable directories hold (bytes).
    """
    root = None if scratch is None else scratch.resolve()
    dirs = _dirs(spec, root)
    executable = spec.executable.resolve()
    own = [p for p in (root, dirs.log_dir, dirs.config_dir) if p is not None]
    if not spec.workspace_read_only:
        own.append(dirs.workspace)
    reach = [executable, *_given(spec.egress_socket)]
    if spec.workspace_read_only:
        reach.append(dirs.workspace)
    hand_over(user, own=own, reach=reach)
    writable = [dirs.log_dir, dirs.config_dir, *([] if spec.workspace_read_only
                                                 else [dirs.workspace])]  # fmt: skip
    baseline = allocated_bytes(writable) if spec.limits.write_bytes is not None else 0
    return dirs, spec.layout or measure_host_layout(), executable, baseline


@functools.cache
def _host_cgroups() -> CgroupHost:
    """`find_cgroups`, once per process: a documented cache of what the process reads of itself.

    Process-wide on purpose: ``/proc/self/mountinfo`` and ``/proc/self/cgroup``
    describe this process's mounts and its own cgroup, which no batch or loop of
    it changes (the runner never moves itself), so one answer serves them all.
    Thread-safe: functools.cache is; two threads that miss at once read the same
    files twice and get equal answers.
    """
    return find_cgroups()


def _dirs(spec: ConfinedSpec, scratch: Path | None) -> ConfinedDirs:
    made: dict[str, Path] = {}
    for name in ("workspace", "log_dir", "config_dir"):
        given = getattr(spec, name)
        if given is None:
            assert scratch is not None
            given = scratch / name
            given.mkdir(mode=SCRATCH_DIR_MODE)
        made[name] = given
    return ConfinedDirs(**made)


def _reclaim(spec: ConfinedSpec) -> None:
    """Take back the caller's directories the session wrote (blocking; `sandbox.storage`)."""
    if spec.workspace is not None and not spec.workspace_read_only:
        reclaim_tree(spec.workspace)
    if spec.log_dir is not None and spec.reclaim_log:  # no more than the session may write
        bound = spec.limits.write_bytes
        replace_with_copy(spec.log_dir,
                          max_bytes=DEFAULT_WRITE_BYTES if bound is None else bound)


def _given(path: Path | None) -> list[Path]:
    return [] if path is None else [path]
