"""Per-sandbox limits under the real bwrap (sandbox.cgroup._limits, _cgroup_limits, _watch).

Each test runs a small /usr/bin/python3 program in a sandbox made by
`open_confined` with one limit set low, does what passes it, and checks what
the rules say: the kernel refuses (a fork, memory, a write to /tmp), the
watch names the limit and ends the sandbox at once, and nothing of the
sandbox's cgroups is left afterwards. Without limits nothing is watched.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox._capture import Run, capture
from sandbox._layout import measure_host_layout
from sandbox.cgroup import LimitHit, Limits, MiB, find_cgroups
from sandbox.cgroup._watch import MAX_WALK_DEPTH, LimitWatch
from sandbox.confined import ConfinedSpec, open_confined
from sandbox.users import session_user
from tests.standin import STANDIN_PYTHON

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap, pytest.mark.timeout(60)]

FORKS = """
import os, time
n = 0
try:
    while n < 2000:
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
except OSError as exc:
    print("refused after", n, exc.errno, flush=True)
time.sleep(30)
"""
MEMORY = """
import time
held = []
for _ in range(1024):
    held.append(bytearray(1024 * 1024))
print("held 1 GiB", flush=True)
time.sleep(30)
"""
TMP = """
import os, time
chunk = b"x" * (1024 * 1024)
n = 0
try:
    with open("/tmp/fill", "wb") as f:
        while n < 1024:
            f.write(chunk); f.flush(); n += 1
except OSError as exc:
    print("refused after", n, exc.errno, flush=True)
time.sleep(30)
"""
WRITES = """
import os, sys, time
with open("big", "wb") as f:
    for _ in range(int(sys.argv[1])):
        f.write(b"x" * (1024 * 1024))
    f.flush(); os.fsync(f.fileno())
time.sleep(float(sys.argv[2]))
"""
NOFILE = """
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1, hard + 1))
    raised = "raised"
except (ValueError, OSError):
    raised = "kept"
