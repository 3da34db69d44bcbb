"""One way to run a child: spawn on the calling thread, a pidfd, the lifeline, a bounded reap.

Every process the runner starts goes through `spawn` (or `open_child`), and
every one is reaped by `Child.reap`: shielded, SIGTERM to the child and its
process group, a grace, SIGKILL, a bounded wait, SIGKILL to group members
that outlived it. This module is the one place that sees ``OSError`` from
process creation and pipes; above it there are `SpawnFailed` and data.

Rules it implements:

* docs/confinement.md, "spawned from a thread that outlives it": ``--die-with-parent``
  arms PR_SET_PDEATHSIG, which follows the *thread* that forked (prctl(2)).
  `spawn` calls `subprocess.Popen` on the calling thread, and every caller
  calls it from the event loop's own thread (or, through `run_sync`, from a
  thread that waits until the child is reaped; or, for a child that is no
  sandbox, such as the seal's grep, from a worker thread that waits for it
  with `Child.wait_exit_blocking` and `Child.reap_blocking`). ``anyio.open_process`` on trio
  spawns in a worker thread that exits after 10 s idle, killing a sandbox
  (seen here: exit -9 at 10.0 s).
* The lifeline (`sandbox._init`): with ``stdin="lifeline"`` the child's stdin
  is the read end of a pipe whose write end only this process holds
  (close-on-exec, in no other child); `Child.close` closes it after the reap.
  However the runner ends, SIGKILL included, the kernel closes it too.
* RC-03: a child gets exactly the environment it is given; None is empty.
* A child joins the `LiveChildren` current where it is spawned (`sandbox._live`),
  which its owner (the batch's supervisor) can kill at once; its reap removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import select
import signal
import struct
import subprocess
import termios
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final, Literal, final

import anyio

from ._errors import SpawnFailed
from ._live import LiveChildren, current_children

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence
    from pathlib import Path

__all__ = [
    "DRAIN_AFTER_EXIT_S",
    "GRACE_S",
    "PIPE_READ_BYTES",
    "REAP_TIMEOUT_S",
    "STDOUT_PIPE_BYTES",
    "Child",
    "open_child",
    "spawn",
]

logger = logging.getLogger(__name__)

GRACE_S: Final = 5.0
"""Seconds between SIGTERM and SIGKILL. bwrap forwards SIGTERM to the harness, which
needs a moment to flush; tests shrink it with ``grace_s``."""
REAP_TIMEOUT_S: Final = 30.0
"""Upper bound, in seconds, on waiting after SIGKILL: a lost exit must not hang teardown."""
DRAIN_AFTER_EXIT_S: Final = 5.0
"""Seconds after a child's exit during which its pipes are still read to EOF: a
descendant that inherited a pipe may hold it open for ever."""
PIPE_READ_BYTES: Final = 64 * 1024
"""Bytes asked for per read by default: one Linux pipe buffer of the default size."""
STDOUT_PIPE_BYTES: Final = 1024 * 1024
"""Capacity asked for a child's stdout pipe (F_SETPIPE_SZ, fcntl(2)), in bytes: the default
64 KiB makes a child that prints a stream of large lines (stream-json) block and wake the
reader once per 64 KiB; 1 MiB (an unprivileged process's ``/proc/sys/fs/pipe-max-size`` by
default) cuts those round trips sixteenfold. The buffer is the kernel's, not the reader's
memory; where the kernel refuses, the pipe keeps its default size."""
_EXIT_POLL_S: Final = 0.05
"""Polling period, in seconds, for a child's exit when pidfd_open(2) is unavailable."""

Stdin = Literal["devnull", "lifeline"]
"""``devnull``: stdin is /dev/null; ``lifeline``: the lifeline pipe (module docstring)."""
Output = Literal["pipe"] | int
"""``pipe``: a pipe whose read end `Child` holds (non-blocking); an int: that file descriptor."""
PipeName = Literal["stdout", "stderr"]


