"""The kept stream: exactly the bytes received, read back line by line, cut lines kept as cut."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from campaign.supervisor._streams import StreamKeeper, stream_lines


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


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "s.zst").write_bytes(b"earlier")
    with pytest.raises(FileExistsError):
        StreamKeeper(tmp_path / "s.zst")
