"""A transcript that grows: `EventsBlock` and `render_parts` (RC-16; transcript/_events.py).

Rules the expectations come from: a transcript is one layout whichever way it
is rendered, so `render_parts` gives the text `render_transcript` gives for the
same parts; the writer proves its output by reading it back, so a text that
does not read back as the parts is never returned; and the check
(`parse_transcript`, which loads the events block whole) reads every rendered
text as the parts it was rendered from. The block's promise, "each event is
dumped and proved once", is counted, not timed.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from recorder.transcript import (
    Artifact,
    Call,
    Event,
    EventsBlock,
    SessionRow,
    Transcript,
    TranscriptUnproven,
    _events,
    parse_transcript,
    render_parts,
    render_transcript,
)
from tests.hostile import HOSTILE
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


def test_render_parts_is_render_transcript_of_the_same_parts() -> None:
    events = [event(i) for i in range(5)]
    text = render_parts(**parts(events), events=EventsBlock(events))
    assert text == render_transcript(Transcript(**parts(events), events=events))
    assert parse_transcript(text) == Transcript(**parts(events), events=events)


def test_a_growing_block_renders_what_the_check_reads_after_every_add() -> None:
    block, added = EventsBlock(), []
    text = render_parts(**parts(added), events=block)
    assert "## Events\n\n```yaml\n[]\n```\n" in text
    for i in range(6):
        added.append(event(i))
        block.add(added[-1])
        text = render_parts(**parts(added), events=block)
        assert parse_transcript(text) == Transcript(**parts(added), events=added)
    assert len(block) == 6 and list(block.events) == added


# The megabyte value is left out here: length plays no part in where items start, and six
# copies of it take ruamel's pure-Python loader some 15 s (test_prose_values.py has it).
SHAPES = [(h[0], h[1]) for h in HOSTILE if h[0] != "megabyte"]


@pytest.mark.parametrize(("name", "value"), SHAPES, ids=[s[0] for s in SHAPES])
def test_items_proved_alone_read_the_same_in_the_whole_block(name: str, value: str) -> None:
    """The module's claim: a block of proved items loads, whole, as the items' events."""
    events = [event(0, value), Event(probe="p1", session="r1", calls=[], answer=value),
              event(2, value)]
    block = EventsBlock(events)
    text = render_parts(**parts(events), events=block)
    assert parse_transcript(text).events == events  # the whole-block reader, as the check
    assert _events.read_events(block.text()) == events
    assert block.read(block.text()) == events


def test_each_event_is_dumped_and_loaded_once_however_often_the_block_renders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = {"dump": 0, "load": 0}
    real_dump, real_load = _events.yaml_text, _events.yaml_load

    def dump(data: Any) -> str:
        counts["dump"] += 1
        return real_dump(data)

    def load(text: str, where: str) -> Any:
        counts["load"] += 1
        return real_load(text, where)

    monkeypatch.setattr(_events, "yaml_text", dump)
    monkeypatch.setattr(_events, "yaml_load", load)
    events = [event(i) for i in range(4)]
    block = EventsBlock(events)
    assert counts == {"dump": 4, "load": 4}  # one dump and one proof per event
    for _ in range(3):
        render_parts(**parts(events), events=block)
    assert counts == {"dump": 4, "load": 4}  # renders read the items back by their text


@pytest.mark.parametrize("tamper", ["reorder", "edit", "drop"])
def test_a_block_text_that_is_not_its_events_is_never_rendered(
    monkeypatch: pytest.MonkeyPatch, tamper: str
) -> None:
    events = [event(i) for i in range(3)]
    block = EventsBlock(events)
    items = list(block._items)
    text = {"reorder": "".join([items[1], items[0], items[2]]),
            "edit": "".join(items).replace('"x 1"', '"y 1"'),
            "drop": "".join(items[:2])}[tamper]
    monkeypatch.setattr(block, "text", lambda: text)
    with pytest.raises(TranscriptUnproven):
        render_parts(**parts(events), events=block)


def test_read_knows_only_proved_items() -> None:
    block = EventsBlock([event(0)])
    other = EventsBlock([event(1)])
    assert block.read(block.text()) == [event(0)]
    assert block.read(block.text() + other.text()) is None
    assert block.read("[]\n") == []
    assert block.read("  - x\n") is None


def test_parts_that_break_a_cross_section_rule_are_refused() -> None:
    events = [event(0)]
    with pytest.raises(ValidationError, match="RC-16"):
        render_parts(prose=PROSE.format(n=0), identity=identity(), sessions=[],
                     events=EventsBlock(events))
