"""The kept stream of an attempt: stdout exactly as received, compressed while it is read.

Per attempt the runner keeps ``attempt-<n>/stdout.jsonl.zst`` in the session's
directory (docs/batch.md), written from the pipe by the runner (the session
has no handle on it: the session directory is not bound into the sandbox),
so ``show`` and ``retranscribe`` can look at what the harness printed without
trusting a file the session could write. zstd (level `LEVEL`, with a
checksum) costs little next to reading the pipe; a stream cut by a crash is
read back as far as it goes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO, Final

import zstandard

from recorder._lines import MAX_LINE_BYTES

if TYPE_CHECKING:
    from pathlib import Path

STREAM_NAME: Final = "stdout.jsonl.zst"
FINAL_TEXT_NAME: Final = "final.txt"
LEVEL: Final = 3
"""zstd's default level: several hundred MB/s on one core, about 10x smaller for stream-json
(on the large-file stream of bench/stream.py levels 1 to 3 and the fast levels all run at
about 500 MB/s a core: the literals' entropy coding is the cost, so a lower level buys
nothing)."""
THREADS: Final = 2
"""zstd's own worker threads for the kept stream: the compression runs beside the reader
instead of on the event loop's thread, which otherwise spends more time compressing than
parsing (bench/stream.py). Two, because one worker alone compresses slower than the reader
reads; they are zstd's threads (no GIL), idle between chunks."""
JOB_BYTES: Final = 1 << 20
"""Input per zstd job, in bytes (the least zstd takes): with the default (four windows) the
workers' buffers add tens of MiB to the runner's peak per session; 1 MiB adds about 3."""
_READ_BYTES: Final = 1 << 20


class StreamKeeper:
    """Compresses one attempt's stdout chunks into a file as they arrive.

    Args:
        path: The file to create (its directory must exist).

    Raises:
        OSError: the file cannot be created (the host refused the write).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bytes_in = 0
        """Stdout bytes received so far."""
        self._file: BinaryIO = path.open("xb")
        params = zstandard.ZstdCompressionParameters.from_level(
            LEVEL, threads=THREADS, job_size=JOB_BYTES, write_checksum=1)
        self._writer = zstandard.ZstdCompressor(compression_params=params).stream_writer(
            self._file, closefd=False)
        self._closed = False

    def write(self, chunk: bytes) -> None:
        """Take the next stdout chunk (the driver's `ChunkSink`).

        Raises:
            OSError: the host refused the write (disk full).
        """
        self.bytes_in += len(chunk)
        self._writer.write(chunk)

    def close(self) -> int:
        """End the zstd frame, fsync and close; idempotent. Returns the file's size in bytes.

        Raises:
            OSError: the host refused the write.
        """
        if not self._closed:
            self._closed = True
            try:
                self._writer.flush(zstandard.FLUSH_FRAME)
                self._file.flush()
                os.fsync(self._file.fileno())
            finally:
                self._writer.close()  # type: ignore[no-untyped-call]
                self._file.close()
        return self.path.stat().st_size


def stream_lines(path: Path) -> Iterator[tuple[bytes, bool]]:
    """The lines of a kept stream: ``(line without its newline, ended_by_newline)``, in order.

    Only the last item can have ``ended_by_newline`` False (a cut last line).
    A line longer than `MAX_LINE_BYTES` is yielded cut at that many bytes (as
    the reader refused it). A frame cut by a crash yields what it holds.

    Raises:
        OSError: the file cannot be read.
    """
    pending = bytearray()
    with path.open("rb") as fp:
        reader = zstandard.ZstdDecompressor().stream_reader(fp, read_across_frames=True)
        while True:
            try:
                chunk = reader.read(_READ_BYTES)
            except zstandard.ZstdError:
                chunk = b""  # a frame cut by a crash: what came before is what there is
            if not chunk:
                break
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", start)) >= 0:
                yield bytes(pending[start:end]), True
                start = end + 1
            del pending[:start]
            if len(pending) > MAX_LINE_BYTES:
                yield bytes(pending[:MAX_LINE_BYTES]), False
                return
    if pending:
        yield bytes(pending), False
