"""open_confined (sandbox/confined/_open.py): the one recipe every sandbox is started with.

Expected behaviour from the module's rules and docs/confinement.md: the sandbox is
spawned from the event loop's own thread, so a session longer than trio's
10 s idle worker ends with its own status (BC-17); the environment travels on
``--args`` and never on bwrap's command line (RC-03); a read-only workspace
cannot be written and ``network="none"`` has only a loopback interface; the
scratch directories it made are gone afterwards, given ones are kept; a root
runner's sandbox runs as the session user; nothing is left running and no fd
is left open, however the block ends.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from recorder._driver import drive_child
from sandbox._capture import capture
from sandbox._errors import SpawnFailed
from sandbox._layout import measure_host_layout
from sandbox._owner import runner_tag
from sandbox.confined import ConfinedSpec, open_confined
from sandbox.users import SessionPool, ensure_session_pool, hand_over, session_user
from tests.standin import STANDIN_PYTHON, write_standin

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

SECRET = "sk-ant-test-open-confined-5e1b"


def _spec(command: list[str], **changes: object) -> ConfinedSpec:
    fields: dict[str, object] = {
        "command": command, "executable": Path(STANDIN_PYTHON), "network": "host",
        "env": {"PATH": "/usr/bin:/bin"}, "layout": measure_host_layout(), "user": session_user(),
    }
    fields.update(changes)
    return ConfinedSpec(**fields)  # type: ignore[arg-type]


def _scratch_dirs() -> set[str]:
    return {name for name in os.listdir("/tmp") if name.startswith(f"headwater-t-{runner_tag()}-")}


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_a_sandbox_longer_than_10s_ends_with_its_own_status_bc17(
    bwrap: str, tmp_path: Path
) -> None:
    """BC-17: --die-with-parent follows the spawning thread; a 25 s session must not die at 10 s.

    Spawning from trio's worker thread (anyio.open_process, to_thread) kills
    bwrap with -9 when that thread exits after 10 s idle.
    """
    standin = write_standin(tmp_path / "standin", stdout=b'{"type":"system"}\n', exit_code=7,
                            sleep_s=25)  # fmt: skip
    spec = _spec([STANDIN_PYTHON, "/opt/harness/claude"], executable=standin, bwrap=bwrap)
    started = time.monotonic()
    seen: list[bytes] = []
    with anyio.fail_after(80):
        async with open_confined(spec) as sandbox:
            result = await drive_child(sandbox.child, on_line=seen.append, stderr_tail=None,
                                       wall_limit_s=70, watchdog_s=70)  # fmt: skip
    assert (result.exit_status, result.end, len(seen)) == (7, "exited", 1)
    assert time.monotonic() - started >= 25


async def test_the_environment_travels_on_args_and_never_on_the_command_line(bwrap: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": SECRET}
    code = "import os; print(os.environ['ANTHROPIC_API_KEY'], os.getuid(), os.getpid())"
    async with open_confined(_spec([STANDIN_PYTHON, "-c", code], env=env)) as sandbox:
        assert not any(SECRET in arg for arg in sandbox.argv)
        run = await capture(sandbox.child, timeout_s=30)
    key, uid, pid = run.stdout.split()
    assert (run.returncode, key, pid) == (0, SECRET, "2")  # pid 2: the init shell exec'd it
    user = session_user()
    assert int(uid) == (user.uid if user is not None else os.getuid())  # no root inside


async def test_a_read_only_workspace_cannot_be_written_and_none_has_no_network(
    bwrap: str, tmp_path: Path
) -> None:
    (tmp_path / "kept.md").write_text("as the session left it\n")
    hand_over(session_user(), own=[tmp_path], reach=[])  # the session's workspace is its own
    code = ("import os, socket\n"
            "try:\n    open('new', 'w'); print('written')\nexcept OSError as e:\n"
            "    print('refused', e.errno)\n"
            "print(sorted(name for _, name in socket.if_nameindex()))")  # fmt: skip
    spec = _spec([STANDIN_PYTHON, "-c", code], workspace=tmp_path, workspace_read_only=True,
                 network="none")  # fmt: skip
    async with open_confined(spec) as sandbox:
        run = await capture(sandbox.child, timeout_s=30)
    assert run.stdout.splitlines() == ["refused 30", "['lo']"], run.stderr  # 30: EROFS
    assert sorted(os.listdir(tmp_path)) == ["kept.md"]


async def test_scratch_directories_go_and_given_ones_stay(bwrap: str, tmp_path: Path) -> None:
    before = _scratch_dirs()
    async with open_confined(_spec([STANDIN_PYTHON, "-c", "print(1)"], workspace=tmp_path,
                                   name="t")) as sandbox:  # fmt: skip
        assert sandbox.dirs.workspace == tmp_path
        scratch = sandbox.dirs.log_dir.parent
        assert scratch.name.startswith(f"headwater-t-{runner_tag()}-") and scratch.is_dir()
        assert sandbox.dirs.config_dir.parent == scratch
        await capture(sandbox.child, timeout_s=30)
    assert not await anyio.Path(scratch).exists() and _scratch_dirs() == before
    assert await anyio.Path(tmp_path).is_dir()


async def test_a_cancelled_block_leaves_no_process_and_no_fd(bwrap: str) -> None:
    before = set(os.listdir("/proc/self/fd"))
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
    with anyio.fail_after(30), anyio.move_on_after(1.0):
        async with open_confined(_spec([STANDIN_PYTHON, "-c", code]), grace_s=0.5) as sandbox:
            pid = sandbox.child.pid
            await anyio.sleep(60)
    assert sandbox.child.returncode is not None
    assert not await anyio.Path(f"/proc/{pid}").exists()
    assert set(os.listdir("/proc/self/fd")) == before


async def test_a_missing_bwrap_is_spawn_failed_before_anything_runs() -> None:
    with pytest.raises(SpawnFailed, match="hw-no-such-bwrap"):
        async with open_confined(_spec(["/bin/true"], bwrap="hw-no-such-bwrap")):
            pytest.fail("must not start")  # pragma: no cover


def test_a_spec_without_an_egress_socket_cannot_be_confined() -> None:
    with pytest.raises(ValueError, match="egress_socket"):
        _spec(["/bin/true"], network="confined")
    with pytest.raises(ValueError, match="absolute"):
        _spec(["true"])


@pytest.fixture
def pool_of_three() -> SessionPool:
    """Three pool users, made (``useradd``) before the test's loop starts: `ensure_session_pool`
    is a synchronous entry point (its ``useradd`` runs on a loop of its own, `run_sync`)."""
    # Three: on a shared host an older runner's sessions may hold headwater-session unleased
    # (its uid has processes), and a lease then skips it.
    pool, _ = ensure_session_pool(3)
    assert pool is not None
    return pool


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root runner has a pool of session users")
async def test_sandboxes_given_the_pool_at_once_run_each_as_a_user_of_its_own(
    bwrap: str, pool_of_three: SessionPool,
) -> None:
    """Rule (sandbox.users._lease): no two sandboxes that run at once share a uid.

    Two sandboxes given the pool, each holding until the other has started too, print their
    uids: two distinct pool users. Seen red with ``HW_WEAKEN=no-uid-pool`` (every lease is
    headwater-session at once): both print its uid.
    """
    pool = pool_of_three
    started = anyio.Event()
    uids: list[int] = []

    async def one(other_started: anyio.Event | None) -> None:
        code = "import os, time; print(os.getuid(), flush=True); time.sleep(50)"
        async with open_confined(_spec([STANDIN_PYTHON, "-c", code], user=pool)) as sandbox:
            line = await sandbox.child.read("stdout")
            uids.append(int(line.split()[0]))
            assert sandbox.user is not None and sandbox.user.uid == uids[-1]
            if other_started is None:
                started.set()
            else:
                await other_started.wait()  # both run now; leaving ends them

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, started)
            tg.start_soon(one, None)
    assert len(set(uids)) == 2, uids
    assert set(uids) <= {u.uid for u in pool.users}
