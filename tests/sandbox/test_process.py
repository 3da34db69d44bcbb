"""The process layer (sandbox/_process.py): spawn, environment, lifeline, reap, blocking waits.

Expected behaviour from the module's rules: a child gets exactly the
environment it is given (RC-03) and no fd of ours but the ones passed; the
lifeline reads EOF once the runner lets go; a reap ends a child that ignores
SIGTERM after the grace, sweeps its process group, and is bounded and
idempotent; its blocking counterpart does the same in a thread that runs no
event loop.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from sandbox import _process
from sandbox._errors import SandboxError, SpawnFailed
from sandbox._payload import payload_pipe
from sandbox._process import Child, open_child, spawn
from tests.conftest import python_child

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def first_line(child: Child) -> bytes:
    """The child's stdout up to its first newline (``print`` under -u writes the end apart)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = await child.read("stdout")
        assert chunk, data
        data += chunk
    return data


async def output(child: Child) -> bytes:
    """All of the child's stdout, to EOF."""
    chunks = []
    while chunk := await child.read("stdout"):
        chunks.append(chunk)
    return b"".join(chunks)


async def test_a_child_gets_exactly_the_environment_it_is_given() -> None:
    async with open_child(["/usr/bin/env"]) as child:
        assert await output(child) == b""  # None: empty (bwrap starts with nothing, RC-03)
    async with open_child(["/usr/bin/env"], env={"LANG": "C.UTF-8"}) as child:
        assert await output(child) == b"LANG=C.UTF-8\n"


async def test_a_child_inherits_no_fd_but_stdio_and_the_passed_ones() -> None:
    code = "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
    with payload_pipe(b"x") as fd:
        async with open_child(python_child(code), stdin="lifeline", pass_fds=(fd,)) as child:
            listed = await output(child)
    # 0, 1, 2, the passed fd, and the one listdir itself opens (the lowest free number).
    fds = set(json.loads(listed))
    assert fd in fds and fds - {0, 1, 2, fd} == {3}


async def test_the_lifeline_reads_eof_once_the_runner_lets_go(tmp_path: Path) -> None:
    """The child blocks reading stdin until `close` (the runner's end) and not before."""
    marker = tmp_path / "eof"
    code = f"import sys, pathlib; sys.stdin.buffer.read(); pathlib.Path({str(marker)!r}).touch()"
    child = spawn(python_child(code), stdin="lifeline")
    try:
        await anyio.sleep(0.5)
        assert not marker.exists() and not child.has_exited()
        child.close()  # our ends, the lifeline's write end among them; the child is still ours
        with anyio.fail_after(10):
            await child.wait_exit()
        assert marker.exists()
    finally:
        await child.reap(0.5)
        child.close()


@pytest.mark.parametrize("kind", ["missing", "not-executable"])
def test_a_command_that_cannot_run_is_spawn_failed(tmp_path: Path, kind: str) -> None:
    exe = tmp_path / "claude"
    if kind == "not-executable":
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o644)
    before = open_fds()
    with pytest.raises(SpawnFailed) as caught:
        spawn([str(exe)])
    assert isinstance(caught.value, SandboxError)
    assert caught.value.executable == str(exe) and str(exe) in str(caught.value)
    assert open_fds() == before


def test_an_empty_command_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        spawn([])


async def test_a_reap_ends_a_child_that_ignores_sigterm_after_the_grace() -> None:
    code = ("import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print(os.getpid(), flush=True)\ntime.sleep(60)")  # fmt: skip
    async with open_child(python_child(code)) as child:
        pid = int(await first_line(child))
        started = time.monotonic()
        await child.reap(0.5)
        elapsed = time.monotonic() - started
        assert (child.returncode, alive(pid)) == (-signal.SIGKILL, False)
        assert 0.5 <= elapsed < 3  # SIGTERM ignored for the grace, then SIGKILL
        await child.reap(0.5)  # idempotent


