"""The kept stream: exactly the bytes received, read back line by line, cut lines kept as cut."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
import zstandard

from campaign.supervisor import _streams
from campaign.supervisor._streams import CompressorPool, StreamKeeper, stream_lines


@pytest.mark.parametrize("chunks", [[b'{"a":1}\n{"b":2}\n'], [b'{"a"', b':1}\n{"b', b'":2}\n'],
                                    [b'{"a":1}\n', b'{"cut'], [b""], []],
                         ids=["whole", "split", "cut-last", "empty-chunk", "nothing"])
def test_what_is_kept_decompresses_to_the_bytes_received(tmp_path: Path,
                                                         chunks: list[bytes]) -> None:
    keeper = StreamKeeper(tmp_path / "s.zst")
    for chunk in chunks:
        keeper.write(chunk)
    size = keeper.close()
    assert keeper.close() == size  # idempotent
    received = b"".join(chunks)
    assert keeper.bytes_in == len(received)
    with (tmp_path / "s.zst").open("rb") as fp:
        assert zstandard.ZstdDecompressor().stream_reader(fp).read() == received
    expected = [(line, True) for line in received.split(b"\n")[:-1]]
    if received and not received.endswith(b"\n"):
        expected.append((received.rsplit(b"\n", 1)[-1], False))
    assert list(stream_lines(tmp_path / "s.zst")) == expected


def test_a_stream_cut_by_a_crash_reads_back_as_far_as_it_goes(tmp_path: Path) -> None:
    keeper = StreamKeeper(tmp_path / "s.zst")
    keeper.write(b'{"a":1}\n' * 1000)
    keeper._writer.flush(zstandard.FLUSH_BLOCK)  # what reached the disk before the crash
    keeper._file.flush()
    data = (tmp_path / "s.zst").read_bytes()
    (tmp_path / "cut.zst").write_bytes(data)  # no frame end: the runner was killed
    lines = list(stream_lines(tmp_path / "cut.zst"))
    assert lines and all(line == (b'{"a":1}', True) for line in lines)
    keeper.close()


@pytest.mark.parametrize("size", [100, 9 << 20], ids=["small", "past-the-parallel-frame"])
def test_what_was_received_is_in_the_file_once_flushed_before_any_close(
        tmp_path: Path, size: int) -> None:
    # The driver flushes when the pipe is empty: a runner SIGKILLed then (no close, no
    # frame end) leaves every byte it had received readable.
    keeper = StreamKeeper(tmp_path / "s.zst")
    line = b'{"k":"' + b"x" * 90 + b'"}\n'
    count = size // len(line) + 1
    for _ in range(count):
        keeper.write(line)
    keeper.flush()
    keeper.flush()  # nothing pending: no empty block
    (tmp_path / "killed.zst").write_bytes((tmp_path / "s.zst").read_bytes())
    assert list(stream_lines(tmp_path / "killed.zst")) == [(line[:-1], True)] * count
    keeper.close()


def test_the_kept_stream_is_not_readable_by_other_users(tmp_path: Path) -> None:
    keeper = StreamKeeper(tmp_path / "s.zst")
    keeper.close()
    assert (tmp_path / "s.zst").stat().st_mode & 0o7777 == 0o640 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "s.zst").write_bytes(b"earlier")
    with pytest.raises(FileExistsError):
        StreamKeeper(tmp_path / "s.zst")


def test_a_large_stream_goes_on_in_a_parallel_frame_and_reads_back_whole(
    tmp_path: Path,
) -> None:
    """Past LARGE_STREAM_BYTES the first frame ends and zstd's workers compress a second
    one; every reader takes the two frames as one stream, the zstd command line too."""
    rng = random.Random(3)
    lines = [b'{"n":%d,"t":"%s"}\n' % (i, bytes(rng.choices(b"abcdefgh ", k=rng.randint(1, 9000))))
             for i in range(4000)]
    received = b"".join(lines)
    assert len(received) > 2 * _streams.LARGE_STREAM_BYTES
    keeper = StreamKeeper(tmp_path / "s.zst")
    for start in range(0, len(received), 100_000):
        keeper.write(received[start:start + 100_000])
    assert keeper._parallel
    keeper.close()
    with (tmp_path / "s.zst").open("rb") as fp:
        reader = zstandard.ZstdDecompressor().stream_reader(fp, read_across_frames=True)
        assert reader.read() == received
    assert [line for line, ended in stream_lines(tmp_path / "s.zst")] == [
        line[:-1] for line in lines]
    if shutil.which("zstd"):
        assert subprocess.run(["zstd", "-dc", str(tmp_path / "s.zst")], capture_output=True,
                              check=True).stdout == received


def test_compressors_are_reused_and_each_stream_is_a_fresh_frame(tmp_path: Path) -> None:
    first = StreamKeeper(tmp_path / "a.zst")
    first.write(b"first\n")
    first.close()
    second = StreamKeeper(tmp_path / "b.zst")
    assert second._compressor is first._compressor  # given back, taken again
    second.write(b"second\n")
    second.close()
    assert [line for line, _ in stream_lines(tmp_path / "b.zst")] == [b"second"]
    assert zstandard.ZstdDecompressor().decompress((tmp_path / "b.zst").read_bytes(),
                                                   max_output_size=100) == b"second\n"


def test_the_pool_keeps_at_most_its_bound_of_each_kind_and_hands_them_out_again() -> None:
    pool = CompressorPool(keep=2)
    taken = [pool.take(False) for _ in range(3)]
    assert len({id(c) for c in taken}) == 3  # none idle yet: each is new
    for compressor in taken:
        pool.give_back(compressor, False)
    assert (pool.idle(False), pool.idle(True)) == (2, 0)  # the third is dropped
    assert pool.take(False) in taken[:2]
    assert pool.take(True) not in taken  # the parallel kind has its own
