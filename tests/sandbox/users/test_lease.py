"""Session users' leases (`sandbox.users._lease`): exclusive across processes, freed by the kernel.

The pools here are of made-up users whose uids no process runs as (the lease
only locks and reads /proc; nothing is dropped to them), and every test has its
own lock directory. Backend-neutral (a lock, a thread, a sleep): run on trio
and asyncio.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from sandbox._errors import PoolBusy, SessionUserUnusable
from sandbox.users import SessionPool, SessionUser
from sandbox.users._lease import Lease, hold_lease, lease_user, try_lease, uid_keys, uid_processes
from tests.conftest import REPO, python_child

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.anyio

FREE_UID = 2_000_000_000
"""Made-up uids from here on: no process of the host runs as one."""
DEADLINE_S = 10.0
"""Guard against a lease that never comes (a deadlock must fail, not hang)."""


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The lease is backend-neutral: run it on both backends (STYLE §18)."""
    return str(request.param)


def pool_of(size: int, first_uid: int = FREE_UID) -> SessionPool:
    return SessionPool(tuple(SessionUser(f"hw-test-{i}", first_uid + i, first_uid + i)
                             for i in range(size)))  # fmt: skip


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "run" / "leases"


@pytest.fixture
def holder(root: Path) -> Iterator[subprocess.Popen[str]]:
    """Another runner process holding a lease of the first user of `pool_of(2)` until killed."""
    code = ("import sys, time\n"
            "from sandbox.users._lease import try_lease\n"
            "from sandbox.users._pool import SessionPool\n"
            "from sandbox.users._privileges import SessionUser\n"
            f"pool = SessionPool((SessionUser('hw-test-0', {FREE_UID}, {FREE_UID}),))\n"
            f"lease, _ = try_lease(pool, root=__import__('pathlib').Path({str(root)!r}))\n"
            "print(lease.user.name, flush=True)\n"
            "time.sleep(60)\n")  # fmt: skip
    child = subprocess.Popen(python_child(code), stdout=subprocess.PIPE, text=True, cwd=REPO,
                             env={"PYTHONPATH": str(REPO)})  # fmt: skip
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "hw-test-0"
        yield child
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


async def test_two_leases_never_hold_the_same_user(root: Path) -> None:
    """Seen red with the ``flock`` call in `try_lease` taken out: both get hw-test-0."""
    pool = pool_of(3)
    with anyio.fail_after(DEADLINE_S):
        async with lease_user(pool, root=root) as a, lease_user(pool, root=root) as b:
            assert a is not None and b is not None
            assert a.name != b.name
            assert {a.name, b.name} == {"hw-test-0", "hw-test-1"}


async def test_a_lease_held_by_another_process_is_not_handed_out(
    root: Path, holder: subprocess.Popen[str]
) -> None:
    """Seen red with the ``flock`` call in `try_lease` taken out: hw-test-0 is handed out."""
    with anyio.fail_after(DEADLINE_S):
        async with lease_user(pool_of(2), root=root) as user:
            assert user is not None and user.name == "hw-test-1"


async def test_a_killed_holders_lease_frees_itself(
    root: Path, holder: subprocess.Popen[str]
) -> None:
    """The kernel drops a killed process's flock: no runner need clean up after it.

    Seen red with a marker file created ``O_EXCL`` beside the flock (a lock the kernel does
    not release): after the SIGKILL hw-test-0 stays taken and hw-test-1 is handed out.
    """
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with anyio.fail_after(DEADLINE_S):
        async with lease_user(pool_of(2), root=root) as user:
            assert user is not None and user.name == "hw-test-0"


async def test_a_lease_waits_while_every_user_is_leased_and_gets_the_freed_one(
    root: Path,
) -> None:
    """Seen red with `lease_user` giving up (raising `PoolBusy`) on its first miss."""
    pool = pool_of(1)
    got: list[str] = []

    async def second() -> None:
        async with lease_user(pool, root=root, poll_s=0.01) as user:
            assert user is not None
            got.append(user.name)

    with anyio.fail_after(DEADLINE_S):
        async with anyio.create_task_group() as tg, lease_user(pool, root=root) as first:
            assert first is not None
            tg.start_soon(second)
            await anyio.sleep(0.3)
            assert got == []  # waiting, not failing, not sharing
    assert got == ["hw-test-0"]


