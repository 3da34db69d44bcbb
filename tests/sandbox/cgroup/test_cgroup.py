"""Each sandbox in its own cgroup (sandbox/cgroup/_cgroup.py), and what a killed runner left.

Expected behaviour from the module's rule: everything the joined command
starts is in the cgroup, a double-forked daemon in a session of its own
included; ``end`` leaves nothing running and removes the cgroup; a sandbox
block, however it ends, leaves its cgroup empty and gone; the sweep ends the
cgroups and removes the scratch directories of runners that no longer run,
and leaves a live runner's alone. Where the hierarchies are is read from
/proc, so fake /proc files give every host shape.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox._capture import capture, run_bounded_sync
from sandbox._errors import ContainmentUnavailable
from sandbox._layout import measure_host_layout
from sandbox._owner import runner_alive, runner_tag
from sandbox._process import open_child
from sandbox._scratch import sweep_scratch
from sandbox.cgroup import (
    JOIN_FAILED_STATUS,
    Hierarchy,
    Limits,
    SessionCgroup,
    find_cgroups,
    open_session_cgroup,
    sweep_cgroups,
)
from sandbox.cgroup._cgroup_limits import ControllerGroup, enable_delegated, limit_groups
from sandbox.confined import ConfinedSpec, open_confined
from sandbox.users import session_user
from tests.conftest import missing
from tests.standin import STANDIN_PYTHON

DEAD_TAG = "4194305.1"
"""A runner tag no process can have: pids stop at 4194304 (PID_MAX_LIMIT, 64-bit Linux)."""
DAEMON = ("import os, sys, time\n"
          "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
          "        print(os.getpid(), flush=True); time.sleep(120)\n    os._exit(0)\n"
          "time.sleep(120)\n")  # fmt: skip
"""Prints the pid of a daemon (setsid, double fork, its own session) and sleeps beside it."""


def _fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    (tmp_path / "self").mkdir(parents=True)
    (tmp_path / "self" / "mountinfo").write_text(mountinfo)
    (tmp_path / "self" / "cgroup").write_text(cgroup)
    return tmp_path


def _line(point: Path | str, fstype: str, options: str) -> str:
    return f"31 23 0:28 / {point} rw,relatime - {fstype} {fstype} {options}\n"


def test_a_host_with_v2_for_membership_and_v1_controllers_for_limits(tmp_path: Path) -> None:
    """This host's shape: unified v2 with nothing delegated; pids and memory are v1."""
    unified = tmp_path / "unified"
    unified.mkdir()
    (unified / "cgroup.subtree_control").write_text("hugetlb\n")
    proc = _fake_proc(tmp_path / "proc",
                      _line("/sys/fs/cgroup", "tmpfs", "rw,mode=755")
                      + _line("/sys/fs/cgroup/pids", "cgroup", "rw,pids")
                      + _line("/sys/fs/cgroup/memory", "cgroup", "rw,memory")
                      + _line(unified, "cgroup2", "rw"),
                      "8:pids:/\n4:memory:/job/7\n0::/\n")  # fmt: skip
    host = find_cgroups(proc)
    assert host.v2 == Hierarchy(2, unified, "/")
    assert host.v2.base == unified / "headwater-campaign"
    assert host.limits == {"pids": Hierarchy(1, Path("/sys/fs/cgroup/pids"), "/"),
                           "memory": Hierarchy(1, Path("/sys/fs/cgroup/memory"), "/job/7")}


