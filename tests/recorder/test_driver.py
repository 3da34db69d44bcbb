"""drive_child: exit facts, limits, bounded drains, reaping, no leaks, BC-13, BC-17.

The child comes from the process layer (`sandbox.open_child`), whose own
tests (spawn, pidfd, payload pipes, reap) are tests/sandbox/test_process.py.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from recorder import _driver
from recorder._driver import DriveResult, drive_child
from recorder._lines import MAX_LINE_BYTES
from sandbox._process import open_child
from tests.conftest import FIXTURES, python_child
from tests.standin import write_standin

if TYPE_CHECKING:
    from collections.abc import Sequence

pytestmark = pytest.mark.anyio

BUG_INPUTS = FIXTURES / "bug_inputs"
STREAM = b'{"type":"system","subtype":"init"}\n{"type":"assistant","n":1}\n{"type":"result"}\n'
BOTH_BACKENDS = pytest.mark.parametrize("anyio_backend", ["trio", "asyncio"])


async def drive(
    argv: Sequence[str],
    tmp_path: Path,
    *,
    deadline_s: float = 60,
    **overrides: Any,
) -> tuple[DriveResult, list[bytes]]:
    """Drive ``argv`` with test defaults; a hang fails at ``deadline_s``, never stalls."""
    seen: list[bytes] = []
    env = overrides.pop("env", None)
    params: dict[str, Any] = {
        "on_line": seen.append,
        "stderr_tail": tmp_path / "stderr.tail",
        "wall_limit_s": 30.0,
        "watchdog_s": 30.0,
        "grace_s": 1.0,
    }
    params.update(overrides)
    with anyio.fail_after(deadline_s):
        async with open_child(argv, env=env) as child:
            result = await drive_child(child, **params)
    return result, seen


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pids_running(path: Path) -> list[int]:
    """Live processes whose command line names ``path``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(path).encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def gone_within(path: Path, bound_s: float) -> list[int]:
    """`pids_running` once it is empty, or after ``bound_s`` seconds (polling every 20 ms)."""
    deadline = time.monotonic() + bound_s
    while (left := pids_running(path)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@BOTH_BACKENDS
async def test_drive_normal_exit(tmp_path: Path) -> None:
    standin = write_standin(tmp_path / "standin", stdout=STREAM)
    result, seen = await drive([str(standin)], tmp_path)
    assert seen == STREAM.split(b"\n")[:-1]
    assert (result.exit_status, result.end, result.tail) == (0, "exited", None)
    assert (result.lines, result.stdout_bytes, result.stderr_bytes) == (3, len(STREAM), 0)
    assert result.line_too_long is None
    assert (tmp_path / "stderr.tail").read_bytes() == b""


async def test_drive_reports_a_nonzero_exit_and_stderr(tmp_path: Path) -> None:
    standin = write_standin(tmp_path / "standin", stdout=STREAM, exit_code=3, stderr=b"boom\n")
    result, seen = await drive([str(standin)], tmp_path)
    assert (result.exit_status, result.end, len(seen)) == (3, "exited", 3)
    assert (tmp_path / "stderr.tail").read_bytes() == b"boom\n"
    assert result.stderr_bytes == 5


async def test_drive_reports_death_by_signal_as_negative_status(tmp_path: Path) -> None:
    code = "import os, signal; print('{}'); os.kill(os.getpid(), signal.SIGKILL)"
    result, seen = await drive(python_child(code), tmp_path)
    assert (result.exit_status, result.end, seen) == (-signal.SIGKILL, "exited", [b"{}"])


async def test_drive_keeps_a_cut_last_line_as_tail(tmp_path: Path) -> None:
    standin = write_standin(tmp_path / "standin", stdout=b'{"a":1}\n{"type":"resu')
    result, seen = await drive([str(standin)], tmp_path)
    assert seen == [b'{"a":1}']
    assert (result.tail, result.lines, result.end) == (b'{"type":"resu', 1, "exited")


async def test_drive_stops_a_child_at_the_wall_limit(tmp_path: Path) -> None:
    code = "import time\nwhile True:\n    print('{}', flush=True); time.sleep(0.1)"
    started = time.monotonic()
    result, seen = await drive(python_child(code), tmp_path, wall_limit_s=1.0, grace_s=1.0)
    elapsed = time.monotonic() - started
    assert (result.end, result.exit_status) == ("timed-out", -signal.SIGTERM)
    assert len(seen) >= 5
    assert 1.0 <= elapsed < 2.5


@BOTH_BACKENDS
async def test_drive_watchdog_fires_when_stdout_is_silent(tmp_path: Path) -> None:
    standin = write_standin(tmp_path / "standin", stdout=b'{"type":"system"}\n', sleep_s=60)
    started = time.monotonic()
    result, seen = await drive([str(standin)], tmp_path, watchdog_s=0.5)
    assert (result.end, result.exit_status) == ("watchdog", -signal.SIGTERM)
    assert seen == [b'{"type":"system"}']
    assert time.monotonic() - started < 3


async def test_drive_watchdog_does_not_count_time_spent_in_on_line(tmp_path: Path) -> None:
    standin = write_standin(tmp_path / "standin", stdout=STREAM)
    seen: list[bytes] = []

    def slow(line: bytes) -> None:
        time.sleep(0.4)  # the consumer is busy; the child is not silent
        seen.append(line)

    result, _ = await drive([str(standin)], tmp_path, watchdog_s=0.3, on_line=slow)
    assert (result.end, result.exit_status, len(seen)) == ("exited", 0, 3)


async def test_drive_bounds_the_drain_when_a_descendant_holds_stdout(tmp_path: Path) -> None:
    standin = write_standin(tmp_path / "standin", stdout=STREAM, exit_code=5, hold_stdout_s=60)
    started = time.monotonic()
    result, seen = await drive([str(standin)], tmp_path, drain_after_exit_s=1.0)
    elapsed = time.monotonic() - started
    assert (result.end, result.exit_status, result.tail) == ("exited", 5, None)
    assert seen == STREAM.split(b"\n")[:-1]
    assert 1.0 <= elapsed < 4
    # The reap SIGKILLs the child's group; the kernel ends the descendant a moment later.
    assert gone_within(standin, 2.0) == []  # the descendant went with the session


async def test_drive_reads_all_the_child_wrote_before_exit_however_slow_on_line_is(
    tmp_path: Path,
) -> None:
    """The drain limit bounds waiting for a descendant's bytes, never the child's own.

    The child grows its stdout pipe to 1 MiB (fcntl F_SETPIPE_SZ), writes
    400 lines (~420 KB, several reads) and exits at once; a descendant keeps
    the pipe open. Reading them all takes longer than the drain limit.
    """
    code = (
        "import fcntl, os, time\n"
        "fcntl.fcntl(1, fcntl.F_SETPIPE_SZ, 1 << 20)\n"
        "data = b''.join(b'{\"n\":%d,\"pad\":\"%s\"}\\n' % (i, b'x' * 1024) for i in range(400))\n"
        "view = memoryview(data)\n"
        "while view:\n"
        "    view = view[os.write(1, view):]\n"
        "if os.fork() == 0:\n"
        "    os.close(2); time.sleep(60); os._exit(0)\n"
    )
    seen: list[bytes] = []

    def slow(line: bytes) -> None:
        time.sleep(0.003)  # 400 lines: 1.2 s of work, well past the drain limit
        seen.append(line)

    result, _ = await drive(python_child(code), tmp_path, on_line=slow, drain_after_exit_s=0.3)
    assert [json.loads(line)["n"] for line in seen] == list(range(400))
    assert (result.end, result.exit_status, result.tail) == ("exited", 0, None)


async def test_drive_drains_a_stderr_flood_before_any_stdout_bc13(tmp_path: Path) -> None:
    """BC-13: 256 KiB of stderr before the first stdout byte must not deadlock."""
    script = BUG_INPUTS / "BC-13_fake_claude.sh"
    reference = await anyio.run_process(["/bin/sh", str(script)])
    assert len(reference.stderr) > 256 * 1024
    result, seen = await drive(["/bin/sh", str(script)], tmp_path, deadline_s=20)
    assert (result.exit_status, result.end) == (0, "exited")
    assert seen == reference.stdout.split(b"\n")[:-1]
    assert json.loads(seen[-1])["type"] == "result"
    assert result.stderr_bytes == len(reference.stderr)
    assert (tmp_path / "stderr.tail").read_bytes() == reference.stderr[-64 * 1024 :]


async def test_drive_keeps_the_last_64_kib_of_stderr(tmp_path: Path) -> None:
    expected = b"".join(b"%07d\n" % i for i in range(25_000))  # 200,000 bytes, all distinct
    code = (
        "import sys\n"
        "data = b''.join(b'%07d\\n' % i for i in range(25_000))\n"
        "for i in range(0, len(data), 3000):\n"
        "    sys.stderr.buffer.write(data[i:i + 3000]); sys.stderr.flush()\n"
        "print('{}')"
    )
    result, seen = await drive(python_child(code), tmp_path)
    tail = (tmp_path / "stderr.tail").read_bytes()
    assert _driver.STDERR_TAIL_BYTES == 64 * 1024
    assert tail == expected[-64 * 1024 :]
    assert (result.stderr_bytes, seen, result.exit_status) == (len(expected), [b"{}"], 0)


@BOTH_BACKENDS
async def test_drive_cancellation_reaps_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(60)"
    )
    seen: list[bytes] = []
    started = time.monotonic()
    with anyio.fail_after(10), anyio.move_on_after(1.0) as scope:
        async with open_child(python_child(code)) as child:
            await drive_child(child, on_line=seen.append, stderr_tail=tmp_path / "stderr.tail",
                              wall_limit_s=30, watchdog_s=30, grace_s=0.5)
    elapsed = time.monotonic() - started
    assert scope.cancelled_caught
    pid = int(seen[0])
    assert not alive(pid)
    assert 1.5 <= elapsed < 3.5  # SIGTERM, 0.5 s of grace ignored, then SIGKILL