async def test_a_reap_sweeps_the_childs_process_group() -> None:
    """A grandchild in the child's group that outlives it goes too (SIGKILL to the group)."""
    code = ("import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(60)\n"
            "print(pid, flush=True)")  # fmt: skip
    async with open_child(python_child(code)) as child:
        grandchild = int(await first_line(child))
        with anyio.fail_after(10):
            await child.wait_exit()
        assert alive(grandchild)
    for _ in range(100):  # SIGKILL is queued; the kernel ends it a moment later
        if not alive(grandchild):
            break
        await anyio.sleep(0.02)
    assert not alive(grandchild)


async def test_a_cancelled_scope_still_reaps(tmp_path: Path) -> None:
    code = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)"
    pid = 0
    with anyio.fail_after(10), anyio.move_on_after(1.0):
        async with open_child(python_child(code), grace_s=0.5) as child:
            pid = int(await first_line(child))
            await anyio.sleep(60)
    assert pid and not alive(pid)


async def test_without_pidfd_the_exit_is_polled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels without pidfd_open(2): waiting and reaping still work."""
    monkeypatch.setattr(_process, "_open_pidfd", lambda pid: None)
    async with open_child(python_child("raise SystemExit(4)")) as child:
        with anyio.fail_after(10):
            await child.wait_exit()
        await child.reap()
        assert child.returncode == 4
    async with open_child(python_child("import time; time.sleep(60)")) as child:
        await child.reap(0.3)
        assert child.returncode == -signal.SIGTERM


async def test_open_child_leaks_no_fd() -> None:
    before = open_fds()
    async with open_child(["/usr/bin/true"], stdin="lifeline") as child:
        await output(child)
    with anyio.move_on_after(0.2):
        async with open_child(python_child("import time; time.sleep(60)")):
            await anyio.sleep(60)
    assert open_fds() == before


# --- the blocking waits: for a thread that runs no event loop (the seal's grep) ------------


def test_a_blocking_wait_returns_at_the_exit_and_not_before() -> None:
    child = spawn(["/bin/sh", "-c", "sleep 0.3"])
    try:
        started = time.monotonic()
        assert not child.wait_exit_blocking(0.05)  # still running: False at the bound
        assert child.wait_exit_blocking(10)
        assert 0.25 <= time.monotonic() - started < 5
        assert child.returncode is None  # exited, not reaped (its pid stays reserved)
    finally:
        child.reap_blocking()
        child.close()
    assert child.returncode == 0


def test_a_blocking_reap_ends_a_child_that_ignores_sigterm_after_the_grace() -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    child = spawn(python_child(code), stdout=subprocess.DEVNULL)
    time.sleep(0.3)  # the handler is set
    started = time.monotonic()
    child.reap_blocking(grace_s=0.5)
    took = time.monotonic() - started
    child.close()
    assert child.returncode == -signal.SIGKILL
    assert 0.5 <= took < 5  # the grace, then SIGKILL: not the 60 s sleep
    assert not alive(child.pid)
    child.reap_blocking()  # idempotent


def test_a_blocking_reap_sweeps_the_childs_process_group() -> None:
    code = ("import subprocess, sys; p = subprocess.Popen(['sleep', '60']); "
            "print(p.pid, flush=True); sys.exit(0)")
    child = spawn(python_child(code))
    assert child.wait_exit_blocking(10)
    printed = child.try_read("stdout")  # printed before it exited: there now
    assert printed
    grandchild = int(printed)
    assert alive(grandchild)
    child.reap_blocking()
    child.close()
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_without_pidfd_the_blocking_wait_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_process, "_open_pidfd", lambda pid: None)
    child = spawn(["/bin/sh", "-c", "sleep 0.2"])
    try:
        assert child.wait_exit_blocking(10)
    finally:
        child.reap_blocking()
        child.close()
    assert child.returncode == 0
