"""Start the harness, read its stdout pipe line by line, and always reap it.

The only module of the recorder that touches processes, pipes and ``OSError``.
Rule sources: RC-01 (the transform reads the stdout pipe), RC-03 (bwrap gets
an empty environment; secrets travel on ``--args FD``), DESIGN.md "spawned
from a thread that outlives it" (BC-17), BC-03 (line cap), BC-13 (stderr
drained concurrently), DESIGN.md "Targets: memory" (pull-based reading).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, final

import anyio

from ._errors import HarnessSpawnFailed, LineTooLong
from ._lines import READ_CHUNK_BYTES, LineReader

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

__all__ = [
    "DRAIN_AFTER_EXIT_S",
    "GRACE_S",
    "MAX_ARGS_PAYLOAD_BYTES",
    "REAP_TIMEOUT_S",
    "STDERR_TAIL_BYTES",
    "DriveEnd",
    "DriveResult",
    "drive_harness",
    "kill_running_now",
]

logger = logging.getLogger(__name__)

GRACE_S: Final = 5.0
"""Seconds between SIGTERM and SIGKILL. bwrap forwards SIGTERM to the harness,
which needs a moment to flush; tests shrink it with ``grace_s``."""
REAP_TIMEOUT_S: Final = 30.0
"""Upper bound, in seconds, on waiting after SIGKILL: a lost exit must not hang teardown."""
DRAIN_AFTER_EXIT_S: Final = 5.0
"""Seconds after the child's exit during which the driver still waits for stdout
bytes: a descendant that inherited the pipe may hold it open for ever. What the
child itself wrote is in the pipe when it exits and is always read, however long
``on_line`` takes."""
STDERR_TAIL_BYTES: Final = 64 * 1024
"""The last bytes of stderr kept with the session (DESIGN.md, batch layout ``stderr.tail``)."""
MAX_ARGS_PAYLOAD_BYTES: Final = 60 * 1024
"""Largest ``--args`` payload, in bytes. It is written whole into a pipe before the
child starts, so it must fit a pipe buffer (64 KiB on Linux, pipe(7))."""
_EXIT_POLL_S: Final = 0.05
"""Polling period, in seconds, for the child's exit when pidfd_open(2) is unavailable."""

DriveEnd = Literal["exited", "timed-out", "watchdog", "line-too-long"]
"""How a drive ended: the child exited by itself, or the driver stopped it for a reason."""
_PumpEnd = Literal["eof", "watchdog", "line-too-long", "consumer-failed", "drain-cut"]


@dataclass(frozen=True, slots=True)
class DriveResult:
    """What `drive_harness` observed of one harness child. Facts, no verdict."""

    exit_status: int | None
    """The Popen return code: >= 0 exit status, negative = killed by that signal.
    None only when the child could not be reaped (logged)."""
    end: DriveEnd
    """``exited`` (by itself), ``timed-out`` (wall limit), ``watchdog`` (no stdout byte
    for ``watchdog_s``) or ``line-too-long``; in the last three the driver stopped it."""
    tail: bytes | None
    """The final stdout fragment that had no newline (a cut line), None when the
    stream ended on a newline or with nothing; None for ``line-too-long``."""
    lines: int
    """Lines handed to ``on_line``."""
    stdout_bytes: int
    """Bytes read from stdout."""
    stderr_bytes: int
    """Bytes read from stderr (only the last `STDERR_TAIL_BYTES` are kept)."""
    duration_s: float
    """Seconds from spawn to reaped (monotonic clock)."""
    line_too_long: LineTooLong | None
    """The reader's error when ``end == "line-too-long"``, else None."""


_RUNNING: set[_Child] = set()
"""Every child spawned here and not yet reaped (for `kill_running_now`)."""


def kill_running_now() -> int:
    """SIGKILL every harness child of this process that is not reaped yet, and its group.

    For a runner told twice to stop: the bounded grace of the reap is not
    waited for. Each drive still reaps its own child. Returns how many were signalled.
    """
    for child in list(_RUNNING):
        child.kill_now()
    return len(_RUNNING)


class _Silence(Exception):
    """No stdout byte arrived within the watchdog period."""


class _DrainOver(Exception):
    """The child has exited and the post-exit drain of stdout is over."""


