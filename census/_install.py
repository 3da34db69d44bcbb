"""A release of the harness installed for the census, beside the pinned one, never over it.

``npm install --prefix .harness-census/<release> --no-save @anthropic-ai/claude-code@<release>``
(the Makefile's recipe for the pin, into a directory of the release's own); the pinned
``.harness/`` is never touched. The installed release is checked from the package's own
``package.json``, never by running the CLI on the host (it runs only under bwrap).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Final

from recorder import parse_release

__all__ = ["CENSUS_HARNESS_DIR", "PACKAGE", "InstallFailed", "harness_of", "install_release"]

CENSUS_HARNESS_DIR: Final = ".harness-census"
"""Where the census installs its releases, one directory each, in the checkout."""
PACKAGE: Final = "@anthropic-ai/claude-code"
INSTALL_TIMEOUT_S: Final = 900.0


class InstallFailed(RuntimeError):
    """The release could not be installed: the message says why and what to do."""


def _installed(prefix: Path) -> str | None:
    try:
        meta = json.loads((prefix / "node_modules" / PACKAGE / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def npm_error_summary(stderr: str, *, lines: int = 6) -> str:
    """The head of npm's stderr, where it names the error (``npm error code ETARGET``,
    ``ECONNREFUSED``, ...), at most ``lines`` lines: its tail is a stack trace and a log path."""
    kept = [line for line in stderr.strip().splitlines() if line.strip()][:lines]
    return "\n".join(kept) if kept else "(npm printed nothing on stderr)"


def _discard(prefix: Path, fresh: bool) -> None:
    """Remove ``prefix`` when this install created it, so a failed install leaves no empty
    release directory behind (one there before, e.g. an earlier install, is left alone)."""
    if fresh:
        shutil.rmtree(prefix, ignore_errors=True)


def harness_of(prefix: Path) -> Path:
    """The CLI executable an install under ``prefix`` holds (``node_modules/.bin/claude``)."""
    return prefix / "node_modules" / ".bin" / "claude"


def install_release(release: str, *, root: Path, npm: str = "npm") -> Path:
    """Install ``release`` under ``root/.harness-census/<release>/`` unless it is there; return
    the CLI's path.

    Raises:
        InstallFailed: ``release`` is not ``MAJOR.MINOR.PATCH``, npm is missing or fails, or
            what it installed is another release.
    """
    if parse_release(release) is None:
        raise InstallFailed(f"{release!r} is not a release (MAJOR.MINOR.PATCH, e.g. 2.1.332)")
    prefix = root / CENSUS_HARNESS_DIR / release
    if _installed(prefix) == release and harness_of(prefix).exists():
        return harness_of(prefix)
    if shutil.which(npm) is None:
        raise InstallFailed("npm is missing: install Node.js and npm")
    fresh = not prefix.exists()
    prefix.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--prefix", str(prefix), "--no-save", "--no-audit", "--no-fund",
            "--loglevel=error", f"{PACKAGE}@{release}"]
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                             check=False)
    except subprocess.TimeoutExpired as exc:
        _discard(prefix, fresh)
        raise InstallFailed(f"npm install of {release} took over {INSTALL_TIMEOUT_S:.0f} s"
                            ) from exc
    if run.returncode != 0:
        _discard(prefix, fresh)
        raise InstallFailed(f"npm install of {PACKAGE}@{release} failed (status "
                            f"{run.returncode}): {npm_error_summary(run.stderr)}")
    got = _installed(prefix)
    if got != release or not harness_of(prefix).exists():
        raise InstallFailed(f"npm installed {got or 'nothing readable'} under {prefix}, "
                            f"not {release}")
    return harness_of(prefix)
