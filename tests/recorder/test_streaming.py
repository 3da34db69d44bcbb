"""The reader streams by mechanism: what it takes from the pipe never runs ahead of what it
hands on by more than one read plus the line being handed on, and a child that writes as
fast as it can waits on the full pipe meanwhile (docs/bench.md).

The child floods its stdout with lines of varied sizes (below, at and far above one read)
and, after each write returns, records how much it has written. Bytes taken from the pipe
and bytes handed on are counted outside the reader: by its ``receive`` (or the driver's
``on_chunk``) and by what the consumer gets. The consumer awaits per line
(``anyio.sleep``): an awaiting consumer is what lets a push-based reader run ahead; a busy
one never yields and hides it.
"""

from __future__ import annotations

import fcntl
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from recorder._driver import drive_child
from recorder._lines import READ_CHUNK_BYTES, LineReader
from sandbox._process import Child, open_child
from tests.conftest import python_child

pytestmark = pytest.mark.anyio

LINES = 600
"""Lines the consumer takes before it stops (the child would write for ever)."""

FLOOD = r"""
import os, sys
counter = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
sizes = [10, 300, 5000, 70000, 1, 200000, 1048575, 1048576, 1048577, 3000000, 0, 90]
written = n = 0
while True:
    for size in sizes:
        line = b"%08d" % n + b"p" * size + b"\n"
        view = memoryview(line)
        while view:
            view = view[os.write(1, view):]
        written += len(line)
        n += 1
        os.pwrite(counter, b"%20d" % written, 0)
"""


@dataclass
class Tally:
    """What was taken from the pipe and handed on, and the worst moments of both."""

    counter: Path
    pipe_bytes: int = 0
    taken: int = 0
    handed: int = 0
    lines: int = 0
    worst_held: int = -(2**62)
    """Most bytes held beyond one read and the line being handed on (must stay <= 0)."""
    worst_ahead: int = -(2**62)
    """Most bytes the child had written beyond those taken and the pipe's (must stay <= 0)."""
    full_pipe: int = 0
    """Lines after which the pipe was full: the child, writing as fast as it can, waited (not
    after every line: the child may still be building a 3 MB line when the consumer asks)."""

    def take(self, chunk: bytes) -> None:
        self.taken += len(chunk)

    def hand(self, line: bytes, child: Child) -> None:
        size = len(line) + 1
        self.worst_held = max(self.worst_held, self.taken - self.handed - size
                              - READ_CHUNK_BYTES)  # fmt: skip
        text = self.counter.read_bytes().strip() if self.counter.exists() else b""
        written = int(text) if text else 0
        self.worst_ahead = max(self.worst_ahead, written - self.taken - self.pipe_bytes)
        if child.pending("stdout") >= self.pipe_bytes:
            self.full_pipe += 1
        self.handed += size
        self.lines += 1

    def check(self) -> None:
        assert self.lines >= LINES
        assert self.worst_held <= 0, (
            f"the reader held {self.worst_held} bytes beyond one read and the current line")
        assert self.worst_ahead <= 0, "the child wrote past what the pipe holds: it never waited"
        assert self.pipe_bytes >= 64 * 1024
        assert self.full_pipe >= LINES // 10, (
            f"the pipe was full after only {self.full_pipe} of {self.lines} lines")


async def test_the_line_reader_on_a_flooding_child_with_an_awaiting_consumer(
    tmp_path: Path,
) -> None:
    tally = Tally(tmp_path / "written")
    with anyio.fail_after(120):
        async with open_child([*python_child(FLOOD), str(tally.counter)]) as child:
            tally.pipe_bytes = fcntl.fcntl(child._fd("stdout"), fcntl.F_GETPIPE_SZ)

            async def receive() -> bytes:
                chunk = await child.read("stdout", READ_CHUNK_BYTES)
                tally.take(chunk)
                return chunk

            async for line in LineReader(receive):
                await anyio.sleep(0.003)  # the consumer awaits; the child writes on
                tally.hand(line, child)
                if tally.lines >= LINES:
                    break
    tally.check()


async def test_drive_child_on_a_flooding_child_with_a_slow_consumer(tmp_path: Path) -> None:
    """The same through the driver: its ``on_line`` is synchronous, and slow here; meanwhile a
    task of the same loop awaits, so a reader task of its own would get its turns."""
    tally = Tally(tmp_path / "written")
    with anyio.fail_after(120):
        async with open_child([*python_child(FLOOD), str(tally.counter)]) as child:
            tally.pipe_bytes = fcntl.fcntl(child._fd("stdout"), fcntl.F_GETPIPE_SZ)

            def on_line(line: bytes) -> bool:
                time.sleep(0.002)
                tally.hand(line, child)
                if tally.lines >= LINES:
                    raise _Enough  # the driver reaps the child, then raises it
                return False

            async def others() -> None:
                for _ in range(10**9):  # a task that keeps taking turns on the loop
                    await anyio.sleep(0.001)

            async with anyio.create_task_group() as tg:
                tg.start_soon(others)
                with pytest.raises(_Enough):
                    await drive_child(child, on_line=on_line, stderr_tail=None,
                                      wall_limit_s=100, watchdog_s=100, grace_s=1,
                                      on_chunk=tally.take)
                tg.cancel_scope.cancel()
    tally.check()


class _Enough(Exception):
    """The consumer has taken its lines."""
