"""The process layer (sandbox/_process.py): spawn, environment, payload pipes, lifeline, reap.

Expected behaviour from the module's rules: a child gets exactly the
environment it is given (RC-03) and no fd of ours but the ones passed; a
payload pipe holds the bytes then EOF; the lifeline reads EOF once the runner
lets go; a reap ends a child that ignores SIGTERM after the grace, sweeps its
process group, and is bounded and idempotent.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import anyio
import pytest

from sandbox import _process
from sandbox._errors import SandboxError, SpawnFailed
from sandbox._process import MAX_PAYLOAD_BYTES, Child, open_child, payload_pipe, run_sync, spawn
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


async def test_a_payload_pipe_holds_the_bytes_then_eof() -> None:
    payload = b"--setenv\0ANTHROPIC_API_KEY\0sk-secret\0" * 100
    code = ("import os, sys\nfd = int(sys.argv[1]); chunks = []\n"
            "while chunk := os.read(fd, 4096):\n    chunks.append(chunk)\n"
            "print(b''.join(chunks).hex())")  # fmt: skip
    with payload_pipe(payload) as fd:
        async with open_child([*python_child(code), str(fd)], pass_fds=(fd,)) as child:
            assert await output(child) == payload.hex().encode() + b"\n"


def test_a_payload_over_one_pipe_buffer_is_refused() -> None:
    too_big = payload_pipe(b"x" * (MAX_PAYLOAD_BYTES + 1))
    with pytest.raises(ValueError, match=f"{MAX_PAYLOAD_BYTES + 1} bytes"):
        too_big.__enter__()


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


def test_run_sync_runs_a_child_to_its_reap_from_synchronous_code() -> None:
    """The sync shim: a fresh loop on this thread; the child is reaped before it returns."""

    async def version() -> tuple[int | None, bytes]:
        async with open_child(["/bin/sh", "-c", "echo v1; exit 3"]) as child:
            text = await output(child)
            await child.reap()
            return child.returncode, text

    assert run_sync(version) == (3, b"v1\n")
