"""Benchmark (not a test): how long one stream of tiny lines holds the event loop.

A child prints ``N`` lines of one kind (``json``: a 42-byte user line; ``blank``: an empty
line) as fast as the pipe takes them; the runner's path reads them (`drive_child` and
`StreamObserver.feed`, no sandbox) while a ticker task beside it sleeps 1 ms at a time
and notes the longest it waited past that: the longest the loop was held. Prints the
wall and CPU seconds of the drive and that gap (docs/bench.md "bench/loop_share.py";
docs/recorder.md "Sharing the event loop").

Usage::

    .venv/bin/python bench/loop_share.py json|blank [N]    # N: lines, 1,000,000 by default
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from recorder._driver import drive_child  # noqa: E402
from recorder._initcheck import InitPolicy  # noqa: E402
from recorder._transform import StreamObserver  # noqa: E402
from sandbox._process import open_child  # noqa: E402

LINES = {"json": b'{"type":"user","message":{"content":[]}}\n', "blank": b"\n"}
"""The line each kind prints, newline included."""
POLICY = InitPolicy("dontAsk", frozenset(), frozenset(), "/home/agent")


async def measure(kind: str, count: int) -> str:
    """Drive a child printing ``count`` lines of ``kind``; one line of figures (seconds, ms).

    Raises:
        KeyError: ``kind`` is not one of `LINES`.
    """
    line = LINES[kind]
    gap = [0.0]

    async def ticker() -> None:
        last = time.perf_counter()
        while True:
            await anyio.sleep(0.001)
            now = time.perf_counter()
            gap[0] = max(gap[0], now - last - 0.001)
            last = now

    code = (f"import os\nv = memoryview({line!r} * {count})\n"
            "while v:\n    v = v[os.write(1, v):]\n")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        observer = StreamObserver(policy=POLICY, workspace=Path(tmp))
        cpu, wall = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            async with open_child([sys.executable, "-c", code]) as child:
                result = await drive_child(child, on_line=observer.feed, stderr_tail=None,
                                           wall_limit_s=600, watchdog_s=60)  # fmt: skip
            tg.cancel_scope.cancel()
    return (f"{kind} x {count:,}: end {result.end}, lines {result.lines:,}, wall "
            f"{time.perf_counter() - wall:.2f} s, cpu {time.process_time() - cpu:.2f} s, "
            f"loop held at most {gap[0] * 1000:.1f} ms")


def main() -> None:
    """Parse the command line (module docstring) and print the figures."""
    kind = sys.argv[1] if len(sys.argv) > 1 else "json"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    print(anyio.run(measure, kind, count, backend="trio"))


if __name__ == "__main__":
    main()
