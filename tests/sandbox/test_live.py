"""The registry of children not reaped yet (sandbox/_live.py): owned, scoped, thread-safe.

Rules (the module's): a child joins the registry current where it is spawned
(in the owner's block, its tasks and its worker threads), and nowhere outside
one; its reap removes it; `kill_now` SIGKILLs what is held, and two
registries never see each other's children.
"""

from __future__ import annotations

import signal

import anyio
import pytest

from sandbox import LiveChildren
from sandbox._process import spawn

pytestmark = pytest.mark.anyio


async def test_a_child_spawned_in_the_block_joins_and_its_reap_removes_it() -> None:
    live = LiveChildren()
    with live.tracking():
        child = spawn(["/bin/sleep", "60"])
    assert len(live) == 1
    outside = spawn(["/bin/sleep", "60"])  # no registry current: registered nowhere
    assert len(live) == 1
    for each in (child, outside):
        await each.reap(0.5)
        each.close()
    assert len(live) == 0


async def test_two_registries_never_see_each_others_children() -> None:
    first, second = LiveChildren(), LiveChildren()
    with first.tracking():
        mine = spawn(["/bin/sleep", "60"])
        with second.tracking():
            theirs = spawn(["/bin/sleep", "60"])
    assert second.kill_now() == 1  # only its own
    with anyio.fail_after(10):
        await theirs.wait_exit()
    assert not mine.has_exited()
    for each in (mine, theirs):
        await each.reap(0.5)
        each.close()
    assert theirs.returncode == -signal.SIGKILL
    assert (len(first), len(second)) == (0, 0)


async def test_tasks_and_worker_threads_of_the_block_join_it() -> None:
    """The registry is the block's context: a task it starts and a thread it starts see it."""
    live = LiveChildren()
    children = []

    async def task() -> None:
        children.append(spawn(["/bin/sleep", "60"]))

    def thread() -> None:
        children.append(spawn(["/bin/sleep", "60"]))

    with live.tracking():
        async with anyio.create_task_group() as tg:
            tg.start_soon(task)
        await anyio.to_thread.run_sync(thread)
    assert len(live) == 2
    assert live.kill_now() == 2
    for child in children:
        await child.reap(0.5)
        child.close()
    assert len(live) == 0