async def drive_harness(
    argv_for: Callable[[int | None], Sequence[str]],
    *,
    args_payload: bytes | None,
    on_line: Callable[[bytes], None],
    stderr_tail: Path,
    wall_limit_s: float,
    watchdog_s: float,
    grace_s: float = GRACE_S,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    lifeline: bool = False,
) -> DriveResult:
    """Run one harness child to its end, handing each stdout line to ``on_line``.

    The child is spawned with `subprocess.Popen` on the event loop's own thread:
    ``bwrap --die-with-parent`` arms PR_SET_PDEATHSIG, which follows the
    spawning *thread* (prctl(2)), and the loop thread outlives the child
    (``anyio.open_process`` on trio spawns in a worker thread that exits after
    10 s idle, killing the sandbox: BC-17). It gets ``stdin`` /dev/null (or the
    lifeline, below), its own session, no inherited fds, and exactly ``env``
    (empty by default: RC-03).

    **Lifeline:** with ``lifeline=True`` the child's stdin is the read end of
    a pipe whose write end only this process holds (close-on-exec, never
    passed to any child), closed here once the child is reaped. However the
    runner ends, SIGKILL included, the kernel closes it too, so a read of
    stdin inside returns end-of-file exactly when the runner has let go:
    `sandbox.session_init_command` kills the session's processes then, which
    closes the window in which bwrap's parent-death signal is not yet armed
    (issue 5, process containment). The child must not read stdin otherwise.

    stdout is read only when the `LineReader` needs bytes, so the child blocks
    on a full pipe while ``on_line`` works; stderr is drained concurrently into
    a ring of the last `STDERR_TAIL_BYTES`, written to ``stderr_tail`` at the
    end (BC-13). After the child exits, everything it wrote is still read, and
    stdout is read on to EOF for at most `DRAIN_AFTER_EXIT_S` seconds (a
    descendant may hold it open). The child is always reaped: SIGTERM to it and
    its process group, ``grace_s`` seconds, SIGKILL, at most `REAP_TIMEOUT_S`
    seconds of waiting; members of its process group that outlive it get
    SIGKILL (the unreaped zombie pins the group id until then).

    **Cancellation:** the child is reaped as above (shielded, bounded), the
    stderr tail written, then the cancellation propagates.

    Args:
        argv_for: Builds the command from the fd number carrying ``args_payload``
            in the child (bwrap's ``--args FD``), or from None without a payload.
        args_payload: Bytes for the child to read on that fd (at most
            `MAX_ARGS_PAYLOAD_BYTES`), or None for no fd.
        on_line: Called with each newline-terminated stdout line (bytes, newline
            removed), synchronously, in order.
        stderr_tail: File that receives the last `STDERR_TAIL_BYTES` of stderr.
        wall_limit_s: Seconds from spawn after which the child is stopped
            (``end="timed-out"``).
        watchdog_s: Seconds without any stdout byte (time spent in ``on_line``
            not counted) after which the child is stopped (``end="watchdog"``).
        grace_s: Seconds between SIGTERM and SIGKILL.
        env: The child's whole environment; None means empty.
        cwd: The child's working directory; None means the runner's.
        lifeline: Give the child the lifeline as stdin instead of /dev/null.

    Returns:
        The observed facts. Exit statuses, signals, limits and an over-long line
        are data here, not exceptions.

    Raises:
        ValueError: ``args_payload`` is over `MAX_ARGS_PAYLOAD_BYTES` or
            ``argv_for`` returned an empty command.
        HarnessSpawnFailed: the command could not be executed (nothing ran).
        OSError: ``stderr_tail`` could not be written (its directory is the
            caller's); the child was reaped first.
        Exception: whatever ``on_line`` raised, after the child was reaped.
    """
    if args_payload is not None and len(args_payload) > MAX_ARGS_PAYLOAD_BYTES:
        raise ValueError(
            f"args_payload is {len(args_payload)} bytes, over the "
            f"{MAX_ARGS_PAYLOAD_BYTES}-byte limit of one pipe buffer"
        )
    started = time.monotonic()
    child = _spawn(argv_for, args_payload=args_payload, env=env, cwd=cwd, lifeline=lifeline)
    session = _Session(child, on_line, watchdog_s=watchdog_s)
    try:
        end = await session.run(wall_limit_s=wall_limit_s, grace_s=grace_s)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await child.reap(grace_s)
            child.close()
            with contextlib.suppress(OSError):  # never mask the exception in flight
                await anyio.Path(stderr_tail).write_bytes(bytes(session.stderr_ring))
        raise
    child.close()  # run() has reaped the child
    await anyio.Path(stderr_tail).write_bytes(bytes(session.stderr_ring))
    if session.failure is not None:
        raise session.failure
    return DriveResult(
        exit_status=child.proc.returncode,
        end=end,
        tail=None if end == "line-too-long" else session.stdout_tail(),
        lines=session.reader.lines,
        stdout_bytes=session.reader.bytes_received,
        stderr_bytes=session.stderr_bytes,
        duration_s=time.monotonic() - started,
        line_too_long=session.too_long,
    )