def test_a_v2_only_host_that_delegates_the_controllers(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    (root / "user.slice").mkdir(parents=True)
    (root / "user.slice" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    proc = _fake_proc(tmp_path / "proc", _line(root, "cgroup2", "rw,nsdelegate"),
                      "0::/user.slice\n")
    host = find_cgroups(proc)
    assert host.v2 == Hierarchy(2, root, "/user.slice")
    assert host.limits == {"pids": host.v2, "memory": host.v2}


def test_limits_on_a_v2_host_that_delegates_go_in_the_sessions_own_cgroup(
        tmp_path: Path) -> None:
    """Where v2 delegates pids and memory, the base enables them for its children and the
    session's own cgroup carries the limits (memory without swap); no v1 cgroup is made.
    Plain files stand in for kernfs (this host's v2 delegates neither)."""
    root = tmp_path / "cg"
    base = root / "user.slice" / "headwater-campaign"
    session = base / "4242.1-s-0000"
    session.mkdir(parents=True)
    (root / "user.slice" / "cgroup.subtree_control").write_text("memory pids\n")
    for name in ("cgroup.subtree_control", "pids.max", "memory.max", "memory.swap.max"):
        (base / name if name == "cgroup.subtree_control" else session / name).write_text("")
    host = find_cgroups(_fake_proc(tmp_path / "proc", _line(root, "cgroup2", "rw"),
                                   "0::/user.slice\n"))  # fmt: skip
    limits = Limits(pids=64, memory_bytes=256 * 1024 * 1024)
    enable_delegated(host, limits)
    groups = limit_groups(host, session, limits)
    assert [(g.controller, g.version, g.path) for g in groups] == [
        ("pids", 2, session), ("memory", 2, session)]
    assert (session / "pids.max").read_text() == "64"
    assert (session / "memory.max").read_text() == str(256 * 1024 * 1024)
    assert (session / "memory.swap.max").read_text() == "0"
    assert (base / "cgroup.subtree_control").read_text() == "+memory"  # the last write
    assert SessionCgroup(session, groups).join_argv()[6:] == [str(session / "cgroup.procs"), "--"]


def test_a_limit_without_a_controller_is_refused_before_anything_runs(tmp_path: Path) -> None:
    unified = tmp_path / "unified"
    (unified / "headwater-campaign" / "s").mkdir(parents=True)
    host = find_cgroups(_fake_proc(tmp_path / "proc", _line(unified, "cgroup2", "rw"), "0::/\n"))
    with pytest.raises(ContainmentUnavailable, match="no pids controller"):
        limit_groups(host, unified / "headwater-campaign" / "s", Limits(pids=8))


def test_a_host_without_cgroups_cannot_contain_a_sandbox(tmp_path: Path) -> None:
    host = find_cgroups(_fake_proc(tmp_path / "proc", _line("/", "ext4", "rw"), ""))
    assert (host.v2, host.limits) == (None, {"pids": None, "memory": None})
    with pytest.raises(ContainmentUnavailable, match="no cgroup v2"):
        open_session_cgroup(host, "x")


def _cgroup(label: str) -> SessionCgroup:
    try:
        return open_session_cgroup(find_cgroups(), label)
    except ContainmentUnavailable as exc:
        missing(f"a cgroup v2 hierarchy with cgroup.kill this runner may write ({exc})")
        raise


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.anyio
async def test_end_leaves_nothing_of_what_the_joined_command_started() -> None:
    cgroup = _cgroup("t-end")
    try:
        async with open_child([*cgroup.join_argv(), STANDIN_PYTHON, "-c", DAEMON]) as child:
            daemon = int((await child.read("stdout")).split()[0])
            members = {int(p) for p in (cgroup.path / "cgroup.procs").read_text().split()}
            assert {child.pid, daemon} <= members and cgroup.populated()
            assert await cgroup.end() is True
            assert not _alive(daemon) and not cgroup.path.exists()
    finally:
        await cgroup.end()


def test_a_join_that_cannot_enter_its_cgroup_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = ["/bin/sh", "-c", JOIN_SCRIPT_FOR_TEST, "headwater-join", "-", "-",
            str(tmp_path / "gone" / "cgroup.procs"), "--", "/bin/touch", str(marker)]  # fmt: skip
    run = run_bounded_sync(argv, timeout_s=10)
    assert run.returncode == JOIN_FAILED_STATUS, run.stderr
    assert not marker.exists()


def test_the_join_sets_the_file_size_limit_soft_and_hard_in_whole_512_byte_blocks() -> None:
    """A non-root runner's writes bound per file (docs/storage.md): ``RLIMIT_FSIZE`` as asked,
    rounded up to dash's 512-byte ``ulimit -f`` blocks, soft and hard, so nothing raises it."""
    cgroup = SessionCgroup(Path("/unused"))
    assert cgroup.join_argv(file_bytes=1000)[4:6] == ["-", "2"]
    assert cgroup.join_argv(open_files=9)[4:6] == ["9", "-"]
    argv = ["/bin/sh", "-c", JOIN_SCRIPT_FOR_TEST, "headwater-join", "-",
            cgroup.join_argv(file_bytes=3 * 512)[5], "--", STANDIN_PYTHON, "-c",
            "import resource; print(*resource.getrlimit(resource.RLIMIT_FSIZE))"]  # fmt: skip
    run = run_bounded_sync(argv, timeout_s=10)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(3 * 512)] * 2
    with pytest.raises(ValueError, match="file_bytes"):
        cgroup.join_argv(file_bytes=0)


JOIN_SCRIPT_FOR_TEST = SessionCgroup(Path("/unused")).join_argv()[2]
CUT_AND_DETACH = """\
import os, signal, time
for entry in os.listdir("/proc"):  # the lifeline's watcher: the init shell's reader
    if entry.isdigit() and int(entry) not in (1, os.getpid()):
        try:
            cmdline = open("/proc/%s/cmdline" % entry, "rb").read()
        except OSError:
            continue
        if b"headwater-init" in cmdline:
            os.kill(int(entry), signal.SIGKILL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(120)
    os._exit(0)
"""
"""Kills the lifeline's watcher, leaves a daemon in a session of its own, and exits 0."""


@pytest.mark.bwrap
@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_sandbox_that_cut_its_lifeline_leaves_nothing_when_its_block_ends(
    bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command kills the lifeline's watcher and leaves a daemon: at the block's end the
    cgroup is empty and gone (`contained`), whatever the other ties would have done later.

    The cgroup on its own: the command runs outside the Landlock domain that would refuse
    it the watcher's kill (`sandbox._landlock`)."""
    monkeypatch.setattr("sandbox.confined._command.scoped_command", lambda command: list(command))
    code = CUT_AND_DETACH
    spec = ConfinedSpec(command=[STANDIN_PYTHON, "-c", code], executable=Path(STANDIN_PYTHON),
                        network="host", env={"PATH": "/usr/bin:/bin"}, bwrap=bwrap,
                        layout=measure_host_layout(), user=session_user(),
                        name="t-cut")  # fmt: skip
    async with open_confined(spec) as sandbox:
        run = await capture(sandbox.child, timeout_s=30)
        cgroup = sandbox.cgroup.path
    assert run.returncode == 0, run.stderr
    assert sandbox.contained and not await anyio.Path(cgroup).exists()
    assert [p for p in os.listdir("/proc") if p.isdigit() and _in(int(p), cgroup)] == []


@pytest.mark.bwrap
@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_sandbox_whose_cgroup_did_not_empty_has_nothing_reclaimed(
    bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the kill (`Sandbox.contained`): when the cgroup's end reports a process left, the
    sandbox's workspace is not reclaimed, since something may still write it: the file the
    command made stays as it left it (its owner, mode 0600), where a reclaim makes every file
    the runner's, 0644 (`sandbox.storage._reclaim`). Seen red with the reclaim run whatever
    ``contained`` says (the file became root's, 0644)."""
    original = SessionCgroup.end

    async def end(self: SessionCgroup, **kwargs: float) -> bool:
        await original(self, **kwargs)
        return False  # as if a process had outlived the bound

    monkeypatch.setattr(SessionCgroup, "end", end)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    user = session_user()
    code = "import os\nos.close(os.open('made', os.O_CREAT | os.O_WRONLY, 0o600))\n"
    spec = ConfinedSpec(command=[STANDIN_PYTHON, "-c", code], executable=Path(STANDIN_PYTHON),
                        network="host", env={"PATH": "/usr/bin:/bin"}, bwrap=bwrap,
                        layout=measure_host_layout(), user=user, workspace=workspace,
                        workspace_mount="/ws", name="t-uncontained")  # fmt: skip
    async with open_confined(spec) as sandbox:
        run = await capture(sandbox.child, timeout_s=30)
    assert run.returncode == 0, run.stderr
    assert sandbox.contained is False
    made = os.lstat(workspace / "made")
    assert (made.st_uid, made.st_mode & 0o7777) == (user.uid if user else os.getuid(), 0o600)


def _in(pid: int, cgroup: Path) -> bool:
    try:
        return cgroup.name in Path(f"/proc/{pid}/cgroup").read_text() and _alive(pid)
    except OSError:
        return False


@pytest.mark.anyio
async def test_the_sweep_ends_a_dead_runners_cgroups_and_leaves_a_live_ones() -> None:
    live = _cgroup("t-live")
    host = find_cgroups()
    assert host.v2 is not None
    dead = host.v2.base / f"{DEAD_TAG}-t-dead-0000"
    dead.mkdir()
    try:
        async with open_child([*SessionCgroup(dead).join_argv(), STANDIN_PYTHON, "-c",
                               DAEMON]) as child:  # fmt: skip
            daemon = int((await child.read("stdout")).split()[0])
            removed = await anyio.to_thread.run_sync(sweep_cgroups, host)
            assert dead in removed and live.path not in removed
            assert not _alive(daemon) and not await anyio.Path(dead).exists()
            assert await anyio.Path(live.path).exists()
    finally:
        await SessionCgroup(dead).end()
        await live.end()


@pytest.mark.anyio
async def test_the_sweep_removes_a_dead_runners_limit_cgroups_in_v1_too() -> None:
    """A runner killed with sessions that had v1 pids and memory cgroups: the next start ends
    the session (its v2 cgroup) and removes those too; nothing of it is left."""
    host = find_cgroups()
    assert host.v2 is not None
    homes = [h for h in host.limits.values() if h is not None and h.version == 1]
    if not homes:
        missing("v1 pids or memory hierarchies (this host's shape)")
    name = f"{DEAD_TAG}-t-dead-limits-0000"
    dead = host.v2.base / name
    dead.mkdir()
    groups = []
    for home in homes:
        home.base.mkdir(exist_ok=True)
        (home.base / name).mkdir()
        groups.append(ControllerGroup("pids" if "pids" in str(home.mount) else "memory", 1,
                                      home.base / name, 1 << 30))
    cgroup = SessionCgroup(dead, groups)
    try:
        async with open_child([*cgroup.join_argv(), STANDIN_PYTHON, "-c", DAEMON]) as child:
            daemon = int((await child.read("stdout")).split()[0])
            removed = await anyio.to_thread.run_sync(sweep_cgroups, host)
            assert {dead, *(g.path for g in groups)} <= set(removed)
            assert not _alive(daemon)
            assert not [g.path for g in groups if g.path.exists()]
    finally:
        await cgroup.end()


def test_the_sweep_removes_a_dead_runners_scratch_and_keeps_the_rest(tmp_path: Path) -> None:
    names = {"dead": f"headwater-checker-{DEAD_TAG}-abc", "dead-pid-only": "headwater-x-4194305-d",
             "live": f"headwater-checker-{runner_tag()}-def", "untagged": "headwater-checker-9ab",
             "other": f"pytest-{DEAD_TAG}-x"}  # fmt: skip
    for name in names.values():
        (tmp_path / name / "workspace").mkdir(parents=True)
    removed = sweep_scratch(tmp_path)
    assert sorted(p.name for p in removed) == sorted([names["dead"], names["dead-pid-only"]])
    assert sorted(os.listdir(tmp_path)) == sorted([names["live"], names["untagged"],
                                                   names["other"]])  # fmt: skip


def test_a_runner_tag_names_one_process_for_good() -> None:
    tag = runner_tag()
    pid, start, namespace = tag.split(".")
    assert int(namespace) == os.stat("/proc/self/ns/pid").st_ino  # its pid namespace
    assert (int(pid), runner_alive(tag), runner_alive(pid)) == (os.getpid(), True, True)
    assert runner_alive(f"{pid}.{start}")  # an older tag, without the namespace
    assert not runner_alive(f"{pid}.{int(start) + 1}.{namespace}")  # the same pid, later
    assert not runner_alive(DEAD_TAG) and not runner_alive("not-a-tag")


def test_concurrent_first_asks_sweep_a_base_once_and_all_wait_for_that_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sweep_once (sandbox.cgroup._cgroup): one sweep per process and base; a sandbox opened
    meanwhile in another thread waits until it is done, so no leftover outlives its start."""
    import threading
    import time

    from sandbox.cgroup import _cgroup
    from sandbox.cgroup._hierarchy import CgroupHost, Hierarchy

    host = CgroupHost(v2=Hierarchy(2, tmp_path / "fresh-mount", "/"))
    sweeps: list[tuple[float, float]] = []

    def slow_sweep(base: Path) -> list[Path]:
        started = time.monotonic()
        time.sleep(0.3)
        sweeps.append((started, time.monotonic()))
        return []

    monkeypatch.setattr(_cgroup, "_sweep", slow_sweep)
    returned: list[float] = []

    def ask() -> None:
        _cgroup.sweep_once(host)
        returned.append(time.monotonic())

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(sweeps) == 1 and len(returned) == 3
    assert all(at >= sweeps[0][1] for at in returned)  # none went on before the sweep ended
    _cgroup.sweep_once(host)
    assert len(sweeps) == 1  # asked again later: not swept again
