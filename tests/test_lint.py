"""The code style gate: ruff over everything (tests/fixtures excepted) and mypy --strict over
the packages and the tests, as configured in pyproject.toml. Both tools come with
the ``test`` extra."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

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


def test_the_package_boundaries_hold() -> None:
    """pyproject.toml's import contracts: campaign over recorder over sandbox, the scripted
    provider reached only from ``campaign.cli``, a package's private modules (``pkg._x``)
    imported only from inside ``pkg``, so its ``__init__`` is the one way in, no import
    cycle among sandbox's subpackages and modules (``TYPE_CHECKING`` imports included), and
    campaign's packages in layers (cli; report, doctor, supervisor; batch; seal; plan;
    corpus: each imports only those below it)."""
    lint = Path(sys.executable).parent / "lint-imports"
    run = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True,
                         timeout=600, check=False)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(" KEPT") == 7, run.stdout  # all seven contracts were read


ISSUE_NUMBER = re.compile(r"\bissues? #?\d+|\(issue[:)]", re.IGNORECASE)
"""A tracker's issue number: the tracker is not in the repository, so code, tests and docs
name the rule or the behaviour instead."""


def test_nothing_in_the_repository_cites_an_issue_number() -> None:
    found = []
    for path in sorted(_sources()):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if ISSUE_NUMBER.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert found == [], "\n".join(found)


_NOT_SOURCES: Final = frozenset({".git", ".venv", ".harness", "batches", "fixtures",
                                 "node_modules", "__pycache__", "build", "dist"})


def _sources() -> list[Path]:
    """The repository's code and docs: Python, Markdown, TOML, templates, the Makefile."""
    out = []
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in _NOT_SOURCES and not d.endswith(".egg-info")]
        out += [Path(root) / f for f in files
                if f.endswith((".py", ".md", ".toml", ".j2")) or f == "Makefile"]
    assert any(p.name == "_transform.py" for p in out)  # the walk saw the packages
    return out
