"""The supervisor owns the registry of its sessions' live children (campaign/supervisor/_fanout.py).

Rules: every child an attempt spawns while `Supervisor.run` runs joins the supervisor's own
`LiveChildren` (none of another run's), and a second signal (`Supervisor._escalate`) SIGKILLs
what is in it at once, without the reap's grace; each reap then removes its child.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from campaign.batch._journal import Journal
from campaign.batch._records import FinalRecord
from campaign.supervisor._fanout import RunLimits, Supervisor
from campaign.supervisor._spec import planned_sessions, session_order
from sandbox import LiveChildren, open_child
from tests.conftest import python_child
from tests.fakes import FakeAttempts, supervisor_context
from tests.supervisor.test_fanout_stops import plan as plan  # the fixture

pytestmark = pytest.mark.anyio

DEAF = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)")


async def test_a_second_signal_kills_the_sessions_children_at_once(
        tmp_path: Path, plan: Any) -> None:
    recorded = FakeAttempts({"s1": "recorded", "s2": "recorded"})
    held: list[int] = []
    took: list[float] = []
    other = LiveChildren()  # another run's registry: never reached from this one

    async def run_attempt(spec: Any, attempt: int, ctx: Any, journal: Journal,
                          **kwargs: Any) -> FinalRecord:
        async with open_child(python_child(DEAF), grace_s=30.0) as child:
            await child.read("stdout")  # SIGTERM is ignored from here on
            held.append(len(supervisor.children))
            started = time.monotonic()
            supervisor._escalate()  # the second signal
            with anyio.fail_after(10):
                await child.wait_exit()  # only SIGKILL ends it
            took.append(time.monotonic() - started)
        final: FinalRecord = await recorded(spec, attempt, ctx, journal, **kwargs)
        return final

    batch = tmp_path / "batch"
    batch.mkdir()
    with other.tracking(), Journal(batch, plan, planned=planned_sessions(plan),
                                   network="confined", provider_note="a stand-in") as journal:
        supervisor = Supervisor(supervisor_context(), journal,
                                RunLimits(concurrency=1, retries=0, backoff_s=0.0),
                                run_attempt=run_attempt)
        await supervisor.run(session_order(plan), watch_signals=False)
    assert held == [1, 1]  # each attempt's child, in the supervisor's registry
    assert all(t < 5.0 for t in took)  # killed at once, not after the 30 s grace
    assert (len(supervisor.children), len(other)) == (0, 0)
