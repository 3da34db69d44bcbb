"""config.yaml's harness version: the first line of ``--version``, bounded (campaign/_commands)."""

from __future__ import annotations

from pathlib import Path

from campaign.batch._harness import HARNESS_VERSION_CHARS
from campaign.batch._harness import harness_version_of as _harness_version


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "claude"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_the_pinned_clis_answer_is_kept_as_printed(tmp_path: Path) -> None:
    assert _harness_version(_script(tmp_path, "echo '2.1.197 (Claude Code)'\n")) == (
        "2.1.197 (Claude Code)")


def test_a_harness_that_prints_a_stream_keeps_one_bounded_line(tmp_path: Path) -> None:
    """A stand-in that ignores --version printed a 70 MB stream into config.yaml."""
    harness = _script(tmp_path, "echo first; head -c 5000000 /dev/zero | tr '\\0' a; echo\n")
    assert _harness_version(harness) == "first [cut]"
    long_line = _script(tmp_path, "head -c 5000 /dev/zero | tr '\\0' b; echo\n")
    assert _harness_version(long_line) == "b" * HARNESS_VERSION_CHARS + " [cut]"


def test_a_harness_that_prints_nothing_is_unknown(tmp_path: Path) -> None:
    assert _harness_version(_script(tmp_path, "exit 3\n")) == "unknown (exit 3)"
