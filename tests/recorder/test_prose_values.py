"""Values that came from the session cannot forge the prose (RC-16; the recorder contract).

Rule text the expectations come from (docs/transcript.md, "Values from the
session in the prose"): every value that came from the session (the init
line's ``claude_code_version``, an assistant line's ``message.model``, the
egress proxy's denied targets, a checker's failure note) is written into the
prose as one JSON string literal: double quotes around it, ``"`` and ``\\``
escaped, every control character and every non-ASCII character as ``\\uXXXX``
(a character outside the BMP as its UTF-16 surrogate pair, as JSON does), and
``<``, ``>``, ``&`` and the backtick as ``\\u003c``, ``\\u003e``, ``\\u0026``
and ``\\u0060``. So the value is one line of printable ASCII that decodes back
(as JSON) to exactly what the session sent; it can start no line, open no
HTML comment or code span, and close no fence. A render never fails on it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recorder._check import check_transcript_file
from recorder._cost import CostFigure
from recorder.transcript import (
    Event,
    Identity,
    SessionRow,
    Transcript,
    prose_for,
    prose_value,
    unknown_init_keys_line,
)
from tests.hostile import HOSTILE, HOSTILE_IDS, assert_unforged, prose_of, rule_literal
from tests.recorder.oracle import render_transcript, write_transcript

D = "sha256:" + "0" * 64


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("2.1.197", '"2.1.197"'),
        ('say "hi" \\ bye', '"say \\"hi\\" \\\\ bye"'),
        ("a\nb\rc\td", '"a\\nb\\rc\\td"'),
        ("<!-- x -->", '"\\u003c!-- x --\\u003e"'),
        ("a&b", '"a\\u0026b"'),
        ("`x` ```", '"\\u0060x\\u0060 \\u0060\\u0060\\u0060"'),
        ("nul\x00 bel\x07 del\x7f", '"nul\\u0000 bel\\u0007 del\\u007f"'),
        ("caf\u00e9 \u2713", '"caf\\u00e9 \\u2713"'),
        ("\u2028\u2029\x85", '"\\u2028\\u2029\\u0085"'),
        ("\U0001f600", '"\\ud83d\\ude00"'),
        ("lone \udc80", '"lone \\udc80"'),
        ("", '""'),
    ],
    ids=["plain", "quote-backslash", "controls", "html", "ampersand", "backticks", "nul-del",
         "non-ascii", "line-separators", "astral", "lone-surrogate", "empty"],
)
def test_prose_value_is_the_json_string_literal_with_html_and_backtick_escaped(
    value: str, literal: str
) -> None:
    assert prose_value(value) == literal
    assert json.loads(literal) == value  # what the session sent, recoverable exactly


# --- hostile values through prose_for, the render, the writer and both checks ---------------


def hostile_transcript(value: str) -> Transcript:
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=2)]
    prose = prose_for(
        arm="present", tier="campaign", allowed_tools=["Read"], network="host",
        claude_code_versions=[value], served_versions={value: 1, "claude-served-9": 1},
        cost=CostFigure(cents=1, unknown=0, lower_bound=False), unknown_cost_sessions=[],
        outside_paths_total=2,
    )
    identity = Identity(
        model="claude-opus-4-8", served_version=value, tree=D, lock=D, selection=D, read_set=D,
        seed=0, harness="headwater-campaign 0.1.0", tier="campaign", arm="present",
        at="2026-11-30T12:00:00Z", cost_cents=1,
    )
    return Transcript(prose=prose, identity=identity, events=[Event(probe="p", session="r1")],
                      sessions=rows)


@pytest.mark.parametrize(("name", "value", "forged"), HOSTILE, ids=HOSTILE_IDS)
def test_a_hostile_session_value_cannot_forge_or_break_the_prose(
    tmp_path: Path, name: str, value: str, forged: list[str]
) -> None:
    transcript = hostile_transcript(value)
    path = tmp_path / "present.md"
    write_transcript(path, transcript)
    assert check_transcript_file(path).verdict == "clean"
    text = path.read_text(encoding="utf-8")
    assert text == render_transcript(transcript)
    baseline = render_transcript(hostile_transcript("2.1.197"))
    assert_unforged(text, forged, baseline=baseline, outside_total=2)
    # the value as one literal, then where it stands against the census: not a release
    assert any(line.startswith(f"Claude Code version: {rule_literal(value)} (not a release "
                               "number, so not covered by the harness census). ")
               for line in prose_of(text).split("\n"))
    served = sorted([rule_literal(value), rule_literal("claude-served-9")],
                    key=lambda lit: json.loads(lit))
    assert f"Served versions differ across this arm's sessions: {served[0]} (1 session), " \
        f"{served[1]} (1 session)" in text


def test_one_served_version_is_one_literal() -> None:
    args: dict[str, Any] = {
        "arm": "present", "tier": "campaign", "allowed_tools": ["Read"], "network": "host",
        "claude_code_versions": [], "served_versions": {"m\n## Events": 2},
        "cost": CostFigure(cents=1, unknown=0, lower_bound=False),
        "unknown_cost_sessions": [], "outside_paths_total": 0,
    }
    prose = prose_for(**args)
    assert 'Served version: "m\\n## Events" (2 recorded sessions).' in prose.split("\n")
    assert "Claude Code version: not observed." in prose.split("\n")


def test_the_undecided_init_keys_are_literals_with_their_session_counts() -> None:
    """RC-07: each key as `prose_value` writes it, with how many sessions printed it, in
    code-point order of the keys as printed."""
    line = unknown_init_keys_line({"betas": 2, "b\nx": 1, "scratchpad_path": 1})
    assert line == ('Init keys the recorder has not decided: "b\\nx" (1 session), "betas" '
                    '(2 sessions), "scratchpad_path" (1 session). Listed, not refused: a release '
                    "the census has not read prints them (docs/glossary.md: RC-07); "
                    "docs/recorder.md says how each known key is decided.")


@pytest.mark.parametrize(("name", "value", "forged"), HOSTILE, ids=HOSTILE_IDS)
def test_a_hostile_init_key_cannot_forge_or_break_the_prose(
    tmp_path: Path, name: str, value: str, forged: list[str]
) -> None:
    def with_key(key: str) -> Transcript:
        plain = hostile_transcript("2.1.197")
        prose = plain.prose.replace(
            "\n\nOutside-workspace paths named:",
            f"\n\n{unknown_init_keys_line({key: 1})}\n\nOutside-workspace paths named:")
        return plain.model_copy(update={"prose": prose})

    path = tmp_path / "present.md"
    write_transcript(path, with_key(value))
    assert check_transcript_file(path).verdict == "clean"
    text = path.read_text(encoding="utf-8")
    assert_unforged(text, forged, baseline=render_transcript(with_key("betas")),
                    outside_total=2)
    assert f"not decided: {rule_literal(value)} (1 session). Listed" in prose_of(text)