@final
class Child:
    """A spawned child: its Popen, our pipe ends, its pidfd and its lifeline; made by `spawn`.

    Not thread-safe; use it from the thread that spawned it. The methods that
    wait are async, except `wait_exit_blocking` and `reap_blocking`, their
    counterparts for a thread that runs no event loop (a worker thread: they
    block it, and run no loop, `sandbox._sync`).
    """

    def __init__(
        self, proc: subprocess.Popen[bytes], *, stdout_fd: int | None, stderr_fd: int | None,
        pidfd: int | None, lifeline_fd: int | None, started: float,
    ) -> None:
        self.proc = proc
        self.started = started
        """`time.monotonic` just before the spawn, in seconds."""
        self._fds: dict[str, int | None] = {
            "stdout": stdout_fd, "stderr": stderr_fd, "pid": pidfd, "lifeline": lifeline_fd,
        }  # fmt: skip
        self._wait_lock: anyio.Lock | None = None  # trio lets one task at a time wait on an fd
        self._exited = False
        self._reap_done = False
        self._live: LiveChildren | None = None
        """The registry it joined at its spawn (`sandbox._live`), left at its reap."""

    def __repr__(self) -> str:
        state = "running" if not self._exited else f"exited {self.proc.returncode}"
        return f"<Child pid={self.proc.pid} {state}>"

    @property
    def pid(self) -> int:
        """The child's pid (also its process group and session id)."""
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        """Popen's return code once reaped: >= 0 exit status, -N killed by signal N."""
        return self.proc.returncode

    def is_open(self, name: PipeName) -> bool:
        """Whether our read end of the child's ``name`` pipe is still open."""
        return self._fds[name] is not None

    def try_read(self, name: PipeName, max_bytes: int = PIPE_READ_BYTES) -> bytes | None:
        """One non-blocking read of ``name``: bytes, b"" at EOF, None when nothing is there yet."""
        try:
            return os.read(self._fd(name), max_bytes)
        except BlockingIOError:
            return None

    async def wait_readable(self, name: PipeName) -> None:
        """Return when ``name`` has bytes or is at EOF (a checkpoint; cancellable)."""
        await anyio.wait_readable(self._fd(name))

    async def read(self, name: PipeName, max_bytes: int = PIPE_READ_BYTES) -> bytes:
        """The next bytes of ``name`` (at most ``max_bytes``), b"" at EOF. Cancellable."""
        while (chunk := self.try_read(name, max_bytes)) is None:
            await self.wait_readable(name)
        return chunk

    def pending(self, name: PipeName) -> int:
        """Bytes waiting in the ``name`` pipe now (FIONREAD, pipe(7))."""
        buf = fcntl.ioctl(self._fd(name), termios.FIONREAD, b"\0\0\0\0")
        return int(struct.unpack("i", buf)[0])

    def has_exited(self) -> bool:
        """True once the child has exited; it stays an unreaped zombie until `reap`."""
        if not self._exited:
            # WNOWAIT: the zombie keeps its pid, hence its process group id, from
            # being reused until the group has been swept (waitid(2)).
            flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
            self._exited = os.waitid(os.P_PID, self.proc.pid, flags) is not None
        return self._exited

    async def wait_exit(self) -> None:
        """Return when the child has exited, without reaping it. Cancellable."""
        if self._wait_lock is None:
            self._wait_lock = anyio.Lock()
        async with self._wait_lock:
            pidfd = self._fds["pid"]
            while not self.has_exited():
                if pidfd is None:
                    await anyio.sleep(_EXIT_POLL_S)
                else:
                    await anyio.wait_readable(pidfd)  # readable once the process exits

    async def reap(self, grace_s: float = GRACE_S) -> None:
        """Stop the child if it runs, sweep its process group, reap it. Idempotent.

        Closes our stdout end first (a child blocked writing it gets EPIPE),
        then SIGTERM to the child and its group, ``grace_s`` seconds, SIGKILL,
        at most `REAP_TIMEOUT_S` seconds of waiting (a warning is logged if the
        child still has not exited; it is then left unreaped). Members of its
        group that outlived it get SIGKILL.

        **Cancellation:** shielded; returns only when done (bounded as above).
        """
        with anyio.CancelScope(shield=True):
            steps = self._reap_steps(grace_s)
            if steps is None:
                return
            for sig, bound_s in steps:
                if self.has_exited():
                    break
                self._signal(sig)
                with anyio.move_on_after(bound_s):
                    await self.wait_exit()
            self._collect()

    def wait_exit_blocking(self, timeout_s: float) -> bool:
        """Block this thread until the child has exited (not reaped), at most ``timeout_s``.

        For a thread that runs no event loop: poll(2) on the pidfd (a short sleep
        between checks without one); no loop is started. Returns whether it exited.
        """
        deadline = time.monotonic() + timeout_s
        pidfd = self._fds["pid"]
        while not self.has_exited():
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                return False
            if pidfd is None:
                time.sleep(min(_EXIT_POLL_S, left_s))
            else:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)  # readable once the process exits
                poller.poll(max(1, math.ceil(left_s * 1000)))
        return True

    def reap_blocking(self, grace_s: float = GRACE_S) -> None:
        """`reap` for a thread that runs no event loop: the same steps and bounds, blocking.

        SIGTERM, ``grace_s``, SIGKILL, at most `REAP_TIMEOUT_S`, the group swept,
        the child reaped (or a warning and left unreaped); each wait is
        `wait_exit_blocking`. Idempotent, and one reap in all with `reap`.
        """
        steps = self._reap_steps(grace_s)
        if steps is None:
            return
        for sig, bound_s in steps:
            if self.has_exited():
                break
            self._signal(sig)
            self.wait_exit_blocking(bound_s)
        self._collect()

    def _reap_steps(self, grace_s: float) -> tuple[tuple[signal.Signals, float], ...] | None:
        """The signals a reap sends and how long it waits after each; None if a reap began
        before (one reap in all). Closes our stdout end first (a writer then gets EPIPE)."""
        if self._reap_done:
            return None
        self._reap_done = True
        self._close("stdout")
        return ((signal.SIGTERM, grace_s), (signal.SIGKILL, REAP_TIMEOUT_S))

    def _collect(self) -> None:
        """A reap's end: sweep the group and collect the exited child, or warn and leave it."""
        if not self.has_exited():
            logger.warning("pid %d not reaped %.0f s after SIGKILL", self.pid, REAP_TIMEOUT_S)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self.proc.poll()  # reaps: the child has exited (has_exited above)
        if self._live is not None:
            self._live.discard(self)

    def kill_now(self) -> None:
        """SIGKILL the child and its group at once, unless it is reaped already."""
        if self.proc.returncode is None:  # not reaped: the pid is still this child's
            self._signal(signal.SIGKILL)

    def close(self) -> None:
        """Close every fd we hold for the child, the lifeline last; idempotent."""
        for name in ("stdout", "stderr", "pid", "lifeline"):
            self._close(name)

    def close_pipe(self, name: PipeName) -> None:
        """Close our read end of ``name`` (a child writing it then gets EPIPE); idempotent."""
        self._close(name)

    def _fd(self, name: str) -> int:
        fd = self._fds[name]
        if fd is None:
            raise RuntimeError(f"the child's {name} is already closed")
        return fd

    def _signal(self, sig: signal.Signals) -> None:
        # The child leads its own session and process group (start_new_session).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _close(self, name: str) -> None:
        fd = self._fds[name]
        if fd is not None:
            self._fds[name] = None
            if name in ("stdout", "stderr", "pid"):
                with contextlib.suppress(RuntimeError):  # no event loop here: nobody waits on it
                    anyio.notify_closing(fd)
            os.close(fd)


