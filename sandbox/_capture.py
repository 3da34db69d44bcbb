"""Bounded capture of a short child's output, and bounded runs of short commands.

For the children whose whole output the runner wants (a version line, a
probe's report, bwrap's error message), never for a session's stream (that is
`recorder.drive_child`, line by line). Rule: every capture is bounded in time
and in bytes. A child that prints more than the bound is still read to its
end, so it never blocks on a full pipe, but only the first
``limit_bytes`` of stdout and the last ``limit_bytes`` of stderr are kept (a
stand-in that printed a 1 GB stream for ``--version`` must not cost the runner
a gigabyte).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import anyio

from ._errors import SpawnFailed
from ._process import DRAIN_AFTER_EXIT_S, GRACE_S, open_child
from ._sync import run_sync

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from ._process import Child, PipeName, Stdin

__all__ = ["CAPTURE_LIMIT_BYTES", "Run", "capture", "run_bounded", "run_bounded_sync"]

CAPTURE_LIMIT_BYTES: Final = 64 * 1024
"""Default bound, in bytes, on what is kept of each of stdout and stderr: a version line,
a probe's few report lines and bwrap's messages all fit many times over."""


@dataclass(frozen=True, slots=True)
class Run:
    """What one bounded child did.

    Attributes:
        returncode: Exit status (>= 0) or -N for signal N; None when it did not
            finish in time (it was killed) or could not be started.
        stdout: The first ``limit_bytes`` of stdout, decoded (invalid UTF-8 replaced).
        stderr: The last ``limit_bytes`` of stderr, decoded; for a child that
            could not be started, why.
        timed_out: True when the time bound passed before the child exited.
        stdout_bytes: Every stdout byte read, kept or not.
    """

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    stdout_bytes: int = 0


async def capture(
    child: Child, *, timeout_s: float, limit_bytes: int = CAPTURE_LIMIT_BYTES,
    grace_s: float = GRACE_S, drain_s: float = DRAIN_AFTER_EXIT_S,
) -> Run:
    """Read ``child``'s stdout and stderr to their end, wait for it, reap it.

    Both pipes are drained concurrently (a child blocked on a full stderr pipe
    would never finish stdout). Once the child has exited its pipes are read
    for at most ``drain_s`` more (`DRAIN_AFTER_EXIT_S`; a descendant may hold them). After
    ``timeout_s`` seconds from this call the child is reaped (`Child.reap`:
    SIGTERM, ``grace_s``, SIGKILL, its group swept) and the run is
    ``timed_out``.

    **Cancellation:** the child is reaped (shielded, bounded); the
    cancellation propagates.

    Args:
        child: A child with both pipes (``stdout="pipe"``, ``stderr="pipe"``).
        timeout_s: Seconds for the whole run.
        limit_bytes: Bytes kept of each pipe (`Run`).
        grace_s: Seconds between SIGTERM and SIGKILL.
        drain_s: Seconds the pipes are read after the child exited.
    """
    out, err = bytearray(), bytearray()
    counts = {"stdout": 0, "stderr": 0}
    ended = anyio.Event()

    def keep_head(chunk: bytes) -> None:
        out.extend(chunk[: max(0, limit_bytes - len(out))])

    def keep_tail(chunk: bytes) -> None:
        err.extend(chunk)
        del err[: max(0, len(err) - limit_bytes)]

    async def drain(name: PipeName, keep: Callable[[bytes], None], done: anyio.Event) -> None:
        while chunk := await child.read(name):
            counts[name] += len(chunk)
            keep(chunk)
        done.set()

    try:
        with anyio.move_on_after(timeout_s):
            async with anyio.create_task_group() as tg:
                eofs = (anyio.Event(), anyio.Event())
                tg.start_soon(drain, "stdout", keep_head, eofs[0])
                tg.start_soon(drain, "stderr", keep_tail, eofs[1])
                await child.wait_exit()
                ended.set()
                with anyio.move_on_after(drain_s):
                    for eof in eofs:
                        await eof.wait()
                tg.cancel_scope.cancel()
    finally:
        await child.reap(grace_s)
    timed_out = not ended.is_set()
    return Run(None if timed_out else child.returncode, _text(out), _text(err),
               timed_out=timed_out, stdout_bytes=counts["stdout"])  # fmt: skip


async def run_bounded(
    argv: Sequence[str],
    *,
    timeout_s: float,
    limit_bytes: int = CAPTURE_LIMIT_BYTES,
    env: Mapping[str, str] | None = None,
    stdin: Stdin = "devnull",
    pass_fds: Sequence[int] = (),
    drain_s: float = DRAIN_AFTER_EXIT_S,
) -> Run:
    """`open_child` ``argv`` (empty environment unless ``env``) and `capture` it
    (``drain_s``: its drain after the child exited).

    A command that cannot be started is data here, not an exception: a `Run`
    with ``returncode=None`` and the reason in ``stderr``.
    """
    try:
        async with open_child(argv, env=env, stdin=stdin, pass_fds=pass_fds) as child:
            return await capture(child, timeout_s=timeout_s, limit_bytes=limit_bytes,
                                 drain_s=drain_s)
    except SpawnFailed as exc:
        return Run(returncode=None, stdout="", stderr=str(exc))


def run_bounded_sync(
    argv: Sequence[str],
    *,
    timeout_s: float,
    limit_bytes: int = CAPTURE_LIMIT_BYTES,
    env: Mapping[str, str] | None = None,
    stdin: Stdin = "devnull",
    pass_fds: Sequence[int] = (),
) -> Run:
    """`run_bounded` for synchronous callers (`run_sync`: not from a thread running a loop)."""

    async def run() -> Run:
        return await run_bounded(argv, timeout_s=timeout_s, limit_bytes=limit_bytes, env=env,
                                 stdin=stdin, pass_fds=pass_fds)  # fmt: skip

    return run_sync(run)


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")