async def test_drive_reaps_then_reraises_an_on_line_error(tmp_path: Path) -> None:
    code = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)"
    pids: list[int] = []

    class ConsumerBug(Exception):
        pass

    def on_line(line: bytes) -> None:
        pids.append(int(line))
        raise ConsumerBug("transform failed")

    with pytest.raises(ConsumerBug):
        await drive(python_child(code), tmp_path, on_line=on_line, deadline_s=10)
    assert not alive(pids[0])


async def test_drive_ends_line_too_long_and_keeps_the_error(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "out = sys.stdout.buffer\n"
        "out.write(b'{}\\n')\n"
        f"out.write(b'x' * {MAX_LINE_BYTES + 1} + b'\\n'); out.flush()\n"
        "time.sleep(60)"
    )
    result, seen = await drive(python_child(code), tmp_path, deadline_s=20)
    assert (result.end, seen, result.tail) == ("line-too-long", [b"{}"], None)
    assert result.line_too_long is not None
    assert result.line_too_long.line_number == 2
    assert result.line_too_long.size_bytes > MAX_LINE_BYTES
    assert result.exit_status is not None


async def test_drive_reads_bc03_whole_through_a_standin(tmp_path: Path) -> None:
    data = (BUG_INPUTS / "BC-03.jsonl").read_bytes()
    standin = write_standin(tmp_path / "standin", stdout=data)
    result, seen = await drive([str(standin)], tmp_path)
    assert seen == data.split(b"\n")[:-1]
    assert max(len(line) for line in seen) > 1_000_000
    assert (result.exit_status, result.stdout_bytes) == (0, len(data))


