"""The renderer's proved items: `ProvedEvents` (RC-16; transcript/_events.py).

`render_transcript` dumps and proves each event as one item (`ProvedEvents`)
and reads the block back by recognising its items. Rules the expectations
come from: a transcript is one layout whichever way it is rendered; the
writer proves its output by reading it back, so a text that does not read
back as the parts is never returned; and the check (`parse_transcript`,
which loads the events block whole) reads every rendered text as the parts
it was rendered from. A kept `ProvedEvents` dumps and proves each event
once, however often it renders (counted, not timed).
"""

from __future__ import annotations

from typing import Any

import pytest

from recorder.transcript import (
    Artifact,
    Call,
    Event,
    ProvedEvents,
    SessionRow,
    Transcript,
    TranscriptUnproven,
    _events,
    _layout,
    parse_transcript,
    render_transcript,
)
from recorder.transcript._yaml import yaml_load, yaml_text
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


def render(events: list[Event], proved: ProvedEvents) -> str:
    """`render_transcript`'s renderer with ``proved`` kept by the caller."""
    return _layout._render(Transcript(**parts(events), events=events), proved)


def test_a_kept_proved_events_renders_render_transcripts_text() -> None:
    events = [event(i) for i in range(5)]
    text = render(events, ProvedEvents())
    assert text == render_transcript(Transcript(**parts(events), events=events))
    assert parse_transcript(text) == Transcript(**parts(events), events=events)


def test_a_growing_transcript_renders_what_the_check_reads_after_every_record() -> None:
    """Events arrive in completion order; each render lists them in table order."""
    proved, arrived = ProvedEvents(), list[Event]()
    text = render(arrived, proved)
    assert "## Events\n\n```yaml\n[]\n```\n" in text
    for i in [3, 0, 5, 1, 4, 2]:
        arrived.append(event(i))
        in_order = sorted(arrived, key=lambda e: int(e.session[1:]))
        text = render(in_order, proved)
        assert parse_transcript(text) == Transcript(**parts(in_order), events=in_order)
    assert len(proved) == 6


def test_a_changed_event_of_a_kept_session_is_proved_anew() -> None:
    proved = ProvedEvents()
    before = event(0, "before")
    old_item = proved.item(before)
    after = event(0, "after")
    text = render([after], proved)
    assert parse_transcript(text).events == [after]
    assert len(proved) == 1
    assert proved.read(old_item) is None  # the replaced item is no longer known
    assert proved.read(proved.item(after)) == [after]


# The megabyte value is left out here: length plays no part in where items start, and six
# copies of it take ruamel's pure-Python loader some 15 s (test_prose_values.py has it).
SHAPES = [(h[0], h[1]) for h in HOSTILE if h[0] != "megabyte"]


@pytest.mark.parametrize(("name", "value"), SHAPES, ids=[s[0] for s in SHAPES])
def test_items_proved_alone_read_the_same_in_the_whole_block(name: str, value: str) -> None:
    """The module's claim: a block of proved items loads, whole, as the items' events."""
    events = [event(0, value), Event(probe="p1", session="r1", calls=[], answer=value),
              event(2, value)]
    proved = ProvedEvents()
    text = render(events, proved)
    assert parse_transcript(text).events == events  # the whole-block reader, as the check
    assert _events.read_events(proved.block(events)) == events
    assert proved.read(proved.block(events)) == events


def test_each_event_is_dumped_and_loaded_once_however_often_the_transcript_renders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = {"dump": 0, "load": 0}
    real_dump, real_load = yaml_text, yaml_load

    def dump(data: Any) -> str:
        counts["dump"] += 1
        return real_dump(data)

    def load(text: str, where: str) -> Any:
        counts["load"] += 1
        return real_load(text, where)

    monkeypatch.setattr(_events, "yaml_text", dump)
    monkeypatch.setattr(_events, "yaml_load", load)
    proved = ProvedEvents()
    events = [event(i) for i in range(4)]
    render(events, proved)
    assert counts == {"dump": 4, "load": 4}  # one dump and one proof per event
    for _ in range(3):
        render(events, proved)
    render([*events, event(4)], proved)
    assert counts == {"dump": 5, "load": 5}  # renders read the kept items back by their text


@pytest.mark.parametrize("tamper", ["reorder", "edit", "drop"])
def test_a_block_text_that_is_not_its_events_is_never_rendered(
    monkeypatch: pytest.MonkeyPatch, tamper: str
) -> None:
    events = [event(i) for i in range(3)]
    proved = ProvedEvents()
    items = [proved.item(e) for e in events]
    text = {"reorder": "".join([items[1], items[0], items[2]]),
            "edit": "".join(items).replace('"x 1"', '"y 1"'),
            "drop": "".join(items[:2])}[tamper]
    monkeypatch.setattr(proved, "block", lambda events: text)
    with pytest.raises(TranscriptUnproven):
        render(events, proved)


def test_read_knows_only_kept_items() -> None:
    proved, other = ProvedEvents(), ProvedEvents()
    assert proved.read(proved.block([event(0)])) == [event(0)]
    assert proved.read(proved.block([event(0)]) + other.block([event(1)])) is None
    assert proved.read("[]\n") == []
    assert proved.read("  - x\n") is None
