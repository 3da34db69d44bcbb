"""Read a harness child's stdout pipe line by line, with its limits, and always reap it.

The recorder's only process code, and it spawns nothing itself: the child
comes from `sandbox` (`sandbox.open_confined` for a session, `sandbox.open_child`
for a plain one), which owns spawning, the lifeline, the reap and ``OSError``.
Rule sources: RC-01 (the transform reads the stdout pipe), BC-03 (line cap),
BC-13 (stderr drained concurrently), docs/bench.md (memory) (pull-based
reading), docs/confinement.md "Limits" (the stdout bound, ``--max-stdout``, and the same
bound on stderr), docs/recorder.md "Sharing the event loop" (the yields, the line bound).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, final

import anyio

from sandbox import DRAIN_AFTER_EXIT_S as DRAIN_AFTER_EXIT_S
from sandbox import GRACE_S as GRACE_S
from sandbox import REAP_TIMEOUT_S as REAP_TIMEOUT_S
from sandbox import Child

from ._atomic import write_atomic
from ._errors import LineTooLong, StdoutTooLarge
from ._lines import READ_CHUNK_BYTES, LineReader
from ._vocab import DriveEnd

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "DRAIN_AFTER_EXIT_S",
    "GRACE_S",
    "POST_RESULT_GRACE_S",
    "REAP_TIMEOUT_S",
    "STDERR_TAIL_BYTES",
    "YIELD_AFTER_S",
    "DriveEnd",
    "DriveResult",
    "drive_child",
]

STDERR_TAIL_BYTES: Final = 64 * 1024
"""The last bytes of stderr kept with the session (docs/batch.md layout, ``stderr.tail``)."""
POST_RESULT_GRACE_S: Final = 30.0
"""Seconds a harness may stay silent and alive after a result line before the driver ends
it (docs/batch.md "Session states", ``--post-result-grace``): a harness that hangs after its
result is a known CLI fault, and background subagents print within seconds."""

YIELD_AFTER_S: Final = 0.002
"""Seconds of line handling after which the pump yields to the event loop, within one read
(docs/recorder.md "Sharing the event loop"): the sandbox's limit watch, the egress proxy,
the scripted provider and every other session of the runner share the loop, and one read
of the pipe (1 MiB) may hold a million lines."""

LineSink: TypeAlias = Callable[[bytes], bool | None]
"""Takes one stdout line; returns True when it was a result line (the post-result grace
starts), anything falsy otherwise. The driver knows nothing of the lines' format."""
ChunkSink: TypeAlias = Callable[[bytes], None]
"""Takes every stdout chunk as it was read from the pipe, before it is split into lines (the
kept stream: exactly the bytes received, cut lines and over-long lines included)."""
_PumpEnd = Literal["eof", "watchdog", "line-too-long", "consumer-failed", "drain-cut",
                   "stdout-limit", "line-limit"]
_LIMIT_ENDS: Final = ("stdout-limit", "stderr-limit", "line-limit")
"""The ends of a bound passed: the child is killed at once, and no tail is given."""


@dataclass(frozen=True, slots=True)
class DriveResult:
    """What `drive_child` observed of one harness child. Facts, no verdict."""

    exit_status: int | None
    """The Popen return code: >= 0 exit status, negative = killed by that signal.
    None only when the child could not be reaped (logged)."""
    end: DriveEnd
    """``exited`` (by itself), ``timed-out`` (wall limit), ``watchdog`` (no stdout byte
    for ``watchdog_s``), ``post-result-grace`` (after a result line, neither a stdout byte
    nor the exit for ``post_result_grace_s``), ``line-too-long``, ``stdout-limit`` (it
    printed more than ``max_stdout_bytes``), ``stderr-limit`` (more than
    ``max_stderr_bytes`` on stderr) or ``line-limit`` (more than ``max_lines`` lines); in
    all but ``exited`` the driver stopped it."""
    tail: bytes | None
    """The final stdout fragment that had no newline (a cut line), None when the
    stream ended on a newline or with nothing; None for ``line-too-long`` and the
    ``*-limit`` ends."""
    lines: int
    """Lines handed to ``on_line`` (for ``line-limit``: ``max_lines``)."""
    stdout_bytes: int
    """Bytes read from stdout (for ``stdout-limit``: at most the bound plus one read,
    `READ_CHUNK_BYTES`)."""
    stderr_bytes: int
    """Bytes read from stderr (only the last `STDERR_TAIL_BYTES` are kept; for
    ``stderr-limit``: at most the bound plus one read)."""
    duration_s: float
    """Seconds from spawn to reaped (monotonic clock)."""
    line_too_long: LineTooLong | None
    """The reader's error when ``end == "line-too-long"``, else None."""
    stderr_end: bytes = b""
    """The last `STDERR_TAIL_BYTES` of stderr (what ``stderr_tail`` receives)."""


