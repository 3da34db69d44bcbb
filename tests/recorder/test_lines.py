"""LineReader: framing on 0x0A only, bytes never decoded, bounded memory, the cap (BC-03)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from recorder._errors import LineTooLong, RecorderError
from recorder._lines import MAX_LINE_BYTES, READ_CHUNK_BYTES, LineReader

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

BC03 = Path(__file__).resolve().parent.parent / "fixtures" / "bug_inputs" / "BC-03.jsonl"


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """LineReader is backend-neutral: run it on both backends (STYLE §18)."""
    return str(request.param)


class Source:
    """A receive() over fixed chunks that counts its calls; b"" for ever after them."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = iter(chunks)
        self.calls = 0

    async def __call__(self) -> bytes:
        self.calls += 1
        await anyio.lowlevel.checkpoint()
        return next(self._chunks, b"")


async def read_all(reader: LineReader) -> list[bytes]:
    return [line async for line in reader]


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize(
    ("chunks", "lines"),
    [
        ([b'{"a":1}\n'], [b'{"a":1}']),
        ([b'{"a"', b":1}\n"], [b'{"a":1}']),
        ([b'{"a":1}\n{"b"', b':2}\n{"c":3}\n'], [b'{"a":1}', b'{"b":2}', b'{"c":3}']),
        ([b"x", b"y", b"z", b"\n"], [b"xyz"]),
        ([b'{"a":1}', b"\n"], [b'{"a":1}']),
        ([b"\n\n"], [b"", b""]),
    ],
    ids=[
        "whole",
        "split-mid-record",
        "three-lines-two-chunks",
        "byte-chunks",
        "newline-alone",
        "empty-lines",
    ],
)
async def test_line_reader_reassembles_records(chunks: list[bytes], lines: list[bytes]) -> None:
    reader = LineReader(Source(chunks))
    assert await read_all(reader) == lines
    assert reader.tail is None
    assert reader.lines == len(lines)


@pytest.mark.parametrize("cut", range(1, 4))
async def test_line_reader_keeps_a_multibyte_char_split_across_chunks(cut: int) -> None:
    record = '{"t":"caf\u00e9 \u2603 \U0001f600"}'.encode()
    start = record.index("\U0001f600".encode())  # a 4-byte character
    chunks = [record[: start + cut], record[start + cut :] + b"\n"]
    (line,) = await read_all(LineReader(Source(chunks)))
    assert json.loads(line.decode("utf-8")) == {"t": "caf\u00e9 \u2603 \U0001f600"}


async def test_line_reader_does_not_split_at_u2028_inside_a_json_string() -> None:
    record = json.dumps({"text": "a\u2028b\u2029c\rd"}, ensure_ascii=False).encode()
    assert "\u2028".encode() in record  # raw in the bytes, as the harness prints it
    chunks = chunked(record + b"\n" + b'{"n":2}\n', 5)
    lines = await read_all(LineReader(Source(chunks)))
    assert [json.loads(line) for line in lines] == [{"text": "a\u2028b\u2029c\rd"}, {"n": 2}]


async def test_line_reader_puts_a_final_fragment_in_tail_not_in_lines() -> None:
    reader = LineReader(Source([b'{"a":1}\n{"type":"res', b'ult"']))
    assert await read_all(reader) == [b'{"a":1}']
    assert reader.tail == b'{"type":"result"'


async def test_line_reader_empty_stream() -> None:
    source = Source([])
    reader = LineReader(source)
    assert await read_all(reader) == []
    assert reader.tail is None
    assert (reader.bytes_received, reader.bytes_delivered, reader.lines) == (0, 0, 0)
    assert await read_all(reader) == []
    assert source.calls == 1  # EOF is not asked for twice


async def test_line_reader_counts_bytes_with_newlines() -> None:
    reader = LineReader(Source([b"ab\ncd", b"\nef"]))
    assert await read_all(reader) == [b"ab", b"cd"]
    assert (reader.bytes_received, reader.bytes_delivered, reader.tail) == (8, 6, b"ef")


async def test_line_reader_accepts_a_line_exactly_at_the_cap() -> None:
    chunks = chunked(b"x" * 10 + b"\n" + b"y\n", 4)
    lines = await read_all(LineReader(Source(chunks), max_line_bytes=10))
    assert lines == [b"x" * 10, b"y"]


async def test_line_reader_rejects_a_terminated_line_one_over_the_cap() -> None:
    reader = LineReader(Source([b"ok\n" + b"x" * 11 + b"\nnext\n"]), max_line_bytes=10)
    with pytest.raises(LineTooLong) as caught:
        await read_all(reader)
    assert isinstance(caught.value, RecorderError)
    assert (caught.value.line_number, caught.value.size_bytes) == (2, 11)
    assert caught.value.complete
    assert "line 2" in str(caught.value)
    assert "11 bytes" in str(caught.value)
    assert reader.lines == 1
    assert await read_all(reader) == []  # no silent skip to the next line


