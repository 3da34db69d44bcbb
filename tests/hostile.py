"""Hostile values a session can send, and what a transcript must still be with them in it.

Shared by the prose tests (recorder, campaign) and the attack through ``record``.
The rule they hold the writer to (docs/transcript.md, "Values from the session
in the prose"): a value that came from the session is written into the prose
as one JSON string literal (``json.dumps`` with ``ensure_ascii``), with ``<``,
``>``, ``&`` and the backtick escaped as ``\\u003c``, ``\\u003e``, ``\\u0026``,
``\\u0060``; a render never fails on it.
"""

from __future__ import annotations

import json
import re
from typing import Final

from tests import contract_check

MEGABYTE: Final = 1 << 20
HEADINGS: Final = ("## Run identity", "## Events", "## Sessions")

HOSTILE: Final[list[tuple[str, str, list[str]]]] = [
    # (id, value, lines the value tries to forge: none may appear as a line of the file)
    ("newline-heading", "2.1.197\n## Events\nx", ["x"]),
    ("forged-total", "2.1.197\n\nOutside-workspace paths named: 99\n", [
        "Outside-workspace paths named: 99"]),
    ("html-comment", "2.1.197 <!--\n\nDenied connections: 0.\n\n", ["Denied connections: 0."]),
    ("backticks", "`x`", []),
    ("fence", "v\n```\n\n## Sessions\n\n```yaml\nforged: 1\n", ["forged: 1"]),
    ("nul", "2.1\x00.197", []),
    ("non-ascii", "\u00fcn\u00efc\u00f6d\u00e9 \u2713 \U0001f600", []),
    ("u2028", "2.1.197\u2028Denied connections: 0.\u2029x\x85y", ["Denied connections: 0."]),
    ("carriage-return", "2.1.197\rDenied connections: 0.\r\n", ["Denied connections: 0."]),
    ("lone-surrogate", "2.1.197 \udc80", []),
    ("megabyte", "x" * MEGABYTE + "\n## Sessions\n" + "\u00e9" * MEGABYTE, []),
]
HOSTILE_IDS: Final = [h[0] for h in HOSTILE]


def rule_literal(value: str) -> str:
    """The rule, stated as code from its definition (module docstring)."""
    escaped = json.dumps(value, ensure_ascii=True)
    for char in "<>&`":
        escaped = escaped.replace(char, f"\\u{ord(char):04x}")
    return escaped


def prose_of(text: str) -> str:
    """The prose of a transcript: everything before its first heading line."""
    return text.split(f"\n{HEADINGS[0]}\n", 1)[0]


def assert_unforged(text: str, forged: list[str], *, baseline: str, outside_total: int) -> None:
    """What a reader relies on, with the hostile value in: the independent check is clean, each
    heading and the outside-paths total are one line each, the two fenced blocks are the only
    fences, no forged line is a line (split at "\\n" only, and at every line break Python
    knows), the prose is printable ASCII, and the value added none of ``< > & ` `` to the prose
    that ``baseline`` (the same transcript with harmless values) does not have."""
    assert contract_check.violations(text) == []
    for lines in (text.split("\n"), text.splitlines()):
        for heading in HEADINGS:
            assert lines.count(heading) == 1
        for line in forged:
            assert line not in lines
        assert [x for x in lines if x.startswith("```")] == ["```yaml", "```"] * 2
        assert [x for x in lines if x.startswith("Outside-workspace paths named:")] == [
            f"Outside-workspace paths named: {outside_total}"]
    prose = prose_of(text)
    assert re.fullmatch(r"[\x20-\x7e\n]*", prose), "the prose is printable ASCII"
    for char in "<>&`":
        assert prose.count(char) == prose_of(baseline).count(char), char
