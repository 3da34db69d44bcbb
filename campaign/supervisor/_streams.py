"""The kept stream of an attempt: stdout exactly as received, compressed while it is read.

Per attempt the runner keeps ``attempt-<n>/stdout.jsonl.zst`` in the session's
directory (docs/batch.md), written from the pipe by the runner (the session
has no handle on it: the session directory is not bound into the sandbox),
so ``show`` and ``retranscribe`` can look at what the harness printed without
trusting a file the session could write. zstd (level `LEVEL`, with a
checksum) costs little next to reading the pipe. What the runner has received
is in the file (the host's page cache) whenever the driver waits on an empty
pipe (`StreamKeeper.flush`), so a runner killed mid-session leaves the stream
as far as it was read, and a stream cut by a crash is read back as far as it
goes. The file is 0640, like the batch's other files.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO, Final

import zstandard

from recorder import MAX_LINE_BYTES

if TYPE_CHECKING:
    from pathlib import Path

STREAM_NAME: Final = "stdout.jsonl.zst"
FILE_MODE: Final = 0o640
FINAL_TEXT_NAME: Final = "final.txt"
LEVEL: Final = 3
"""zstd's default level: several hundred MB/s on one core, about 10x smaller for stream-json
(on the large-file stream of bench/stream.py levels 1 to 3 and the fast levels all run at
about 500 MB/s a core, and so does level 1 with its literals left uncoded, ``zstd -b1
--no-compress-literals``: prose's many short matches are the cost, so a lower level buys
nothing)."""
THREADS: Final = 2
"""zstd's own worker threads for a large stream (past `LARGE_STREAM_BYTES`): its compression
runs beside the reader instead of on the event loop's thread, which otherwise spends more
time compressing than parsing (bench/stream.py). Two, because one worker alone compresses
slower than the reader reads; they are zstd's threads (no GIL)."""
JOB_BYTES: Final = 1 << 20
"""Input per zstd job of a large stream, in bytes (the least zstd takes): with the default
(four windows) the workers' buffers add tens of MiB to the runner's peak per session."""
LARGE_STREAM_BYTES: Final = 8 << 20
"""Bytes after which a kept stream ends its first zstd frame and goes on in a second one,
compressed by `THREADS` workers. Most sessions print far less and never start a thread
(threads per attempt cost a batch of short sessions CPU and memory: bench/batch.py); a
file of two frames is one zstd stream to every reader (`stream_lines`, ``zstd -d``)."""
_READ_BYTES: Final = 1 << 20
IDLE_COMPRESSORS: Final = 64
"""Most zstd compressors of each kind kept idle for the next attempt."""


class CompressorPool:
    """Idle zstd compressors kept for the next attempt: at most `IDLE_COMPRESSORS` of each kind.

    A new context per attempt allocated and freed megabytes each time, and the runner's heap
    grew with the number of sessions (peak RSS 93 MiB after 100 sessions of a batch, 139
    after 1,000: bench/batch.py); reused, the contexts number the streams ever kept at once.

    One pool per process (`COMPRESSORS`), on purpose: what it bounds is the process's heap,
    which every batch and loop of the process shares, and a compressor holds nothing of an
    attempt once its frame has ended (each stream starts a new frame), so handing one from
    one batch's keeper to another's is correct. Thread-safe: keepers take and give back from
    the loop's thread and from worker threads (`StreamKeeper.close` runs in one), under one
    lock.
    """

    def __init__(self, keep: int = IDLE_COMPRESSORS) -> None:
        self.keep = keep
        self._idle: dict[bool, list[zstandard.ZstdCompressor]] = {False: [], True: []}
        self._lock = threading.Lock()

    def take(self, parallel: bool) -> zstandard.ZstdCompressor:
        """An idle compressor, or a new one (``parallel``: with `THREADS` workers)."""
        with self._lock:
            if self._idle[parallel]:
                return self._idle[parallel].pop()
        params = zstandard.ZstdCompressionParameters.from_level(
            LEVEL, threads=THREADS if parallel else 0, job_size=JOB_BYTES if parallel else 0,
            write_checksum=1)  # fmt: skip
        return zstandard.ZstdCompressor(compression_params=params)

    def give_back(self, compressor: zstandard.ZstdCompressor, parallel: bool) -> None:
        """Keep ``compressor`` (its frame ended whole) for a later `take`, unless the pool is
        full; then it is dropped."""
        with self._lock:
            if len(self._idle[parallel]) < self.keep:
                self._idle[parallel].append(compressor)

    def idle(self, parallel: bool) -> int:
        """How many compressors of the kind wait to be reused."""
        with self._lock:
            return len(self._idle[parallel])


COMPRESSORS: Final = CompressorPool()
"""The process's pool (`CompressorPool` says why one per process)."""


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
        self._file: BinaryIO = os.fdopen(
            os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE), "wb")
        self._pending = 0  # bytes taken since the last flush
        self._parallel = False
        self._compressor = COMPRESSORS.take(self._parallel)
        self._writer = self._compressor.stream_writer(self._file, closefd=False)
        self._closed = False

    def write(self, chunk: bytes) -> None:
        """Take the next stdout chunk (the driver's `ChunkSink`).

        Raises:
            OSError: the host refused the write (disk full).
        """
        self.bytes_in += len(chunk)
        self._pending += len(chunk)
        self._writer.write(chunk)
        if not self._parallel and self.bytes_in >= LARGE_STREAM_BYTES:
            self._go_parallel()

    def flush(self) -> None:
        """Put what was taken since the last flush into the file: a zstd block ends and
        the file's buffer is written (no fsync: a killed runner's writes survive it, the
        host's crash is `close`'s). The driver calls it when the pipe is empty (its
        ``on_idle``); nothing pending costs nothing.

        Raises:
            OSError: the host refused the write (disk full).
        """
        if self._pending and not self._closed:
            self._pending = 0
            self._writer.flush(zstandard.FLUSH_BLOCK)
            self._file.flush()

    def _go_parallel(self) -> None:
        """End the first frame; the rest of the stream goes to a frame of its own, compressed
        by zstd's workers (`LARGE_STREAM_BYTES`)."""
        self._writer.flush(zstandard.FLUSH_FRAME)
        self._writer.close()  # type: ignore[no-untyped-call]
        COMPRESSORS.give_back(self._compressor, self._parallel)
        self._parallel = True
        self._compressor = COMPRESSORS.take(self._parallel)
        self._writer = self._compressor.stream_writer(self._file, closefd=False)

    def close(self) -> int:
        """End the zstd frame, fsync and close; idempotent. Returns the file's size in bytes.

        Raises:
            OSError: the host refused the write.
        """
        if not self._closed:
            self._closed = True
            ended = False
            try:
                self._writer.flush(zstandard.FLUSH_FRAME)
                self._file.flush()
                os.fsync(self._file.fileno())
                ended = True
            finally:
                self._writer.close()  # type: ignore[no-untyped-call]
                self._file.close()
            if ended:  # a compressor whose frame ended whole is reused (a fresh frame next)
                COMPRESSORS.give_back(self._compressor, self._parallel)
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
