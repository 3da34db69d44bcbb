"""Bounded capture (sandbox/_capture.py): time and bytes are bounded, whatever the child does.

Expected values from the rule: the first ``limit_bytes`` of stdout and the
last ``limit_bytes`` of stderr are kept, every byte is still read (the child
never blocks), a child past its time bound is ended and the run says so, and a
descendant holding the pipes delays the run by at most the post-exit drain.
"""

from __future__ import annotations

import time

import pytest

from sandbox._capture import run_bounded, run_bounded_sync
from tests.conftest import python_child

pytestmark = pytest.mark.anyio


async def test_a_flood_is_read_whole_but_only_the_bounds_are_kept() -> None:
    mib = 1 << 20
    code = ("import sys\n"
            f"sys.stdout.buffer.write(b''.join(b'%07d\\n' % i for i in range({mib // 8 * 10})))\n"
            f"sys.stderr.buffer.write(b''.join(b'%07d\\n' % i for i in range({mib // 8 * 10})))\n")
    expected = b"".join(b"%07d\n" % i for i in range(mib // 8 * 10))  # 10 MiB, all distinct
    run = await run_bounded(python_child(code), timeout_s=60, limit_bytes=1000)
    assert (run.returncode, run.timed_out, run.stdout_bytes) == (0, False, len(expected))
    assert run.stdout == expected[:1000].decode()
    assert run.stderr == expected[-1000:].decode()


async def test_a_child_past_its_time_bound_is_ended_and_the_run_says_so() -> None:
    started = time.monotonic()
    run = await run_bounded(["/bin/sh", "-c", "echo started; sleep 60"], timeout_s=0.5)
    assert (run.returncode, run.timed_out, run.stdout) == (None, True, "started\n")
    assert time.monotonic() - started < 5  # SIGTERM ends sleep at once


async def test_a_descendant_holding_the_pipes_delays_the_run_by_the_drain_at_most() -> None:
    started = time.monotonic()
    run = await run_bounded(["/bin/sh", "-c", "sleep 60 & echo parent; exit 7"], timeout_s=30,
                            drain_s=0.5)
    assert (run.returncode, run.timed_out, run.stdout) == (7, False, "parent\n")
    assert time.monotonic() - started < 5


async def test_a_command_that_cannot_start_is_a_run_without_status() -> None:
    run = await run_bounded(["/nonexistent/hw-tool"], timeout_s=5)
    assert (run.returncode, run.timed_out) == (None, False)
    assert "/nonexistent/hw-tool" in run.stderr


def test_the_sync_form_gives_the_same_run() -> None:
    run = run_bounded_sync(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=10)
    assert (run.returncode, run.stdout, run.stderr) == (3, "out\n", "err\n")
