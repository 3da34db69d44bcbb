"""The sweeps judge a runner dead only when they can tell: pid namespaces (sandbox/_owner.py).

Rule (docs/confinement.md "The sweep and pid namespaces"): a runner's roots are named after
its tag ``<pid>.<start>.<ns>``; a sweep removes an entry only when the tag names this
runner's pid namespace and no process of that pid and start time runs. An entry of another
namespace is left, and logged; a name without a namespace (an older runner's) is of this
namespace, as before. Each sweep that judges a runner by its pid is given three fake
entries of a runner that is surely not running here (pid 4194305 is past PID_MAX_LIMIT):
one of this namespace (removed), one of another (left, logged), one of an older name
without a namespace (removed).

Seen red: `sandbox._owner.runner_state` without its namespace comparison (every sweep removed
the other namespace's entry).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from sandbox._owner import pid_namespace, runner_gone, runner_state, runner_tag
from sandbox._scratch import sweep_scratch
from sandbox.cgroup import find_cgroups, sweep_cgroups
from sandbox.network import _egress
from sandbox.storage import sweep_stores

OURS = os.stat("/proc/self/ns/pid").st_ino
"""This process's pid namespace, read here as namespaces(7) says, not through the module."""
OTHER = OURS + 1
"""A pid namespace this process is not in (inodes of one file system differ)."""
DEAD = "4194305.1"
"""No process has this pid (pids stop at 4194304, 64-bit Linux's PID_MAX_LIMIT)."""
TAGS = {"ours": f"{DEAD}.{OURS}", "elsewhere": f"{DEAD}.{OTHER}", "older": DEAD}


def test_a_tag_is_judged_by_its_namespace_first() -> None:
    assert pid_namespace() == OURS
    assert runner_state(TAGS["ours"]) == "gone" and runner_gone(TAGS["ours"])
    assert runner_state(TAGS["older"]) == "gone" and runner_gone(TAGS["older"])
    assert runner_state(TAGS["elsewhere"]) == "elsewhere" and not runner_gone(TAGS["elsewhere"])
    # A pid that runs here, but tagged with another namespace: not ours to judge either.
    pid, start, _ = runner_tag().split(".")
    assert runner_state(f"{pid}.{start}.{OTHER}") == "elsewhere"
    assert runner_state(runner_tag()) == "running"
    assert runner_state("not-a-tag") is None


def _entries(root: Path, name: str) -> dict[str, Path]:
    made = {kind: root / name.format(tag=tag) for kind, tag in TAGS.items()}
    for path in made.values():
        path.mkdir(parents=True)
    return made


def _assert_swept(made: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    assert not made["ours"].exists() and not made["older"].exists()
    assert made["elsewhere"].is_dir()
    assert any(str(made["elsewhere"]) in r.getMessage() and "another pid namespace" in
               r.getMessage() for r in caplog.records), caplog.text


@pytest.fixture
def caplog_info(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="sandbox._owner")
    return caplog


def test_the_store_sweep_leaves_another_namespaces_store(
        tmp_path: Path, caplog_info: pytest.LogCaptureFixture) -> None:
    made = _entries(tmp_path, "{tag}-abc123")
    removed = sweep_stores(tmp_path)
    assert sorted(removed) == sorted(p.resolve() for k, p in made.items() if k != "elsewhere")
    _assert_swept(made, caplog_info)


def test_the_config_sweep_leaves_another_namespaces_directory(
        tmp_path: Path, caplog_info: pytest.LogCaptureFixture) -> None:
    made = _entries(tmp_path, "{tag}-session-abcd")
    assert sorted(sweep_config_root(tmp_path)) == sorted(
        p for k, p in made.items() if k != "elsewhere")
    _assert_swept(made, caplog_info)


def test_the_egress_sweep_leaves_another_namespaces_socket_directory(
        tmp_path: Path, caplog_info: pytest.LogCaptureFixture) -> None:
    made = _entries(tmp_path, "{tag}-abcd")
    _egress._sweep(tmp_path)
    _assert_swept(made, caplog_info)


def test_the_scratch_sweep_leaves_another_namespaces_scratch(
        tmp_path: Path, caplog_info: pytest.LogCaptureFixture) -> None:
    made = _entries(tmp_path, "headwater-checker-{tag}-abc")
    sweep_scratch(tmp_path)
    _assert_swept(made, caplog_info)


def test_the_cgroup_sweep_leaves_another_namespaces_cgroup(
        caplog_info: pytest.LogCaptureFixture) -> None:
    host = find_cgroups()
    if host.v2 is None:
        pytest.skip("no cgroup v2 hierarchy")
    host.v2.base.mkdir(exist_ok=True)
    made = _entries(host.v2.base, "{tag}-t-ns-" + str(os.getpid()))
    try:
        sweep_cgroups(host)
        _assert_swept(made, caplog_info)
    finally:
        for path in made.values():
            if path.exists():
                path.rmdir()
