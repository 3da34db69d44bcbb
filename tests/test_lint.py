"""The code style gate: ruff over everything (tests/fixtures excepted) and mypy --strict over
the packages and the tests, as configured in pyproject.toml. Both tools come with
the ``test`` extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip


def test_ruff_finds_nothing() -> None:
    run = _tool("ruff", "check", "--output-format", "concise", ".")
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.timeout(600)
def test_mypy_strict_finds_nothing_in_the_packages_and_the_tests() -> None:
    run = _tool("mypy")  # the files of pyproject.toml's [tool.mypy]
    assert run.returncode == 0, run.stdout + run.stderr