async def test_a_cancelled_wait_holds_nothing(root: Path) -> None:
    pool = pool_of(1)
    async with lease_user(pool, root=root):
        with anyio.move_on_after(0.2):
            async with lease_user(pool, root=root, poll_s=0.01):
                pytest.fail("a leased user was handed out twice")
    lease, _ = try_lease(pool, root=root)
    assert lease is not None
    lease.release()


async def test_a_lease_is_released_however_the_block_ends(root: Path) -> None:
    pool = pool_of(1)
    with pytest.raises(KeyError):
        async with lease_user(pool, root=root):
            raise KeyError("boom")
    lease, _ = try_lease(pool, root=root)
    assert lease is not None and lease.held
    lease.release()
    assert not lease.held
    lease.release()  # idempotent


def fake_proc(tmp_path: Path, uids: dict[int, int]) -> Path:
    """A /proc with one ``status`` per pid: ``pid -> uid`` (saved uid only, the rest 0)."""
    proc = tmp_path / "proc"
    for pid, uid in uids.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "status").write_text(f"Name:\tx\nUid:\t0\t0\t{uid}\t0\nGid:\t0\n")
    (proc / "self").mkdir(parents=True, exist_ok=True)
    return proc


async def test_a_user_whose_uid_still_runs_a_process_is_not_handed_out(
    root: Path, tmp_path: Path
) -> None:
    """A killed runner's leftover as hw-test-0 (its saved uid): the lease takes hw-test-1.

    Seen red with the `uid_processes` look taken out of `try_lease`: hw-test-0 is handed out.
    """
    proc = fake_proc(tmp_path, {4242: FREE_UID})
    pool = pool_of(2)
    lease, strays = try_lease(pool, root=root, proc=proc)
    assert lease is not None and lease.user.name == "hw-test-1"
    assert strays == {"hw-test-0": [4242]}
    lease.release()
    with anyio.fail_after(DEADLINE_S):
        async with lease_user(pool, root=root, proc=proc) as user:
            assert user is not None and user.name == "hw-test-1"


async def test_only_leftovers_in_the_way_end_the_wait_with_the_pids(
    root: Path, tmp_path: Path
) -> None:
    proc = fake_proc(tmp_path, {4242: FREE_UID, 4343: FREE_UID + 1})
    with anyio.fail_after(DEADLINE_S), pytest.raises(SessionUserUnusable) as caught:
        async with lease_user(pool_of(2), root=root, proc=proc, poll_s=0.01,
                              stray_bound_s=0.1):  # fmt: skip
            pytest.fail("a user with a process was handed out")
    assert "hw-test-0: pids 4242" in caught.value.detail
    assert "hw-test-1: pids 4343" in caught.value.detail
    assert "end those processes" in caught.value.fix


def test_hold_lease_gives_up_after_its_bound_with_pool_busy(root: Path) -> None:
    pool = pool_of(1)
    with hold_lease(pool, root=root) as held:
        assert held is not None
        with pytest.raises(PoolBusy) as caught, hold_lease(pool, root=root, timeout_s=0.2,
                                                           poll_s=0.01):  # fmt: skip
            pytest.fail("a leased user was handed out twice")
    assert caught.value.users == 1
    assert "make session-user" in caught.value.fix
    with hold_lease(pool, root=root, timeout_s=0) as again:
        assert again == held


async def test_no_pool_is_no_lease(root: Path) -> None:
    """A runner that is not root has no pool: its sandboxes run as itself."""
    async with lease_user(None, root=root) as user:
        assert user is None


def test_no_pool_is_no_lease_for_synchronous_callers_either(root: Path) -> None:
    with hold_lease(None, root=root) as held:
        assert held is None
    assert not root.exists()  # nothing made


def test_the_lock_is_never_inherited_and_its_directory_is_private(root: Path) -> None:
    lease, _ = try_lease(pool_of(1), root=root)
    assert lease is not None
    try:
        lock_fds = [fd for fd in map(int, os.listdir("/proc/self/fd"))
                    if _target(fd).startswith(str(root))]  # fmt: skip
        assert len(lock_fds) == 1
        assert not os.get_inheritable(lock_fds[0])
    finally:
        lease.release()
    assert root.stat().st_mode & 0o777 == 0o700
    assert (root / "hw-test-0.lock").stat().st_mode & 0o777 == 0o600