async def test_line_reader_raises_before_buffering_past_the_cap() -> None:
    """An endless line: the reader stops at the first chunk that would pass the cap."""
    source = Source([b"ok\n"] + [b"x" * 4] * 1000)
    reader = LineReader(source, max_line_bytes=10)
    with pytest.raises(LineTooLong) as caught:
        await read_all(reader)
    # chunks 2 and 3 hold 8 bytes; chunk 4 would make 12 > 10: raised there.
    assert source.calls == 4
    assert (caught.value.line_number, caught.value.size_bytes) == (2, 12)
    assert not caught.value.complete
    assert "line 2" in str(caught.value)
    assert "at least 12 bytes" in str(caught.value)


async def test_line_reader_default_cap_is_64_mib_line_at_cap_passes_over_fails() -> None:
    assert MAX_LINE_BYTES == 64 * 1024 * 1024
    at_cap = b"a" * MAX_LINE_BYTES
    (line,) = await read_all(LineReader(Source(chunked(at_cap + b"\n", READ_CHUNK_BYTES))))
    assert len(line) == MAX_LINE_BYTES
    del line
    over = LineReader(Source(chunked(b"{}\n" + at_cap + b"b\n", READ_CHUNK_BYTES)))
    with pytest.raises(LineTooLong) as caught:
        await read_all(over)
    assert caught.value.line_number == 2
    assert caught.value.size_bytes == MAX_LINE_BYTES + 1


async def test_line_reader_reads_bc03_whole_and_the_lines_after_it() -> None:
    """BC-03: a ~1.4 MB line (an image read) is one line, its digest taken, the rest read."""
    data = BC03.read_bytes()
    expected = data.split(b"\n")
    assert expected[-1] == b""  # the fixture ends on a newline
    expected = expected[:-1]
    big = max(range(len(expected)), key=lambda i: len(expected[i]))
    assert len(expected[big]) > 1_000_000
    assert big < len(expected) - 1  # there are lines after it
    reader = LineReader(Source(chunked(data, READ_CHUNK_BYTES)))
    lines = await read_all(reader)
    assert len(lines) == len(expected)
    assert hashlib.sha256(lines[big]).digest() == hashlib.sha256(expected[big]).digest()
    assert [json.loads(line)["type"] for line in lines] == [
        json.loads(line)["type"] for line in expected
    ]
    assert reader.tail is None
    assert reader.bytes_received == reader.bytes_delivered == len(data)


def mixed_lines() -> Iterator[bytes]:
    """Lines of varied sizes, some longer than a chunk, numbered so order is checked."""
    sizes = [10, 300, 5_000, 70_000, 1, 200_000, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 0]
    n = 0
    while True:
        for size in sizes:
            yield f"{n:08d}".encode() + b"p" * size
            n += 1


class PipeLikeSource:
    """Produces bytes only when asked, in chunks of at most READ_CHUNK_BYTES, like os.read.

    At each call it checks the invariant of the mechanism: what the reader
    holds (received - delivered) is the current partial line only.
    """

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self._buffer = bytearray()
        self.reader: LineReader | None = None
        self.max_held_at_receive = 0

    async def __call__(self) -> bytes:
        assert self.reader is not None
        held = self.reader.bytes_received - self.reader.bytes_delivered
        assert b"\n" not in self.reader.pending  # only a partial line is held
        assert held == len(self.reader.pending)
        self.max_held_at_receive = max(self.max_held_at_receive, held)
        while len(self._buffer) < READ_CHUNK_BYTES:
            self._buffer += next(self._lines) + b"\n"
        chunk = bytes(self._buffer[:READ_CHUNK_BYTES])
        del self._buffer[:READ_CHUNK_BYTES]
        await anyio.lowlevel.checkpoint()
        return chunk


async def test_line_reader_pulls_only_what_the_consumer_asks_for() -> None:
    """Mechanism (docs/bench.md): received <= delivered + one chunk + partial line."""
    source = PipeLikeSource(mixed_lines())
    reader = LineReader(source)
    source.reader = reader
    expected = mixed_lines()
    longest = 0
    count = 0
    async for line in reader:
        assert line == next(expected)
        longest = max(longest, len(line))
        # The consumer is slow: it awaits between lines, and the source is not read ahead.
        assert reader.bytes_received <= reader.bytes_delivered + READ_CHUNK_BYTES
        await anyio.sleep(0.001)
        count += 1
        if count == 200:
            break
    assert source.max_held_at_receive <= longest
    assert reader.bytes_received <= reader.bytes_delivered + READ_CHUNK_BYTES


def test_line_too_long_fields_and_message() -> None:
    exc = LineTooLong(
        line_number=3, size_bytes=70_000_000, limit_bytes=MAX_LINE_BYTES, complete=True
    )
    assert (exc.line_number, exc.size_bytes, exc.limit_bytes) == (3, 70_000_000, MAX_LINE_BYTES)
    assert str(exc) == (
        f"stdout line 3 is 70000000 bytes, over the line cap of {MAX_LINE_BYTES} bytes"
    )
