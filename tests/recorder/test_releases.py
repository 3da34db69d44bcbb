"""The census's covered releases and the pin (docs/census.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recorder import COVERED_RELEASES, PINNED_RELEASE, coverage, parse_release

ROOT = Path(__file__).resolve().parents[2]


def test_the_makefile_pins_the_release_the_recorder_names() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^HARNESS_VERSION := (\S+)$", makefile, re.MULTILINE)
    assert match is not None
    assert match.group(1) == PINNED_RELEASE


def test_the_pin_is_covered_and_the_releases_run_oldest_first() -> None:
    assert PINNED_RELEASE in COVERED_RELEASES
    parsed = [parse_release(release) for release in COVERED_RELEASES]
    assert None not in parsed
    assert parsed == sorted(parsed)  # type: ignore[type-var]


@pytest.mark.parametrize(("version", "expected"), [
    ("2.1.197", "covered"),
    ("2.1.196", "uncovered"),
    ("9.0.0", "uncovered"),
    ("2.1.197 (Claude Code)", "unreadable"),
    ("", "unreadable"),
    ("2.1", "unreadable"),
    ("2.1.\u0661\u0669\u0667", "unreadable"),  # 197 in Arabic-Indic digits: no release number
    ("\uff12.1.197", "unreadable"),  # a fullwidth 2
])
def test_coverage_reads_only_the_form_and_the_list(version: str, expected: str) -> None:
    assert coverage(version) == expected