def _spawn(
    argv_for: Callable[[int | None], Sequence[str]],
    *,
    args_payload: bytes | None,
    env: Mapping[str, str] | None,
    cwd: Path | None,
    lifeline: bool,
) -> _Child:
    """Popen the command on this (the event loop's) thread; translate spawn errors."""
    parent_copies: list[int] = []  # the child's ends: closed here once the child has them
    ours: list[int] = []  # our read ends: closed here only on failure
    try:
        args_fd: int | None = None
        if args_payload is not None:
            args_fd, args_w = os.pipe()
            parent_copies += (args_fd, args_w)
        argv = list(argv_for(args_fd))
        if not argv:
            raise ValueError("argv_for returned an empty command")
        if args_payload is not None:
            _write_payload(parent_copies[1], args_payload, argv[0])
        out_r, out_w = os.pipe()
        ours.append(out_r)
        parent_copies.append(out_w)
        err_r, err_w = os.pipe()
        ours.append(err_r)
        parent_copies.append(err_w)
        stdin: int = subprocess.DEVNULL
        if lifeline:  # os.pipe() ends are close-on-exec: only the child's stdin copy crosses
            stdin, life_w = os.pipe()
            parent_copies.append(stdin)
            ours.append(life_w)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=stdin,
                stdout=out_w,
                stderr=err_w,
                env=dict(env or {}),
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=() if args_fd is None else (args_fd,),
            )
        except OSError as exc:
            raise HarnessSpawnFailed(argv[0], str(exc)) from exc
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in parent_copies:
            os.close(fd)
    for fd in ours:
        os.set_blocking(fd, False)
    child = _Child(proc, stdout_fd=out_r, stderr_fd=err_r, pidfd=_open_pidfd(proc.pid),
                   lifeline_fd=ours[2] if lifeline else None)
    _RUNNING.add(child)
    return child


def _write_payload(fd: int, payload: bytes, executable: str) -> None:
    os.set_blocking(fd, False)  # never block the loop; an empty pipe takes 64 KiB at once
    view = memoryview(payload)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:  # BlockingIOError: the pipe is smaller than usual (pipe(7) limits)
        raise HarnessSpawnFailed(executable, f"cannot write the --args payload: {exc}") from exc


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd_open(2) here: poll instead
        return None


async def _read(fd: int) -> bytes:
    """One read of at most `READ_CHUNK_BYTES` from the non-blocking ``fd``; b"" at EOF."""
    while True:
        await anyio.wait_readable(fd)
        try:
            return os.read(fd, READ_CHUNK_BYTES)
        except BlockingIOError:
            continue


@final
class _Child:
    """A spawned harness: its Popen, our pipe ends (stdout, stderr, lifeline) and its pidfd."""

    def __init__(
        self, proc: subprocess.Popen[bytes], *, stdout_fd: int, stderr_fd: int, pidfd: int | None,
        lifeline_fd: int | None = None,
    ) -> None:
        self.proc = proc
        self._fds: dict[str, int | None] = {
            "stdout": stdout_fd, "stderr": stderr_fd, "pid": pidfd, "lifeline": lifeline_fd,
        }
        self._wait_lock = anyio.Lock()  # trio lets one task at a time wait on an fd
        self._exited = False
        self._reap_done = False

    def fd(self, name: Literal["stdout", "stderr"]) -> int:
        """Our read end of the child's ``name`` pipe (must still be open)."""
        fd = self._fds[name]
        if fd is None:
            raise RuntimeError(f"the harness's {name} pipe is already closed")
        return fd

    def is_open(self, name: Literal["stdout", "stderr"]) -> bool:
        return self._fds[name] is not None

    def has_exited(self) -> bool:
        """True once the child has exited; it is left a zombie until `reap`."""
        if not self._exited:
            # WNOWAIT: the unreaped zombie keeps its pid, hence its process group
            # id, from being reused until the group has been swept (waitid(2)).
            flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
            self._exited = os.waitid(os.P_PID, self.proc.pid, flags) is not None
        return self._exited

    async def wait_exit(self) -> None:
        """Return when the child has exited (without reaping it)."""
        async with self._wait_lock:
            pidfd = self._fds["pid"]
            while not self.has_exited():
                if pidfd is None:
                    await anyio.sleep(_EXIT_POLL_S)
                else:
                    await anyio.wait_readable(pidfd)  # readable once the process exits

    async def reap(self, grace_s: float) -> None:
        """Stop the child if it runs, sweep its process group, reap it. Shielded, bounded."""
        with anyio.CancelScope(shield=True):
            if self._reap_done:
                return
            self._reap_done = True
            # Nobody reads stdout any more: a child blocked writing it gets EPIPE.
            self._close("stdout")
            for sig, bound_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, REAP_TIMEOUT_S)):
                if self.has_exited():
                    break
                self._signal(sig)
                with anyio.move_on_after(bound_s):
                    await self.wait_exit()
            if not self.has_exited():
                logger.warning(
                    "harness pid %d not reaped %.0f s after SIGKILL", self.proc.pid, REAP_TIMEOUT_S
                )
                return
            _RUNNING.discard(self)
            # Members of its group that outlived it (e.g. holding stdout) go too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.poll()  # reaps: the child has exited (has_exited above)

    def kill_now(self) -> None:
        """SIGKILL the child and its group at once, unless it is already reaped."""
        if self.proc.returncode is None:  # not reaped: the pid is still this child's
            self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        # The child leads its own session and process group (start_new_session).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.proc.pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def _close(self, name: str) -> None:
        fd = self._fds[name]
        if fd is not None:
            self._fds[name] = None
            anyio.notify_closing(fd)
            os.close(fd)

    def close(self) -> None:
        """Close every fd we hold for the child; idempotent."""
        for name in self._fds:
            self._close(name)


