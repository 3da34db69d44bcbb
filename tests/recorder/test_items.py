"""The ``## Events`` block's items (RC-16; transcript/_events.py).

`item_of` dumps and proves each event as one item of the block on its own;
the writer (`write_streamed`) joins the kept items and proves the written
block by recognising them by their text. Rule the expectations come from:
a block of items each proved alone loads, whole, as the items' events (the
check, `parse_transcript`, loads the block whole).
"""

from __future__ import annotations

from typing import Any

import pytest

from recorder.transcript import (
    Artifact,
    Call,
    Event,
    SessionRow,
    Transcript,
    _events,
    parse_transcript,
)
from tests.hostile import HOSTILE
from tests.recorder.oracle import render_transcript
from tests.recorder.test_transcript import D1, D2, identity

PROSE = "Prose.\n\nOutside-workspace paths named: {n}"


def event(i: int, text: str = "x") -> Event:
    return Event(
        probe=f"p{i % 3}", session=f"r{i}",
        calls=[Call(tool="Bash", argument=f"{text} {i}", result=D1), Call(tool="Read",
                                                                          argument="a.md")],
        produced=[Artifact(path="out.md", result=D2, cites=["a"], findings=[]),
                  Artifact(path="/abs")],
        answer=None if i % 2 else text,
    )


def rows_for(events: list[Event], extra: int = 1) -> list[SessionRow]:
    rows = [SessionRow(probe=e.probe, session=e.session, state="recorded", outside_paths=1)
            for e in events]
    return rows + [SessionRow(probe="q", session=f"r{j}", state="killed", outside_paths=0)
                   for j in range(extra)]


def parts(events: list[Event]) -> dict[str, Any]:
    rows = rows_for(events)
    return {"prose": PROSE.format(n=len(events)), "identity": identity(), "sessions": rows}


# The megabyte value is left out here: length plays no part in where items start, and six
# copies of it take ruamel's pure-Python loader some 15 s (test_prose_values.py has it).
SHAPES = [(h[0], h[1]) for h in HOSTILE if h[0] != "megabyte"]


@pytest.mark.parametrize(("name", "value"), SHAPES, ids=[s[0] for s in SHAPES])
def test_items_proved_alone_read_the_same_in_the_whole_block(name: str, value: str) -> None:
    """The module's claim: a block of proved items loads, whole, as the items' events."""
    events = [event(0, value), Event(probe="p1", session="r1", calls=[], answer=value),
              event(2, value)]
    text = render_transcript(Transcript(**parts(events), events=events))
    assert parse_transcript(text).events == events  # the whole-block reader, as the check
    assert _events.read_events("".join(_events.item_of(e) for e in events)) == events
