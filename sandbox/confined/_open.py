"""`open_confined`: a sandbox's steps in order, and its teardown however the block ends."""

from __future__ import annotations

import contextlib
import logging
import shutil
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from .._errors import SpawnFailed
from .._process import GRACE_S
from .._remove import remove_tree
from .._scratch import make_scratch
from .._seccomp import session_filter
from ..cgroup import (
    EMPTY_TIMEOUT_S,
    CgroupHost,
    LimitWatch,
    SessionCgroup,
    open_session_cgroup,
    watching,
)
from ..users import SessionPool, SessionUser, lease_user
from ._command import confinement, spawn_confined
from ._dirs import prepare, reclaim
from ._host import swept_cgroups
from ._sandbox import Sandbox

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from contextlib import AbstractAsyncContextManager

    from ._spec import ConfinedDirs, ConfinedSpec

__all__ = ["open_confined"]

logger = logging.getLogger(__name__)


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
    cgroups = await anyio.to_thread.run_sync(swept_cgroups, spec)
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
            prepare, spec, user, scratch)
        cgroup = open_session_cgroup(cgroups, spec.name, spec.limits)
        sandbox: Sandbox | None = None
        watch = _limit_watch(spec, dirs, cgroup, baseline)
        try:
            env = spec.env(dirs) if callable(spec.env) else spec.env
            child, argv = spawn_confined(spec, user=user, cgroup=cgroup,
                                         conf=confinement(spec, dirs, layout, bound), env=env,
                                         executable=executable, seccomp=seccomp)  # fmt: skip
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
                    await anyio.to_thread.run_sync(reclaim, spec)
    finally:
        if scratch is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(remove_tree, scratch)


def _limit_watch(spec: ConfinedSpec, dirs: ConfinedDirs, cgroup: SessionCgroup,
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