@final
class _Session:
    """The concurrent parts of one drive: stdout pump, stderr drain, exit watch."""

    def __init__(
        self, child: _Child, on_line: Callable[[bytes], None], *, watchdog_s: float
    ) -> None:
        self._child = child
        self._on_line = on_line
        self._watchdog_s = watchdog_s
        self.reader = LineReader(self._receive_stdout)
        self.stderr_ring = bytearray()
        self.stderr_bytes = 0
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
            end = await self._supervise(wall_limit_s)
            watch.cancel()
            await self._child.reap(grace_s)
            with anyio.move_on_after(DRAIN_AFTER_EXIT_S):  # stderr may also be held open
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

    async def _until_exit(self) -> DriveEnd:
        pumped = await self._pump()
        if pumped == "line-too-long":
            return "line-too-long"
        if pumped == "eof":
            with anyio.move_on_after(self._watchdog_s):  # stdout closed, the child lingers
                await self._child.wait_exit()
        if self._child.has_exited() or pumped == "consumer-failed":
            return "exited"
        return "watchdog"

    async def _pump(self) -> _PumpEnd:
        try:
            async for line in self.reader:
                try:
                    self._on_line(line)
                except Exception as exc:  # re-raised by drive_harness once the child is reaped
                    self.failure = exc
                    return "consumer-failed"
        except LineTooLong as exc:
            self.too_long = exc
            return "line-too-long"
        except _Silence:
            return "watchdog"
        except _DrainOver:
            return "drain-cut"
        return "eof"

    async def _receive_stdout(self) -> bytes:
        """Next stdout chunk, b"" at EOF. Waits are bounded; bytes in the pipe are always taken.

        Raises _Silence after ``watchdog_s`` of waiting, and _DrainOver once the
        child has exited, `DRAIN_AFTER_EXIT_S` have passed and everything it
        wrote before exiting has been read (what remains is a descendant's).
        """
        fd = self._child.fd("stdout")
        while True:
            await anyio.lowlevel.checkpoint()  # the wall limit and outer cancellation land here
            if anyio.current_time() >= self._drain_deadline and (
                self.reader.bytes_received >= self._owed_bytes
            ):
                raise _DrainOver
            try:
                return os.read(fd, READ_CHUNK_BYTES)
            except BlockingIOError:
                pass
            deadline = min(anyio.current_time() + self._watchdog_s, self._drain_deadline)
            with anyio.CancelScope(deadline=deadline) as waiting:
                self._waiting = waiting  # the exit watcher may bring its deadline forward
                await anyio.wait_readable(fd)
            self._waiting = None
            if waiting.cancelled_caught and anyio.current_time() < self._drain_deadline:
                raise _Silence

    async def _drain_stderr(self) -> None:
        ring = self.stderr_ring
        while chunk := await _read(self._child.fd("stderr")):
            self.stderr_bytes += len(chunk)
            ring += chunk
            if len(ring) > STDERR_TAIL_BYTES:
                del ring[: len(ring) - STDERR_TAIL_BYTES]
        self._stderr_eof.set()

    async def _watch_exit(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self._child.wait_exit()
            if not self._child.is_open("stdout"):  # the pump is over and reaping began
                return
            # Whatever the child wrote before it exited is in the pipe now: owed,
            # never cut by the drain limit (a slow on_line must not lose it).
            self._owed_bytes = self.reader.bytes_received + _pipe_fill(self._child.fd("stdout"))
            self._drain_deadline = anyio.current_time() + DRAIN_AFTER_EXIT_S
            if self._waiting is not None:
                self._waiting.deadline = min(self._waiting.deadline, self._drain_deadline)


def _pipe_fill(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` (FIONREAD, pipe(7))."""
    buf = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    return int(struct.unpack("i", buf)[0])
