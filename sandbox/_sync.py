"""The sync shim: an async function run on a new trio loop, at synchronous entry points only.

Rule (no nested event loop): `run_sync` starts a fresh trio loop on the
calling thread, which is right for a command line's synchronous code (a
preflight before the batch's loop starts, ``doctor``, a pool's ``useradd``)
and wrong anywhere under a running loop. On the loop's own thread it cannot
work at all; in a worker thread of a running loop (``anyio.to_thread``: the
seal, a session's blocking steps) it would run a second loop beside the
batch's, with its own clock, cancellation and children the batch's loop
knows nothing of. Such code waits with the process layer's blocking calls
instead (`sandbox._process.Child.wait_exit_blocking`, `Child.reap_blocking`),
which run no loop. So `run_sync` refuses both, with `NestedEventLoop`.

What it detects: a trio or asyncio event loop running on the calling thread,
and a worker thread started by a running loop (anyio's ``from_thread`` token,
trio's own for ``trio.to_thread``). A thread started by plain ``threading``
while some loop runs elsewhere in the process is not detected: nothing in
trio or anyio records it, and no code of the runner starts one under a batch.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, TypeVar

import anyio
import trio

from ._live import LiveChildren

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["NestedEventLoop", "loop_in_reach", "run_sync"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


class NestedEventLoop(RuntimeError):
    """`run_sync` was called under a running event loop (module docstring); nothing ran."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"run_sync starts an event loop, and {where}: an event loop must not be started "
            "under a running one; await the function there, or wait with the process layer's "
            "blocking calls (Child.wait_exit_blocking, Child.reap_blocking)")
        self.where = where


def loop_in_reach() -> str | None:
    """Why this thread must not start an event loop (in words), or None when it may.

    None on a plain thread with no loop above it; otherwise "this thread runs a trio
    event loop" or "this thread is a worker thread of a running event loop".
    """
    if trio.lowlevel.in_trio_run():
        return "this thread runs a trio event loop"
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return "this thread runs an asyncio event loop"
    for check in (anyio.from_thread.check_cancelled, trio.from_thread.check_cancelled):
        try:
            check()
        except (trio.Cancelled, asyncio.CancelledError):
            pass  # the loop's task is cancelled: a worker thread all the same
        except RuntimeError:  # anyio.NoEventLoopError, trio's "not created by Trio"
            continue
        return "this thread is a worker thread of a running event loop"
    return None


def run_sync(fn: Callable[..., Awaitable[_T]], *args: object) -> _T:
    """Run ``fn(*args)`` to completion on a new trio loop on this thread.

    For synchronous entry points only (module docstring). The calling thread
    blocks until ``fn`` returns, so a child spawned inside is reaped before the
    thread can go on: ``--die-with-parent`` holds. The loop has its own
    `LiveChildren`; a child ``fn`` left unreaped (a bug) is killed on the way
    out and a warning logged.

    Raises:
        NestedEventLoop: an event loop runs on this thread, or this is a worker
            thread of a running loop (`loop_in_reach`); ``fn`` was not called.
        Whatever ``fn`` raises.
    """
    where = loop_in_reach()
    if where is not None:
        raise NestedEventLoop(where)
    with LiveChildren().tracking() as live:
        try:
            return anyio.run(fn, *args, backend="trio")
        finally:
            if left := live.kill_now():
                logger.warning("%d children were not reaped by %r; killed", left, fn)
