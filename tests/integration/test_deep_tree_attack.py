"""A session cannot crash its runner, or every later runner of the host, with a deep tree.

Seen red before `sandbox._remove` (each case; the runner exited 1 with the traceback below),
green with it.

The runner removed what a session wrote with `shutil.rmtree`: its config directory
(`sandbox._config.remove_tree`, at the session's end and in the start-up sweep of killed
runners' directories) and the session's original log tree
(`sandbox.storage._reclaim.replace_with_copy`).
Python 3.11's `shutil.rmtree` recurses once per directory level, so a tree about a thousand
levels deep raised `RecursionError`, even with ``ignore_errors``, which is no `OSError`: it
went up through the supervisor, and the runner exited 1 ("unexpected error (a bug)"), ending
every session of the batch that ran beside it. The config directory stayed behind as the
session user's (its lease released meanwhile), and every later ``run``, ``record``, ``demo``
or ``doctor`` of the host swept it at start-up (its runner is dead) and died the same way,
before any session: one session stopped the host's recording until root removed it by hand.
`sandbox._remove.remove_tree` now walks with a stack of its own.

The writes walk (`sandbox.cgroup._watch`) ends a session that nests more than 64 levels, but only
when it next walks: the stand-in first makes the walk slow (30,000 empty files, about 120 MB
of the 512 MiB writes limit, so the next walk waits 20 times the 0.2 s it takes), waits with
inotify until a walk closed its config directory (the walk's last root), then nests 1,100
directories (a few hundredths of a second) with ``mkdirat``/``openat``.

Rules (docs/session-reach.md "After the session"; docs/confinement.md "Config directory
lifecycle"): the session's config directory is removed however the session ends, and its
log directory is replaced by the runner's copy; a session ends in a state of its own, never
as the runner's crash; the start-up sweep removes a killed runner's directories.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox._config import CONFIG_ROOT, sweep_config_root
from sandbox._scratch import sweep_killed_runners
from tests.integration import kit
from tests.integration.test_record_standins import SESSION, make_corpus, record

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

DEPTH = 1100
"""Levels the stand-in nests: above Python's recursion limit (1000) with room for the stack."""
FILES = 30_000
"""Empty files that make one writes walk take about 0.2 s (4 KiB each against the limit)."""
STANDIN = r'''#!/usr/bin/python3
"""Deep-tree stand-in of tests/integration/test_deep_tree_attack.py (its docstring says what)."""
import ctypes, os, sys
STREAM = b"STREAM_BYTES"
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (deep tree)"); sys.exit(0)
libc = ctypes.CDLL(None, use_errno=True)
IN_CLOSE_NOWRITE = 0x10
cfg = os.environ["HOME"]
where = os.environ[WHERE]
wide = os.path.join(os.getcwd(), "wide")
os.mkdir(wide)
for i in range(FILES):
    os.close(os.open(os.path.join(wide, str(i)), os.O_CREAT | os.O_WRONLY, 0o600))
ino = libc.inotify_init1(0)
libc.inotify_add_watch(ino, cfg.encode(), IN_CLOSE_NOWRITE)
os.read(ino, 4096)  # a walk just ended: the next is seconds away
top = os.open(where, os.O_RDONLY | os.O_DIRECTORY)
for _ in range(DEPTH):
    os.mkdir("d", dir_fd=top)
    fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=top)
    os.close(top)
    top = fd
view = memoryview(STREAM)
while view:
    view = view[os.write(1, view):]
'''


def _standin(where: str) -> str:
    return (STANDIN.replace('b"STREAM_BYTES"', repr(SESSION)).replace("WHERE", repr(where))
            .replace("FILES", str(FILES)).replace("DEPTH", str(DEPTH)))


def _rm(path: Path) -> None:
    """Remove ``path`` however deep (GNU rm walks with fts, not recursion)."""
    subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False, timeout=120)


def _dead_config_dirs(before: set[str]) -> list[Path]:
    """Config directories that appeared since ``before`` and whose runner is gone."""
    found = []
    for entry in CONFIG_ROOT.iterdir() if CONFIG_ROOT.is_dir() else ():
        pid = entry.name.split("-", 1)[0].split(".", 1)[0]  # <pid>.<start>.<ns>-...
        if entry.name in before or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            found.append(entry)
        except PermissionError:
            pass
    return found


@pytest.mark.parametrize("where", ["HOME", "HEADWATER_LOG_DIR"])
def test_a_session_that_nests_a_thousand_directories_ends_in_a_state_of_its_own(
        where: str, bwrap: str) -> None:
    before = {e.name for e in CONFIG_ROOT.iterdir()} if CONFIG_ROOT.is_dir() else set()
    with kit.host_dir("hw-deep-") as root:
        try:
            corpus = make_corpus(root / "corpus")
            harness = kit.write_harness(root / "claude", _standin(where))
            batch = root / "b"
            run = record(corpus, batch, harness, timeout=240)
            left = _dead_config_dirs(before)
            assert "unexpected error" not in run.stderr, run.stderr[-3000:]
            assert run.returncode in (0, 1), run.stdout + run.stderr[-3000:]
            (final,) = kit.final_list(batch)
            assert final["state"] == "limit-exceeded", final
            assert left == [], f"the session's config directory outlived it: {left}"
            assert not list((batch / "sessions").rglob(".log.session-*")), "old log tree left"
        finally:
            for stale in _dead_config_dirs(before):
                _rm(stale)
            _rm(root / "b")  # kit.host_dir's shutil.rmtree would hit the same recursion
            kit.kill_all(kit.processes_under(root))
            sweep_killed_runners()


def test_the_start_up_sweep_removes_a_killed_runners_deep_config_directory(
        tmp_path: Path) -> None:
    """What the crash above leaves, swept as every later runner's start-up sweeps it."""
    root = tmp_path / "cfg"
    root.mkdir()
    dead = root / "999999999-present-HW-PRB-0001-r1-abcdefgh"  # above pid_max: never alive
    dead.mkdir()
    (dead / ".credentials.json").write_text("{}")
    top = os.open(dead, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH):
        os.mkdir("d", dir_fd=top)
        fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=top)
        os.close(top)
        top = fd
    os.close(top)
    try:
        assert sweep_config_root(root) == [dead]
        assert not dead.exists()
    finally:
        _rm(root)
