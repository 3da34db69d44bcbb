"""The supervisor: probes x arms x repetitions fanned out under a concurrency limit.

A bounded channel of session specs (capacity = concurrency) feeds exactly
``concurrency`` workers; outcomes go to the ledger and the progress counters,
never to a list, so memory is flat in the number of sessions (DESIGN.md,
targets: scale). Specs are produced lazily by a generator.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from ._ledger import Ledger
from ._plan import Plan
from ._progress import Progress
from ._render import render_arm
from ._session import BatchContext, SessionSpec, run_session

RENDER_EVERY_S = 5.0
"""Minimum seconds between two re-renders of an arm's transcript while the batch runs."""


def session_specs(plan: Plan) -> Iterator[SessionSpec]:
    """Every session of the plan, lazily: for each repetition, each probe, each arm.

    Arms interleave so a batch stopped early has comparable arms. Session
    names are ``s<repetition>``, distinct within a probe (RC-15).
    """
    for rep in range(1, plan.repetitions + 1):
        for probe in plan.probes:
            for arm in plan.arms:
                yield SessionSpec(probe=probe.id, arm=arm, repetition=rep, session=f"s{rep}")


async def run_batch(
    ctx: BatchContext, specs: Iterable[SessionSpec], *, concurrency: int, progress: Progress,
    network: str = "host",
) -> None:
    """Run every spec under ``concurrency`` workers; write ledger lines and transcripts.

    **Cancellation:** running sessions are reaped and written as ``killed``;
    the transcripts are re-rendered (shielded) before the cancellation goes on,
    so a stopped batch is resumable and its transcripts match its ledger.

    Raises:
        ValueError: ``concurrency`` < 1.
    """
    if concurrency < 1:
        raise ValueError(f"--concurrency must be at least 1, got {concurrency}")
    last_render: dict[str, float] = {}
    ledger_path = ctx.batch / "ledger.jsonl"

    def render(arm: str) -> None:
        render_arm(ctx.batch, ctx.plan, arm=arm, network=network)
        last_render[arm] = anyio.current_time()

    async def worker(receive: MemoryObjectReceiveStream[SessionSpec], ledger: Ledger) -> None:
        async with receive:
            async for spec in receive:
                outcome = await run_session(spec, ctx, ledger)
                progress.session_done(
                    arm=spec.arm, probe=spec.probe, session=spec.session, state=outcome.state,
                    reason=outcome.reason, cost_usd=outcome.cost_usd,
                )
                if anyio.current_time() - last_render.get(spec.arm, -math.inf) > RENDER_EVERY_S:
                    render(spec.arm)

    with Ledger(ledger_path) as ledger:
        try:
            send, receive = anyio.create_memory_object_stream[SessionSpec](concurrency)
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker, receive.clone(), ledger)
                receive.close()
                async with send:
                    for spec in specs:
                        await send.send(spec)
        finally:
            # Synchronous (no checkpoint), so it runs whole even while cancelled.
            for arm in ctx.plan.arms:
                render(arm)