async def test_drive_leaks_no_fd(tmp_path: Path) -> None:
    before = open_fds()
    standin = write_standin(tmp_path / "standin", stdout=STREAM)
    await drive([str(standin)], tmp_path)
    await drive(python_child("import time; time.sleep(60)"), tmp_path, wall_limit_s=0.3)
    with anyio.move_on_after(0.3):
        await drive(python_child("import time; time.sleep(60)"), tmp_path)
    with anyio.move_on_after(0.3):  # cancelled mid-drive, the stderr tail not written
        await drive(python_child("import time; time.sleep(60)"), tmp_path, stderr_tail=None)
    assert open_fds() == before


# --- the post-result grace (docs/batch.md "Session states", last paragraph) ----------------------

RESULT = b'{"type":"result"}'


def results_are(line: bytes) -> bool:
    """The grace's seam: on_line answers True for a result line (here: `RESULT` itself)."""
    return line == RESULT


async def test_a_child_silent_and_alive_after_its_result_is_ended_after_the_grace(
    tmp_path: Path,
) -> None:
    """Result, then it hangs: ended ``post_result_grace_s`` after the result, not at the
    watchdog; every line it printed is kept."""
    standin = write_standin(tmp_path / "standin", stdout=b"{}\n" + RESULT + b"\n", sleep_s=60)
    seen: list[bytes] = []

    def on_line(line: bytes) -> bool:
        seen.append(line)
        return results_are(line)

    started = time.monotonic()
    result, _ = await drive([str(standin)], tmp_path, on_line=on_line, watchdog_s=30,
                            post_result_grace_s=0.5)  # fmt: skip
    elapsed = time.monotonic() - started
    assert (result.end, result.exit_status) == ("post-result-grace", -signal.SIGTERM)
    assert seen == [b"{}", RESULT]
    assert 0.5 <= elapsed < 5  # the grace, then SIGTERM ends the stand-in at once


