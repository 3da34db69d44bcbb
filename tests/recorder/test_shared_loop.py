"""What one session's stdout and stderr may cost the event loop every session shares
(docs/recorder.md "Sharing the event loop"; docs/confinement.md "Limits"): the pump yields
within a read, a blank line is an anomaly counted without a JSON decoder, a session past
`MAX_SESSION_LINES` lines or past its byte bound on stderr is ended at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from recorder import _harness
from recorder._bounds import MAX_SESSION_LINES
from recorder._driver import YIELD_AFTER_S, DriveResult, drive_child
from recorder._initcheck import InitPolicy
from recorder._transform import StreamObserver
from sandbox._process import open_child
from tests.conftest import python_child

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024
POLICY = InitPolicy("dontAsk", frozenset(), frozenset(), "/home/agent")


async def _drive(code: str, tmp_path: Path, ticks: list[int] | None = None,
                 **overrides: Any) -> DriveResult:
    """Drive a Python child beside a ticker task, which counts in ``ticks[0]`` the times the
    loop let it run."""
    ticks = [0] if ticks is None else ticks

    async def ticker() -> None:
        while True:
            await anyio.lowlevel.checkpoint()
            ticks[0] += 1

    params: dict[str, Any] = {"on_line": lambda line: None, "stderr_tail": tmp_path / "tail",
                              "wall_limit_s": 60.0, "watchdog_s": 30.0, "grace_s": 1.0}
    params.update(overrides)
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            async with open_child(python_child(code)) as child:
                tg.start_soon(ticker)
                result = await drive_child(child, **params)
            tg.cancel_scope.cancel()
    return result


def _slow(line: bytes) -> None:
    """A line's handling that costs 20 us (a parse of a short JSON line is 1.5 us)."""
    end = time.perf_counter() + 20e-6
    while time.perf_counter() < end:
        pass


async def test_the_pump_yields_within_one_read_of_many_lines(tmp_path: Path) -> None:
    """100,000 lines of 9 bytes (under 1 MiB: the child writes them in one write) at 20 us
    each: another task runs at least every `YIELD_AFTER_S` of handling, 100 lines, so no
    run of lines between two of its turns is longer than ten times that (a machine that
    deschedules the runner makes the runs shorter, never longer). Without the yield the
    other task runs only between reads: runs of tens of thousands of lines."""
    ticks = [0]
    seen: list[int] = []

    def on_line(line: bytes) -> None:
        seen.append(ticks[0])
        _slow(line)

    code = "import os\ndata = b'{\"a\":1}\\n' * 100_000\nv = memoryview(data)\n" \
           "while v: v = v[os.write(1, v):]\n"  # fmt: skip
    result = await _drive(code, tmp_path, ticks, on_line=on_line)
    assert (result.end, result.lines) == ("exited", 100_000)
    runs: dict[int, int] = {}
    for tick in seen:
        runs[tick] = runs.get(tick, 0) + 1
    longest = max(runs.values())
    assert longest <= 10 * YIELD_AFTER_S / 20e-6, f"{longest} lines without a yield"


async def test_a_session_past_the_line_bound_is_ended_at_once(tmp_path: Path) -> None:
    """Line ``bound + 1`` is not handed on; the child, which would print forever, is killed."""
    seen: list[bytes] = []
    code = "import os\nwhile True:\n    os.write(1, b'\\n' * 65536)\n"
    result = await _drive(code, tmp_path, on_line=seen.append, max_lines=200_000)
    assert (result.end, result.lines, len(seen)) == ("line-limit", 200_000, 200_000)
    # Killed, or its next write failed on the closed pipe: never an exit of its own.
    assert result.exit_status is not None and result.exit_status != 0
    assert result.tail is None


async def test_a_session_past_the_stderr_bound_is_ended_at_once(tmp_path: Path) -> None:
    """stderr is counted as read; past the bound (here 4 MiB) the drive ends
    ``stderr-limit`` within one read of it, long before the child's 60 s of writing."""
    code = ("import os, time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n"
            "    os.write(2, b'e' * 65536)\n")  # fmt: skip
    started = time.monotonic()
    result = await _drive(code, tmp_path, max_stderr_bytes=4 * MiB)
    assert result.end == "stderr-limit"
    assert 4 * MiB < result.stderr_bytes <= 4 * MiB + 1 * MiB
    assert time.monotonic() - started < 30
    assert len((tmp_path / "tail").read_bytes()) == 64 * 1024


async def test_stderr_under_its_bound_changes_nothing(tmp_path: Path) -> None:
    code = "import os\nos.write(2, b'e' * 100_000)\nos.write(1, b'{}\\n')\n"
    result = await _drive(code, tmp_path, max_stderr_bytes=4 * MiB, max_lines=1)
    assert (result.end, result.exit_status, result.lines, result.stderr_bytes) == (
        "exited", 0, 1, 100_000)


def test_the_line_bound_is_a_million() -> None:
    """docs/recorder.md "Sharing the event loop": a long real session prints thousands."""
    assert MAX_SESSION_LINES == 1_000_000


def test_blank_lines_are_anomalies_without_a_decoder() -> None:
    """Empty and whitespace-only lines are counted and kept aside as any anomaly is, and
    never reach the JSON decoders (which cost an exception each)."""
    decoded: list[bytes] = []
    real = _harness.observe_line

    def counting(line: bytes) -> Any:
        decoded.append(line)
        return real(line)

    observer = StreamObserver(policy=POLICY, workspace=Path("/w"), decode=counting)
    lines = [b"", b"   ", b"\t\r", b"\x0b\x0c", b"not json", b""]
    for line in lines:
        assert observer.feed(line) is False
    obs = observer.finish(end="exited", exit_status=0, tail=None)
    assert obs.anomaly_count == 6
    assert [(a.line_number, a.size_bytes, a.excerpt) for a in obs.anomalies] == [
        (1, 0, ""), (2, 3, "   "), (3, 2, "\t\r"), (4, 2, "\x0b\x0c"), (5, 8, "not json"),
        (6, 0, "")]
    assert decoded == [b"not json"]
    assert all(_harness.parse_line(line) is None for line in lines)  # as the reference says


def test_a_line_with_text_after_blanks_is_still_decoded() -> None:
    observer = StreamObserver(policy=POLICY, workspace=Path("/w"))
    assert observer.feed(b'  {"type":"result","subtype":"success","is_error":false}') is False
    assert observer.finish(end="exited", exit_status=0, tail=None).anomaly_count == 0
