"""The code style gate: ruff over everything (tests/fixtures excepted) and mypy --strict over
the packages and the tests, as configured in pyproject.toml. Both tools come with
the ``test`` extra."""

from __future__ import annotations

import re
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


ISSUE_NUMBER = re.compile(r"\bissues? #?\d+|\(issue[:)]", re.IGNORECASE)
"""A tracker's issue number: the tracker is not in the repository, so code, tests and docs
name the rule or the behaviour instead."""


def test_nothing_in_the_repository_cites_an_issue_number() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=False, timeout=60)
    if tracked.returncode != 0:
        pytest.fail("could not verify: `git ls-files` failed (not a checkout?): "
                    + tracked.stderr.decode(errors="replace"))
    found = []
    for name in tracked.stdout.decode().split("\0"):
        if not name.endswith((".py", ".md", ".toml", ".j2", "Makefile")) or \
                name.startswith("tests/fixtures/"):
            continue
        path = REPO / name
        if not path.is_file():  # deleted in the work tree
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if ISSUE_NUMBER.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert found == [], "\n".join(found)
