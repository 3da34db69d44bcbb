"""The census's install of a release: what a failed npm install tells the user and leaves behind."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from census import InstallFailed, install_release

# What npm 10 prints when the registry cannot be reached: the code first, then a stack trace
# and the log's path (abridged from a run with npm_config_registry naming a closed port).
_NPM_OFFLINE = """npm error code ECONNREFUSED
npm error syscall connect
npm error errno ECONNREFUSED
npm error FetchError: request to http://127.0.0.1:9/@anthropic-ai%2fclaude-code failed
""" + "".join(f"npm error     at frame{i} (node:internal/x.js:{i}:1)\n" for i in range(60)) + (
    "npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log\n")


def _fake_npm(tmp_path: Path, stderr: str, status: int) -> Path:
    """An executable standing in for npm: prints ``stderr`` on stderr, exits ``status``."""
    (tmp_path / "stderr.txt").write_text(stderr)
    npm = tmp_path / "npm"
    npm.write_text(f"#!/bin/sh\ncat {tmp_path / 'stderr.txt'} >&2\nexit {status}\n")
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    return npm


def test_a_failed_install_names_npms_error_and_leaves_no_release_directory(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    npm = _fake_npm(tmp_path, _NPM_OFFLINE, 1)
    with pytest.raises(InstallFailed) as raised:
        install_release("2.1.250", root=root, npm=str(npm))
    message = str(raised.value)
    # The error's name is what says what to do (a registry that cannot be reached), not the
    # stack trace's last frames or the log's path.
    assert "npm error code ECONNREFUSED" in message
    assert "frame59" not in message
    assert not (root / ".harness-census" / "2.1.250").exists()


def test_a_failed_install_keeps_a_release_directory_that_was_there_before(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    earlier = root / ".harness-census" / "2.1.250"
    earlier.mkdir(parents=True)
    (earlier / "kept").write_text("")
    npm = _fake_npm(tmp_path, "npm error code ETARGET\n", 1)
    with pytest.raises(InstallFailed, match="ETARGET"):
        install_release("2.1.250", root=root, npm=str(npm))
    assert (earlier / "kept").exists()
