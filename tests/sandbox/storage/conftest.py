"""Fixtures of the store tests: a root runner with loop devices, or a failure under CI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import missing


def losetup_all() -> str:
    """``losetup -a`` as it prints: every attached loop device and its backing file."""
    return subprocess.run(["losetup", "-a"], capture_output=True, text=True, timeout=30,
                          check=True).stdout  # fmt: skip


def mountinfo_lines(under: Path) -> list[str]:
    """The lines of /proc/self/mountinfo whose mount point (field 5) names ``under``."""
    escaped = str(under).replace(" ", "\\040")
    return [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if line.split(" ")[4].startswith(escaped)]  # fmt: skip


@pytest.fixture
def loop_runner() -> None:
    """A root runner that can attach loop devices; fails (never skips) under CI=true."""
    if os.geteuid() != 0:
        missing("a root runner (a loop mount needs euid 0)")
    if not Path("/dev/loop-control").exists():
        missing("loop devices (/dev/loop-control)")


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    """A store root whose path holds a space (escaped as \\040 in mountinfo)."""
    return tmp_path / "store root"