def spawn(
    argv: Sequence[str | bytes],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: Stdin = "devnull",
    stdout: Output = "pipe",
    stderr: Output = "pipe",
    pass_fds: Sequence[int] = (),
) -> Child:
    """Start ``argv`` now, on the calling thread, in a session of its own.

    The child gets exactly ``env`` (None: empty, RC-03), no inherited fd but
    ``pass_fds``, ``stdin`` per `Stdin`, and stdout/stderr per `Output`. Call it
    from the event loop's own thread (or inside `run_sync`), never from a worker
    thread: ``--die-with-parent`` follows the spawning thread (module docstring).

    Returns:
        The `Child`; the caller must `Child.reap` and `Child.close` it
        (`open_child` does both).

    Raises:
        ValueError: ``argv`` is empty.
        SpawnFailed: ``argv[0]`` could not be executed (nothing ran).
    """
    if not argv:
        raise ValueError("argv is empty")
    theirs: list[int] = []  # the child's ends: closed here once it has them
    ours: dict[str, int] = {}  # our ends: closed here only on failure
    try:
        out = _pipe_end(stdout, "stdout", ours, theirs)
        err = _pipe_end(stderr, "stderr", ours, theirs)
        child_stdin: int = subprocess.DEVNULL
        if stdin == "lifeline":  # os.pipe() ends are close-on-exec: only the child's copy crosses
            child_stdin, ours["lifeline"] = os.pipe()
            theirs.append(child_stdin)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(argv), stdin=child_stdin, stdout=out, stderr=err, env=dict(env or {}),
                cwd=cwd, start_new_session=True, close_fds=True, pass_fds=tuple(pass_fds),
            )  # fmt: skip
        except OSError as exc:
            raise SpawnFailed(os.fsdecode(argv[0]), str(exc)) from exc
    except BaseException:
        for fd in ours.values():
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    for name in ("stdout", "stderr"):
        if name in ours:
            os.set_blocking(ours[name], False)
    child = Child(proc, stdout_fd=ours.get("stdout"), stderr_fd=ours.get("stderr"),
                  pidfd=_open_pidfd(proc.pid), lifeline_fd=ours.get("lifeline"),
                  started=started)  # fmt: skip
    child._live = current_children()
    if child._live is not None:
        child._live.add(child)
    return child


def _pipe_end(mode: Output, name: str, ours: dict[str, int], theirs: list[int]) -> int:
    if mode != "pipe":
        return mode
    read_end, write_end = os.pipe()
    ours[name] = read_end
    theirs.append(write_end)
    if name == "stdout":
        with contextlib.suppress(OSError):  # EPERM past the user's pipe quota: keep 64 KiB
            fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, STDOUT_PIPE_BYTES)
    return write_end


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd_open(2) here: poll instead
        return None


@asynccontextmanager
async def open_child(
    argv: Sequence[str | bytes],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: Stdin = "devnull",
    stdout: Output = "pipe",
    stderr: Output = "pipe",
    pass_fds: Sequence[int] = (),
    grace_s: float = GRACE_S,
) -> AsyncIterator[Child]:
    """`spawn` ``argv`` (the options as for `spawn`); on exit it is reaped and closed, always.

    **Cancellation:** the exit's reap is shielded and bounded (`Child.reap`,
    ``grace_s`` seconds between SIGTERM and SIGKILL).

    Raises:
        ValueError, SpawnFailed: as `spawn`.
    """
    child = spawn(argv, env=env, cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr,
                  pass_fds=pass_fds)  # fmt: skip
    try:
        yield child
    finally:
        await child.reap(grace_s)
        child.close()
