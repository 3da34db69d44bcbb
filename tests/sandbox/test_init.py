"""The session's init shell (sandbox/_init.py): the lifeline ties the session to its runner.

Expected behaviour from the module's rule: once the runner's end of the
lifeline is closed, no process of the session is left; the harness itself
gets /dev/null as stdin and keeps pid 2; outside a private pid namespace the
shell refuses to start (its ``kill -9 -1`` would reach the host).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import anyio
import pytest

from recorder._driver import drive_child
from sandbox import _argv as argv_module
from sandbox._capture import capture
from sandbox._init import INIT_FAILED_STATUS, session_init_command
from sandbox._layout import measure_host_layout
from sandbox.confined import ConfinedSpec, open_confined
from sandbox.users import session_user

COMMAND = ["/opt/harness/claude", "-p", "--", "-a task; with $(words) and 'quotes'"]
GONE_WITHIN_S = 2.0


def test_the_command_is_execed_unchanged_after_the_steps_in_order() -> None:
    argv = session_init_command(COMMAND, lifeline=True, bridge=True, port=4321)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3:] == ["headwater-init", *COMMAND]
    script = argv[2]
    guard, watch = script.index('if [ "$$" -ne 2 ]'), script.index("kill -9 -1")
    bridge, run = script.index("TCP-LISTEN:4321,"), script.index('exec "$@"')
    assert guard < watch < bridge < run  # refuse first, tie second, bridge, then the harness
    assert script.endswith('exec "$@"\n')


def test_without_steps_the_shell_only_execs() -> None:
    assert session_init_command(COMMAND, lifeline=False, bridge=False)[2] == 'exec "$@"\n'
    script = session_init_command(COMMAND, lifeline=False, bridge=True)[2]
    assert "kill" not in script.replace("kill -0", "")  # no watcher without a lifeline


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        session_init_command([], lifeline=True, bridge=False)
    with pytest.raises(ValueError, match="port"):
        session_init_command(COMMAND, lifeline=False, bridge=True, port=0)


def _unique(base: int) -> str:
    return f"{base}.{random.randrange(10_000, 99_999)}"


def _with(*needle: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if any(n in cmdline for n in needle):
                found.append(int(entry.name))
    return found


def _spec(tmp_path: Path, command: list[str]) -> ConfinedSpec:
    """A sandbox like a session's (`open_confined`), running ``command``, host network."""
    return ConfinedSpec(command=command, executable=Path("/usr/bin/true"), network="host",
                        env={"PATH": "/usr/bin:/bin"}, workspace=tmp_path,
                        layout=measure_host_layout(), user=session_user())  # fmt: skip


@pytest.mark.bwrap
@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_detached_process_goes_when_the_lifeline_closes(
    bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness leaves a detached sleep and exits; the sandbox's teardown closes the
    lifeline after the reap, and the watcher ends the sleep: nothing of the session is left.
    bwrap's own tie (``--die-with-parent``) is taken out here: the lifeline alone must do it,
    as it must while bwrap has not yet armed that tie."""
    flags = tuple(f for f in argv_module.NAMESPACE_FLAGS if f != "--die-with-parent")
    monkeypatch.setattr(argv_module, "NAMESPACE_FLAGS", flags)
    duration = _unique(71)
    lines: list[bytes] = []
    harness = ["/bin/sh", "-c", f"setsid -f sleep {duration} >/dev/null 2>&1; "
               "readlink /proc/self/fd/0; echo pid=$$"]  # fmt: skip
    try:
        async with open_confined(_spec(tmp_path, harness)) as sandbox:
            assert "--die-with-parent" not in sandbox.argv
            result = await drive_child(sandbox.child, on_line=lines.append, stderr_tail=None,
                                       wall_limit_s=30, watchdog_s=30)  # fmt: skip
        assert result.exit_status == 0, result.stderr_end
        assert lines == [b"/dev/null", b"pid=2"]  # the harness never holds the lifeline
        for _ in range(int(GONE_WITHIN_S / 0.05)):  # polls another process's state
            if not _with(f"sleep {duration}"):
                break
            await anyio.sleep(0.05)
        assert _with(f"sleep {duration}") == []
    finally:
        for pid in _with(f"sleep {duration}"):
            os.kill(pid, 9)


@pytest.mark.bwrap
@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_with_the_lifeline_open_the_session_runs_on(bwrap: str, tmp_path: Path) -> None:
    """The watcher waits for the runner: while the lifeline is open it kills nothing."""
    lines: list[bytes] = []
    harness = ["/bin/sh", "-c", "sleep 1; echo still-here"]
    async with open_confined(_spec(tmp_path, harness)) as sandbox:
        result = await drive_child(sandbox.child, on_line=lines.append, stderr_tail=None,
                                   wall_limit_s=30, watchdog_s=30)  # fmt: skip
    assert (result.exit_status, lines) == (0, [b"still-here"])


@pytest.mark.bwrap
@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_the_shell_refuses_to_start_unless_it_is_pid_2(
    bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As pid 1 (``--as-pid-1``: a namespace, so a broken guard harms nothing) it refuses."""
    monkeypatch.setattr(argv_module, "NAMESPACE_FLAGS",
                        (*argv_module.NAMESPACE_FLAGS, "--as-pid-1"))  # fmt: skip
    marker = tmp_path / "ran"
    async with open_confined(_spec(tmp_path, ["/bin/sh", "-c", f"touch {marker}"])) as sandbox:
        run = await capture(sandbox.child, timeout_s=30)
    assert run.returncode == INIT_FAILED_STATUS, run.stderr
    assert "is pid 1, not 2: no private pid namespace" in run.stderr
    assert not marker.exists()