def _target(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # listdir's own descriptor, closed since
        return ""


def test_a_lease_directory_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "leases").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SessionUserUnusable, match="not a directory of the runner's"):
        try_lease(pool_of(1), root=tmp_path / "run" / "leases")


def test_a_lock_file_that_is_a_symlink_is_refused_and_never_followed(
    root: Path, tmp_path: Path
) -> None:
    """Seen red without ``O_NOFOLLOW``: the lock is taken on the symlink's target, created."""
    lease, _ = try_lease(pool_of(1), root=root)  # makes the directory and the lock file
    assert lease is not None
    lease.release()
    (root / "hw-test-0.lock").unlink()
    (root / "hw-test-0.lock").symlink_to(tmp_path / "target")
    with pytest.raises(SessionUserUnusable, match="cannot open the lease of hw-test-0"):
        try_lease(pool_of(1), root=root)
    assert not (tmp_path / "target").exists()


def test_uid_processes_finds_this_process_and_no_made_up_uid() -> None:
    assert os.getpid() in uid_processes(os.getuid())
    assert uid_processes(FREE_UID) == []


@pytest.mark.parametrize("position", [0, 1, 2, 3])
def test_uid_processes_counts_the_uid_in_any_of_the_four_places(tmp_path: Path,
                                                                position: int) -> None:
    """proc(5): ``Uid:`` is real, effective, saved, filesystem; any one is the uid's process.
    A uid that only shares digits with it (its prefix, or it with a digit more) is not.
    Seen red with the first word skipped (the real uid missed)."""
    proc = tmp_path / "proc"
    words = ["0", "0", "0", "0"]
    words[position] = str(FREE_UID)
    for pid, line in ((20, "\t".join(words)), (21, f"{FREE_UID}0\t0\t0\t0"),
                      (22, f"{str(FREE_UID)[:-1]}\t0\t0\t0")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "status").write_text(f"Name:\tx\nState:\tS (sleeping)\nUid:\t{line}\n")
    assert uid_processes(FREE_UID, proc) == [20]


def test_a_lease_waits_for_its_uids_keys_before_it_is_released(tmp_path: Path) -> None:
    """Seen red without `Lease.settle`: the key quota test of tests/integration."""
    proc = tmp_path / "proc"
    proc.mkdir()
    keys = proc / "key-users"
    keys.write_text(f"    0:     9 8/8 3/1000000 48/25000000\n{FREE_UID}:   201 201/201 200/200 "
                    "16285/20000\n")
    assert uid_keys(FREE_UID, proc) == 201
    assert uid_keys(FREE_UID + 1, proc) == 0
    user = SessionUser("hw-test-0", FREE_UID, FREE_UID)
    lease = Lease(user, os.open(tmp_path, os.O_RDONLY), keys=0, proc=proc)
    assert lease.settle(0.2) is False  # still held: bounded, then said
    keys.write_text("    0:     9 8/8 3/1000000 48/25000000\n")
    assert lease.settle(0.2) is True
    lease.release()


def test_a_zombie_of_the_uid_does_not_hold_its_user(tmp_path: Path) -> None:
    """bwrap's pid 1 lingers as a zombie under the host's init after each sandbox; it holds
    nothing the kernel counts per uid, so it must not keep its user from the next lease.
    Seen red with the ``State`` line ignored: the zombie's pid is listed."""
    proc = tmp_path / "proc"
    for pid, state, uid in ((10, "Z (zombie)", FREE_UID), (11, "S (sleeping)", FREE_UID + 1),
                            (12, "X (dead)", FREE_UID)):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "status").write_text(
            f"Name:\tbwrap\nState:\t{state}\nTgid:\t{pid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    assert uid_processes(FREE_UID, proc) == []
    assert uid_processes(FREE_UID + 1, proc) == [11]
    child = subprocess.Popen(["/bin/true"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/status").read_text().split("State:")[1].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child never became a zombie"
        time.sleep(0.01)
    try:
        assert child.pid not in uid_processes(os.getuid())
    finally:
        child.wait()