print(soft, hard, raised)
"""


def _spec(code: str, limits: Limits, *args: str, **changes: object) -> ConfinedSpec:
    fields: dict[str, object] = {
        "command": [STANDIN_PYTHON, "-c", code, *args], "executable": Path(STANDIN_PYTHON),
        "network": "host", "env": {"PATH": "/usr/bin:/bin"}, "layout": measure_host_layout(),
        "user": session_user(), "limits": limits, "name": "t-limits",
    }
    fields.update(changes)
    return ConfinedSpec(**fields)  # type: ignore[arg-type]


def _leftover_cgroups() -> list[str]:
    """Cgroups (v2 and the limits' v1 ones) of this module's sandboxes still on the host."""
    host = find_cgroups()
    homes = [h.base for h in (host.v2, *host.limits.values()) if h is not None]
    found = []
    for base in homes:
        if base.is_dir():
            found += [str(base / n) for n in os.listdir(base) if "-t-limits-" in n]
    return found


async def _run(spec: ConfinedSpec, *, timeout_s: float = 40) -> tuple[Run, LimitHit | None]:
    async with open_confined(spec) as sandbox:
        run = await capture(sandbox.child, timeout_s=timeout_s)
    assert _leftover_cgroups() == []
    return run, sandbox.limit_hit


async def test_a_fork_bomb_is_refused_at_the_process_limit_and_the_sandbox_ended(
        bwrap: str) -> None:
    with anyio.fail_after(50):
        run, hit = await _run(_spec(FORKS, Limits(pids=64)))
    assert hit is not None and hit.limit == "processes", (run, hit)
    assert "more than 64 processes" in hit.detail
    assert "refused after" in run.stdout and int(run.stdout.split()[2]) < 64
    assert run.returncode == -9  # ended by the watch, not by its 30 s sleep


async def test_memory_past_the_limit_is_an_oom_kill_and_named(bwrap: str) -> None:
    with anyio.fail_after(50):
        run, hit = await _run(_spec(MEMORY, Limits(memory_bytes=64 * MiB)))
    assert hit is not None and hit.limit == "memory", (run, hit)
    assert "64 MiB of memory" in hit.detail and "held 1 GiB" not in run.stdout


async def test_a_full_tmp_is_refused_by_its_size_and_named(bwrap: str) -> None:
    with anyio.fail_after(50):
        run, hit = await _run(_spec(TMP, Limits(tmp_bytes=16 * MiB)))
    assert hit is not None and hit.limit == "tmp", (run, hit)
    assert "refused after 16 28" in run.stdout or "refused after 15 28" in run.stdout, run
    assert "/tmp of 16 MiB" in hit.detail


async def test_writes_past_the_limit_end_the_sandbox_while_it_runs(bwrap: str) -> None:
    with anyio.fail_after(50):
        run, hit = await _run(_spec(WRITES, Limits(write_bytes=8 * MiB), "64", "30"))
    assert hit is not None and hit.limit == "writes", (run, hit)
    assert "over its 8 MiB" in hit.detail and run.returncode == -9


class _Ended:
    """A session cgroup after its end, as the watch's last look sees it."""

    path = Path("/nonexistent/t-limits")
    groups = ()
    final_events: dict[str, int] = {}  # noqa: RUF012


def test_writes_made_between_two_walks_are_seen_after_the_sandbox(tmp_path: Path) -> None:
    """A session that wrote just before it exited is still held to its limit: the walk once
    it is over (`check_after`) sees what the walks while it ran could not."""
    ws = tmp_path / "ws"
    ws.mkdir()
    watch = LimitWatch(Limits(write_bytes=MiB), _Ended(), [ws], 0)  # type: ignore[arg-type]
    (ws / "small").write_bytes(b"x" * 1024)
    assert watch.check_after() is None
    (ws / "big").write_bytes(b"x" * 2 * MiB)
    hit = watch.check_after()
    assert hit is not None and hit.limit == "writes" and "over its 1 MiB" in hit.detail


def test_empty_files_count_a_block_each_against_the_writes_limit(tmp_path: Path) -> None:
    """docs/session-reach.md "Limits": an entry with fewer allocated bytes than a block counts
    one block (`MIN_ENTRY_BYTES`), since its inode is the host's: 300 empty files pass a
    1 MiB limit. Red counting blocks alone: they cost no block (the directory's one 4 KiB
    block holds their names), and 300,000 of them cost 4.9 MB, a limit of 16 MiB
    untouched, 300,000 of the host's inodes taken."""
    ws = tmp_path / "ws"
    ws.mkdir()
    watch = LimitWatch(Limits(write_bytes=MiB), _Ended(), [ws], 0)  # type: ignore[arg-type]
    for n in range(300):
        (ws / str(n)).touch()
    hit = watch.check_after()
    assert hit is not None and hit.limit == "writes" and "over its 1 MiB" in hit.detail


async def test_directories_nested_past_the_walk_pass_the_writes_limit(bwrap: str) -> None:
    nest = f"import os\nos.makedirs('/'.join(['d'] * {MAX_WALK_DEPTH + 2}))\n"
    with anyio.fail_after(50):
        _, hit = await _run(_spec(nest, Limits(write_bytes=64 * MiB)))
    assert hit is not None and hit.limit == "writes" and "nested" in hit.detail


async def test_open_files_is_a_hard_limit_inside(bwrap: str) -> None:
    with anyio.fail_after(30):
        run, hit = await _run(_spec(NOFILE, Limits(open_files=200)))
    assert run.stdout.split() == ["200", "200", "kept"] and hit is None


async def test_a_caller_check_ends_the_sandbox(bwrap: str) -> None:
    seen = LimitHit("connections", "more than 1 connection at once")
    with anyio.fail_after(30):
        run, hit = await _run(_spec("import time; time.sleep(30)", Limits(),
                                    limit_checks=[lambda: seen]))  # fmt: skip
    assert hit == seen and run.returncode == -9


async def test_without_limits_nothing_is_watched(bwrap: str) -> None:
    with anyio.fail_after(30):
        async with open_confined(_spec("print('ok')", Limits())) as sandbox:
            run = await capture(sandbox.child, timeout_s=20)
    assert (run.stdout, sandbox.watch, sandbox.limit_hit) == ("ok\n", None, None)
