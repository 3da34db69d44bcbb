"""The sync shim (sandbox/_sync.py): a fresh loop at synchronous entry points, never nested.

Rules (the module's): `run_sync` runs an async function on a new trio loop
on the calling thread and returns once its children are reaped; it refuses,
before calling anything, on a thread that runs an event loop and on a worker
thread of a running loop (where the seal and a session's blocking steps run).
"""

from __future__ import annotations

import asyncio
import time

import anyio
import pytest
import trio

from sandbox import LiveChildren, NestedEventLoop, run_sync
from sandbox._live import current_children
from sandbox._process import open_child


async def _version() -> tuple[int | None, bytes]:
    async with open_child(["/bin/sh", "-c", "echo v1; exit 3"]) as child:
        chunks = []
        while chunk := await child.read("stdout"):
            chunks.append(chunk)
        await child.reap()
        return child.returncode, b"".join(chunks)


def test_run_sync_runs_a_child_to_its_reap_from_synchronous_code() -> None:
    """The sync shim: a fresh loop on this thread; the child is reaped before it returns."""
    assert run_sync(_version) == (3, b"v1\n")


def test_run_sync_gives_its_loop_a_registry_of_its_own() -> None:
    """A synchronous entry point's children join its own registry, never an outer one."""
    outer = LiveChildren()
    seen: list[LiveChildren | None] = []

    async def which() -> None:
        seen.append(current_children())

    with outer.tracking():
        run_sync(which)
    assert seen[0] is not None and seen[0] is not outer


def test_run_sync_refuses_on_a_thread_that_runs_a_loop() -> None:
    called: list[bool] = []

    async def inner() -> None:
        called.append(True)

    async def outer() -> None:
        with pytest.raises(NestedEventLoop, match="this thread runs a trio event loop"):
            run_sync(inner)

    anyio.run(outer, backend="trio")
    with pytest.raises(NestedEventLoop, match="runs an asyncio event loop"):
        asyncio.run(_asyncio_caller(inner))
    assert not called


async def _asyncio_caller(fn: object) -> None:
    run_sync(fn)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_run_sync_refuses_in_a_worker_thread_of_a_running_loop(backend: str) -> None:
    """Where the seal runs (``anyio.to_thread``): no second loop beside the batch's."""
    called: list[bool] = []

    async def inner() -> None:
        called.append(True)

    def in_the_worker() -> str:
        with pytest.raises(NestedEventLoop) as refused:
            run_sync(inner)
        return str(refused.value)

    async def batch_loop() -> str:
        return await anyio.to_thread.run_sync(in_the_worker)

    message = anyio.run(batch_loop, backend=backend)
    assert "worker thread of a running event loop" in message
    assert "must not be started under a running one" in message
    assert not called


def test_run_sync_refuses_in_a_worker_thread_whose_task_is_cancelled() -> None:
    """A cancelled host task still makes its thread a worker thread: refused, not run."""
    called: list[bool] = []
    raised: list[BaseException] = []

    async def inner() -> None:
        called.append(True)

    def in_the_worker(scope: anyio.CancelScope) -> None:
        anyio.from_thread.run_sync(scope.cancel)  # the host task is cancelled meanwhile
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the thread sees the cancellation
            try:
                trio.from_thread.check_cancelled()
            except trio.Cancelled:
                break
            time.sleep(0.01)
        try:
            run_sync(inner)
        except BaseException as exc:
            raised.append(exc)

    async def batch_loop() -> None:
        with anyio.CancelScope() as scope:
            await anyio.to_thread.run_sync(in_the_worker, scope)

    anyio.run(batch_loop, backend="trio")
    assert not called
    assert [type(exc) for exc in raised] == [NestedEventLoop]
