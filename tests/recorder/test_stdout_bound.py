"""The stdout bound (``--max-stdout``; docs/confinement.md "Limits"): the reader counts every
byte received from the pipe before any line handling, and the driver ends the child at once
once the count passes the bound."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from recorder._driver import drive_child
from recorder._errors import StdoutTooLarge
from recorder._lines import READ_CHUNK_BYTES, LineReader
from sandbox._process import open_child
from tests.conftest import python_child

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024


class Chunks:
    """A receive() over fixed chunks; b"" after them. Counts the bytes it handed out."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = iter(chunks)
        self.handed = 0

    async def __call__(self) -> bytes:
        await anyio.lowlevel.checkpoint()
        chunk = next(self._chunks, b"")
        self.handed += len(chunk)
        return chunk


async def test_a_stream_at_the_bound_reads_whole() -> None:
    data = b"x" * 99 + b"\n"  # 100 bytes exactly: at the bound, not past it
    reader = LineReader(Chunks([data[:50], data[50:]]), max_stream_bytes=100)
    assert [line async for line in reader] == [b"x" * 99]
    assert reader.bytes_received == 100


async def test_one_byte_past_the_bound_fails_before_the_chunk_is_framed() -> None:
    source = Chunks([b"a\n" * 50, b"b\n"])  # 100 bytes, then 2 more: 102 > 101
    reader = LineReader(source, max_stream_bytes=101)
    seen: list[bytes] = []
    with pytest.raises(StdoutTooLarge) as caught:
        async for line in reader:
            seen.append(line)
    assert seen == [b"a"] * 50  # the chunk that passed the bound gave no line
    assert (caught.value.received_bytes, caught.value.limit_bytes) == (102, 101)
    assert reader.bytes_received == 102
    assert [line async for line in reader] == []  # it stays over


async def test_bytes_without_a_newline_count_too() -> None:
    # One endless line of whitespace: no line is ever framed, the count still passes.
    source = Chunks([b" " * 1000] * 10)
    reader = LineReader(source, max_stream_bytes=4500, max_line_bytes=1 << 30)
    with pytest.raises(StdoutTooLarge):
        async for _ in reader:
            pass
    assert source.handed == 5000  # it asked for no read past the one that passed


async def test_no_bound_reads_everything() -> None:
    reader = LineReader(Chunks([b"y\n"] * 1000))
    assert len([line async for line in reader]) == 1000


async def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_stream_bytes"):
        LineReader(Chunks([]), max_stream_bytes=0)


async def test_the_driver_ends_a_flood_at_the_bound_at_once(tmp_path: Path) -> None:
    # 1 MiB lines of whitespace for 60 s, deaf to SIGTERM and to a closed pipe: only a
    # kill ends it, and a limit passed kills it at once.
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "out = sys.stdout.buffer\n"
        f"line = b' ' * {MiB - 1} + b'\\n'\n"
        "end = time.monotonic() + 60\n"
        "while time.monotonic() < end:\n"
        "    try:\n"
        "        out.write(line)\n"
        "    except OSError:\n"
        "        time.sleep(0.01)\n"
    )
    bound = 8 * MiB
    kept: list[int] = []
    lines: list[bytes] = []
    started = time.monotonic()
    with anyio.fail_after(30):
        async with open_child(python_child(code)) as child:
            result = await drive_child(
                child, on_line=lines.append, stderr_tail=tmp_path / "stderr.tail",
                wall_limit_s=60, watchdog_s=60, grace_s=20,
                on_chunk=lambda chunk: kept.append(len(chunk)), max_stdout_bytes=bound)
    elapsed = time.monotonic() - started
    assert result.end == "stdout-limit"
    assert bound < result.stdout_bytes <= bound + READ_CHUNK_BYTES
    assert sum(kept) == result.stdout_bytes  # the kept stream: what was received, no more
    assert sum(len(line) + 1 for line in lines) <= bound  # nothing past the bound was framed
    assert result.exit_status is not None and result.exit_status < 0  # killed, not asked
    assert elapsed < 10  # not the 20 s grace, not the 60 s flood


async def test_the_driver_lets_a_stream_under_the_bound_end_by_itself(tmp_path: Path) -> None:
    code = "import sys\nsys.stdout.buffer.write(b'{}\\n' * 1000)\n"
    lines: list[bytes] = []
    with anyio.fail_after(30):
        async with open_child(python_child(code)) as child:
            result = await drive_child(
                child, on_line=lines.append, stderr_tail=tmp_path / "stderr.tail",
                wall_limit_s=30, watchdog_s=30, max_stdout_bytes=3000)
    assert (result.end, result.exit_status, len(lines)) == ("exited", 0, 1000)
