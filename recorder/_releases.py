"""The Claude Code releases the harness census covers, and where a version stands against them.

The census (docs/census.md) replays the recorded situations through a release under the
real sandbox and lists, per line kind, the keys it prints. A release is *covered* when its
census is committed and the recorder's handling agrees with it (every init key decided,
RC-07). A batch on another release still runs: its prose and ``status`` say the release is
not covered, so a reader knows the recorder was not checked against what it printed.
"""

from __future__ import annotations

import re
from typing import Final, Literal, TypeAlias

PINNED_RELEASE: Final = "2.1.332"
"""The release ``make`` installs and the tests and the demo run (the Makefile's
``HARNESS_VERSION`` says the same; a test holds the two equal)."""

COVERED_RELEASES: Final[tuple[str, ...]] = ("2.1.197", "2.1.250", "2.1.300", "2.1.332")
"""Every release whose census is committed and agrees with the recorder, oldest first."""

Coverage: TypeAlias = Literal["covered", "uncovered", "unreadable"]
"""Where a ``claude_code_version`` stands: a covered release; a readable release the census
does not cover (older, between or newer); a value that is not ``MAJOR.MINOR.PATCH``."""

_RELEASE: Final = re.compile(r"\A([0-9]{1,6})\.([0-9]{1,6})\.([0-9]{1,6})\Z")


def parse_release(version: str) -> tuple[int, int, int] | None:
    """``"2.1.197"`` -> ``(2, 1, 197)``; None for anything else (a suffix, a word, spaces).

    The init line's ``claude_code_version`` is a value the session prints, so nothing here
    trusts it beyond its form.
    """
    match = _RELEASE.match(version)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def coverage(version: str) -> Coverage:
    """Where ``version`` (an init line's ``claude_code_version``) stands against the census."""
    if parse_release(version) is None:
        return "unreadable"
    return "covered" if version in COVERED_RELEASES else "uncovered"
