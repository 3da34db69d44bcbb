"""Shared fixtures: the trio backend, and the rule that real parts never skip under CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
HARNESS = REPO / ".harness" / "node_modules" / ".bin" / "claude"
IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(params=[pytest.param("trio", id="trio")])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Production backend only; backend-neutral modules parametrise asyncio themselves."""
    return str(request.param)


def missing(what: str) -> None:
    """Fail under CI=true, skip elsewhere: a real part that is absent is never a pass."""
    if IN_CI:
        pytest.fail(f"{what} is missing and CI=true: integration tests never skip in CI")
    pytest.skip(f"{what} is missing")


def _bwrap_works() -> bool:
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    probe = subprocess.run(
        [exe, "--ro-bind", "/", "/", "--unshare-user", "--unshare-pid", "--proc", "/proc", "true"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.fixture(scope="session")
def bwrap() -> str:
    """Path of a working bwrap (user namespaces usable); fails under CI when absent."""
    if not _bwrap_works():
        missing("bwrap with unprivileged user namespaces")
    exe = shutil.which("bwrap")
    assert exe is not None
    return exe


@pytest.fixture(scope="session")
def harness() -> Path:
    """The pinned Claude Code CLI that `make` installs under .harness/; fails under CI if absent."""
    if not HARNESS.exists():
        missing(f"the pinned Claude Code CLI ({HARNESS}; run `make harness`)")
    return HARNESS.resolve()


def python_child(code: str) -> list[str]:
    """argv for a throwaway unbuffered child running ``code``."""
    return [sys.executable, "-u", "-c", code]