class _Silence(Exception):
    """No stdout byte arrived within the watchdog period."""


class _DrainOver(Exception):
    """The child has exited and the post-exit drain of stdout is over."""


async def drive_child(
    child: Child,
    *,
    on_line: LineSink,
    stderr_tail: Path | None,
    wall_limit_s: float,
    watchdog_s: float,
    post_result_grace_s: float = POST_RESULT_GRACE_S,
    grace_s: float = GRACE_S,
    on_chunk: ChunkSink | None = None,
    on_idle: Callable[[], None] | None = None,
    max_stdout_bytes: int | None = None,
    max_stderr_bytes: int | None = None,
    max_lines: int | None = None,
    drain_after_exit_s: float = DRAIN_AFTER_EXIT_S,
) -> DriveResult:
    """Read ``child``'s stdout to its end, handing each line to ``on_line``; reap it.

    ``child`` comes from `sandbox` with both pipes (``stdout="pipe"``,
    ``stderr="pipe"``). stdout is read only when the `LineReader` needs bytes,
    so the child blocks on a full pipe while ``on_line`` works; stderr is
    drained concurrently into a ring of the last `STDERR_TAIL_BYTES`, written
    to ``stderr_tail`` at the end (BC-13). After the child exits, everything
    it wrote is still read, and stdout is read on to EOF for at most
    ``drain_after_exit_s`` seconds (`DRAIN_AFTER_EXIT_S` unless given: a descendant
    may hold it open), and stderr as long. The child is
    always reaped (`sandbox.Child.reap`: SIGTERM to it and its group,
    ``grace_s``, SIGKILL, bounded); the caller still closes it (its context does).

    **Post-result grace** (docs/batch.md "Session states"): once ``on_line`` has
    returned True for a line (a result line), the child must print or exit
    within ``post_result_grace_s`` seconds (time in ``on_line`` not counted);
    every stdout byte after it (background subagents, a second result)
    restarts that wait. Otherwise the driver ends the child
    (``end="post-result-grace"``) and the caller decides the session from what
    it printed. The grace replaces the watchdog from then on, when shorter.

    **Stdout bound** (docs/confinement.md "Limits", ``--max-stdout``): the bytes
    read from the pipe are counted as they are read, before ``on_chunk`` or any
    line handling; once they pass ``max_stdout_bytes`` the driver stops reading
    and kills the child at once (SIGKILL, no grace: it is a limit passed, not an
    ending), ``end="stdout-limit"``. ``on_chunk`` has then received at most the
    bound plus one read; ``on_line`` nothing of the read that passed it.

    **Stderr bound** (the same page): the bytes read from stderr are counted as they
    are read; past ``max_stderr_bytes`` the drain stops reading and the child is
    killed at once, ``end="stderr-limit"``.

    **Line bound** (docs/recorder.md "Sharing the event loop"): the line that would be
    line ``max_lines + 1`` is not handed to ``on_line``; the child is killed at once,
    ``end="line-limit"``.

    **Sharing the loop:** the pump yields to the event loop (a checkpoint) whenever
    `YIELD_AFTER_S` seconds of line handling have passed since it last did, so a read
    full of tiny lines holds the loop at most about that long plus one line's handling.

    **Cancellation:** the child is reaped as above (shielded, bounded), the
    stderr tail written, then the cancellation propagates.

    Args:
        child: The running child, not yet read from.
        on_line: Called with each newline-terminated stdout line (bytes, newline
            removed), synchronously, in order; returns True for a result line
            (`LineSink`).
        stderr_tail: File that receives the last `STDERR_TAIL_BYTES` of stderr;
            None keeps them only in memory.
        wall_limit_s: Seconds from the spawn after which the child is stopped
            (``end="timed-out"``).
        watchdog_s: Seconds without any stdout byte (time spent in ``on_line``
            not counted) after which the child is stopped (``end="watchdog"``).
        post_result_grace_s: Seconds, after a result line, without a stdout byte
            or the exit after which the child is stopped (``end="post-result-grace"``).
        grace_s: Seconds between SIGTERM and SIGKILL.
        on_chunk: Called with every chunk read from stdout, in order, before it is
            split into lines (`ChunkSink`); None keeps nothing.
        on_idle: Called when stdout's pipe is empty, before the driver waits on it
            (the kept stream flushes what it holds then, so a runner killed while a
            session is quiet loses none of what it received).
        max_stdout_bytes: Most bytes the child may print on stdout (None: no bound).
        max_stderr_bytes: Most bytes the child may print on stderr (None: no bound).
        max_lines: Most stdout lines handed to ``on_line`` (None: no bound).

    Returns:
        The observed facts. Exit statuses, signals, limits and an over-long line
        are data here, not exceptions.

    Raises:
        OSError: ``stderr_tail`` could not be written (its directory is the
            caller's); the child was reaped first.
        Exception: whatever ``on_line`` raised, after the child was reaped.
    """
    session = _Session(child, on_line, watchdog_s=watchdog_s,
                       post_result_grace_s=post_result_grace_s, on_chunk=on_chunk,
                       on_idle=on_idle, max_stdout_bytes=max_stdout_bytes,
                       max_stderr_bytes=max_stderr_bytes, max_lines=max_lines,
                       drain_after_exit_s=drain_after_exit_s)  # fmt: skip
    try:
        end = await session.run(wall_limit_s=wall_limit_s, grace_s=grace_s)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await child.reap(grace_s)
            if stderr_tail is not None:
                with contextlib.suppress(OSError):  # never mask the exception in flight
                    await anyio.to_thread.run_sync(write_atomic, stderr_tail,
                                                   bytes(session.stderr_ring))
        raise
    if stderr_tail is not None:
        await anyio.to_thread.run_sync(write_atomic, stderr_tail, bytes(session.stderr_ring))
    if session.failure is not None:
        raise session.failure
    return DriveResult(
        exit_status=child.returncode,
        end=end,
        tail=None if end == "line-too-long" or end in _LIMIT_ENDS else session.stdout_tail(),
        lines=session.handed,
        stdout_bytes=session.reader.bytes_received,
        stderr_bytes=session.stderr_bytes,
        duration_s=time.monotonic() - child.started,
        line_too_long=session.too_long,
        stderr_end=bytes(session.stderr_ring),
    )


