"""The harness's version as config.yaml records it: the first line of ``--version``, bounded."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pathlib import Path

HARNESS_VERSION_TIMEOUT_S: Final = 30.0
"""Bound on ``harness --version`` (the pinned CLI answers in about a second)."""
HARNESS_VERSION_CHARS: Final = 200
"""The most of ``harness --version``'s first line config.yaml keeps (2.1.197 prints 21)."""


def harness_version_of(harness: Path) -> str:
    """The first line of ``harness --version``, at most `HARNESS_VERSION_CHARS` characters.

    Bounded: a harness that prints more (a stand-in that ignores its
    arguments printed a 70 MB line here) must not bloat config.yaml, whose
    pure-Python YAML emitter then took 90 s for it. A harness that cannot run
    gives ``unknown (why)``.
    """
    try:
        out = subprocess.run([str(harness), "--version"], capture_output=True, text=True,
                             errors="replace", timeout=HARNESS_VERSION_TIMEOUT_S,
                             env={"PATH": "/usr/bin:/bin"}, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = out.stdout.strip().splitlines()
    if not lines:
        return f"unknown (exit {out.returncode})"
    first = lines[0].strip()
    cut = len(first) > HARNESS_VERSION_CHARS or len(lines) > 1
    return first[:HARNESS_VERSION_CHARS] + (" [cut]" if cut else "")