async def test_output_after_the_result_restarts_the_grace(tmp_path: Path) -> None:
    """A background line 0.4 s after the result and a second result 0.4 s later: each restarts
    the 0.6 s grace, so all are read; the child is ended 0.6 s after the second result."""
    standin = write_standin(tmp_path / "standin", stdout=RESULT + b"\n", sleep_s=60,
                            later=[(0.4, b'{"type":"assistant"}\n'), (0.4, RESULT + b"\n")])
    seen: list[bytes] = []

    def on_line(line: bytes) -> bool:
        seen.append(line)
        return results_are(line)

    started = time.monotonic()
    result, _ = await drive([str(standin)], tmp_path, on_line=on_line, watchdog_s=30,
                            post_result_grace_s=0.6)  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.end == "post-result-grace"
    assert seen == [RESULT, b'{"type":"assistant"}', RESULT]
    assert 0.8 + 0.6 <= elapsed < 6


async def test_a_child_that_exits_within_the_grace_ends_by_itself(tmp_path: Path) -> None:
    standin = write_standin(tmp_path / "standin", stdout=RESULT + b"\n", sleep_s=0.3,
                            exit_code=0)  # fmt: skip
    result, _ = await drive([str(standin)], tmp_path, on_line=results_are, watchdog_s=30,
                            post_result_grace_s=5)  # fmt: skip
    assert (result.end, result.exit_status) == ("exited", 0)


async def test_after_its_result_a_child_that_closed_stdout_and_lingers_is_ended_too(
    tmp_path: Path,
) -> None:
    line = RESULT + b"\n"
    code = f"import os, time\nos.write(1, {line!r})\nos.close(1)\ntime.sleep(60)"
    started = time.monotonic()
    result, _ = await drive(python_child(code), tmp_path, on_line=results_are, watchdog_s=30,
                            post_result_grace_s=0.5)  # fmt: skip
    assert (result.end, result.exit_status) == ("post-result-grace", -signal.SIGTERM)
    assert time.monotonic() - started < 5


async def test_before_any_result_only_the_watchdog_bounds_silence(tmp_path: Path) -> None:
    """The grace starts at a result line: a silent child that printed none meets the watchdog."""
    standin = write_standin(tmp_path / "standin", stdout=b"{}\n", sleep_s=60)
    started = time.monotonic()
    result, _ = await drive([str(standin)], tmp_path, on_line=results_are, watchdog_s=1.5,
                            post_result_grace_s=0.3)  # fmt: skip
    assert result.end == "watchdog"
    assert time.monotonic() - started >= 1.5


async def test_a_registrys_kill_now_ends_a_child_that_ignores_sigterm_without_the_grace(
    tmp_path: Path,
) -> None:
    # A runner told twice to stop does not wait out the grace of a child deaf to SIGTERM.
    from sandbox import LiveChildren

    code = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('{}', flush=True); time.sleep(60)")
    started = time.monotonic()
    ended: list[float] = []
    live = LiveChildren()

    async def run() -> None:
        try:
            await drive(python_child(code), tmp_path, grace_s=20.0)
        finally:
            ended.append(time.monotonic())

    with live.tracking():
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.sleep(1.0)
            tg.cancel_scope.cancel()  # the first signal: the reap sends SIGTERM, then waits
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.5)
                assert live.kill_now() == 1  # the second: SIGKILL now
    assert ended[0] - started < 5.0  # not the 20 s grace
    assert live.kill_now() == 0  # reaped, nothing left to kill


@BOTH_BACKENDS
async def test_the_idle_callback_runs_when_the_pipe_is_empty_after_what_was_read(
    tmp_path: Path,
) -> None:
    # The kept stream flushes on it: whenever the driver waits, every chunk it had read
    # was handed on before the callback ran, so a runner killed during a quiet session
    # has everything it received in the file.
    code = ("import sys, time\nsys.stdout.write('one\\n'); sys.stdout.flush(); time.sleep(0.5)\n"
            "sys.stdout.write('two\\n'); sys.stdout.flush(); time.sleep(0.5)\n")
    chunks: list[bytes] = []
    at_idle: list[bytes] = []
    _, seen = await drive(python_child(code), tmp_path, on_chunk=chunks.append,
                          on_idle=lambda: at_idle.append(b"".join(chunks)))
    assert seen == [b"one", b"two"]
    assert b"one\n" in at_idle and b"one\ntwo\n" in at_idle