@final
class _Session:
    """The concurrent parts of one drive: stdout pump, stderr drain, exit watch."""

    def __init__(
        self, child: Child, on_line: LineSink, *, watchdog_s: float, post_result_grace_s: float,
        on_chunk: ChunkSink | None = None, on_idle: Callable[[], None] | None = None,
        max_stdout_bytes: int | None = None, max_stderr_bytes: int | None = None,
        max_lines: int | None = None, drain_after_exit_s: float = DRAIN_AFTER_EXIT_S,
    ) -> None:
        self._child = child
        self._drain_s = drain_after_exit_s
        self._on_line = on_line
        self._on_chunk = on_chunk
        self._on_idle = on_idle
        self._watchdog_s = watchdog_s
        self._grace_s = post_result_grace_s
        self._result_seen = False  # a result line arrived: the grace bounds silence from now
        self.reader = LineReader(self._receive_stdout, max_stream_bytes=max_stdout_bytes)
        self._max_stderr = max_stderr_bytes
        self._max_lines = max_lines
        self.handed = 0  # lines handed to on_line
        self.stderr_ring = bytearray()
        self.stderr_bytes = 0
        self._stderr_over = False  # the drain saw more than max_stderr_bytes
        self._main: anyio.CancelScope | None = None  # the supervision the drain may end
        self.failure: Exception | None = None
        self.too_long: LineTooLong | None = None
        self._stderr_eof = anyio.Event()
        self._drain_deadline = math.inf  # set when the child exits
        self._owed_bytes = 0  # stdout bytes the child had written when it exited
        self._waiting: anyio.CancelScope | None = None  # the current wait for stdout bytes

    async def run(self, *, wall_limit_s: float, grace_s: float) -> DriveEnd:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._drain_stderr)
            watch = anyio.CancelScope()
            tg.start_soon(self._watch_exit, watch)
            end: DriveEnd = "stderr-limit"  # if the drain ends the supervision
            with anyio.CancelScope() as self._main:
                end = await self._supervise(wall_limit_s)
            if self._stderr_over:
                end = "stderr-limit"
            watch.cancel()
            # A limit passed ends the child at once, as the sandbox's watch ends a session.
            await self._child.reap(0.0 if end in _LIMIT_ENDS else grace_s)
            with anyio.move_on_after(self._drain_s):  # stderr may also be held open
                await self._stderr_eof.wait()
            tg.cancel_scope.cancel()
        return end

    def stdout_tail(self) -> bytes | None:
        if self.reader.tail is not None:
            return self.reader.tail
        return self.reader.pending or None  # stopped before EOF: the cut line so far

    async def _supervise(self, wall_limit_s: float) -> DriveEnd:
        with anyio.move_on_after(wall_limit_s):
            return await self._until_exit()
        return "exited" if self._child.has_exited() else "timed-out"

    def _silence_bound(self) -> tuple[float, DriveEnd]:
        """Seconds of silence allowed now, and the end that names their passing."""
        if self._result_seen and self._grace_s <= self._watchdog_s:
            return self._grace_s, "post-result-grace"
        return self._watchdog_s, "watchdog"

    async def _until_exit(self) -> DriveEnd:
        pumped = await self._pump()
        if pumped == "line-too-long":
            return "line-too-long"
        if pumped in ("stdout-limit", "line-limit"):
            return pumped
        if pumped == "eof":
            with anyio.move_on_after(self._silence_bound()[0]):  # stdout closed, it lingers
                await self._child.wait_exit()
        if self._child.has_exited() or pumped == "consumer-failed":
            return "exited"
        return self._silence_bound()[1]

    async def _pump(self) -> _PumpEnd:
        clock, bound = time.perf_counter, self._max_lines
        yield_at = clock() + YIELD_AFTER_S
        try:
            async for line in self.reader:
                if bound is not None and self.handed >= bound:
                    return "line-limit"
                self.handed += 1
                try:
                    if self._on_line(line):
                        self._result_seen = True
                except Exception as exc:  # re-raised by drive_child once the child is reaped
                    self.failure = exc
                    return "consumer-failed"
                # Others share the loop, and a read may hold a million lines: the clock is
                # read every 16th line (a line's handling is a microsecond or more).
                if not self.handed & 15 and clock() >= yield_at:
                    await anyio.lowlevel.checkpoint()
                    yield_at = clock() + YIELD_AFTER_S
        except LineTooLong as exc:
            self.too_long = exc
            return "line-too-long"
        except StdoutTooLarge:
            return "stdout-limit"
        except _Silence:
            return "watchdog"
        except _DrainOver:
            return "drain-cut"
        return "eof"

    async def _receive_stdout(self) -> bytes:
        """Next stdout chunk, b"" at EOF. Waits are bounded; bytes in the pipe are always taken.

        Raises _Silence after the silence bound (`_silence_bound`), and _DrainOver once the
        child has exited, `DRAIN_AFTER_EXIT_S` have passed and everything it
        wrote before exiting has been read (what remains is a descendant's).
        """
        while True:
            await anyio.lowlevel.checkpoint()  # the wall limit and outer cancellation land here
            if anyio.current_time() >= self._drain_deadline and (
                self.reader.bytes_received >= self._owed_bytes
            ):
                raise _DrainOver
            chunk = self._child.try_read("stdout", READ_CHUNK_BYTES)
            if chunk is not None:
                if chunk and self._on_chunk is not None:
                    self._on_chunk(chunk)
                return chunk
            if self._on_idle is not None:
                self._on_idle()

            silence_s = self._silence_bound()[0]
            deadline = min(anyio.current_time() + silence_s, self._drain_deadline)
            with anyio.CancelScope(deadline=deadline) as waiting:
                self._waiting = waiting  # the exit watcher may bring its deadline forward
                await self._child.wait_readable("stdout")
            self._waiting = None
            if waiting.cancelled_caught and anyio.current_time() < self._drain_deadline:
                raise _Silence

    async def _drain_stderr(self) -> None:
        ring, bound = self.stderr_ring, self._max_stderr
        while chunk := await self._child.read("stderr"):
            self.stderr_bytes += len(chunk)
            ring += chunk
            if len(ring) > STDERR_TAIL_BYTES:
                del ring[: len(ring) - STDERR_TAIL_BYTES]
            if bound is not None and self.stderr_bytes > bound:
                self._stderr_over = True  # the bound passed: read no more, end the session
                if self._main is not None:
                    self._main.cancel()
                break
        self._stderr_eof.set()

    async def _watch_exit(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self._child.wait_exit()
            if not self._child.is_open("stdout"):  # the pump is over and reaping began
                return
            # Whatever the child wrote before it exited is in the pipe now: owed,
            # never cut by the drain limit (a slow on_line must not lose it).
            self._owed_bytes = self.reader.bytes_received + self._child.pending("stdout")
            self._drain_deadline = anyio.current_time() + self._drain_s
            if self._waiting is not None:
                self._waiting.deadline = min(self._waiting.deadline, self._drain_deadline)

