"""A growing transcript written a row at a time: `write_streamed` and `ItemSpool`.

Rules the expectations come from: a transcript is one layout however it is
written, so `write_streamed` writes the bytes `render_transcript` gives for the
same parts; the writer proves its output by reading it back before it replaces
the file (RC-16), so a file that does not read back as the parts never replaces
the old one; the rules that cross sections (RC-15, RC-16) refuse the parts as
`Transcript` does. The promise "each event is read and proved once, then kept on
disk" is counted, not timed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from recorder.transcript import (
    Event,
    ItemSpool,
    SessionRow,
    Transcript,
    TranscriptRefused,
    TranscriptUnproven,
    parse_transcript,
    write_streamed,
)
from recorder.transcript._layout import row_line
from tests.recorder.oracle import render_transcript
from tests.recorder.test_items import PROSE, SHAPES, event, rows_for
from tests.recorder.test_transcript import identity

if TYPE_CHECKING:
    from pathlib import Path


def _refs(events: list[Event]) -> list[tuple[SessionRow, int | None]]:
    """The rows of ``events`` (plus one killed row), each recorded one with its index."""
    rows = rows_for(events)
    return [(row, i if i < len(events) else None) for i, row in enumerate(rows)]


def _write(path: Path, events: list[Event], spool: ItemSpool, loads: list[int],
           prose: str | None = None) -> None:
    def load(ref: int) -> Event:
        loads.append(ref)
        return events[ref]

    rows = _refs(events)
    write_streamed(path, prose=PROSE.format(n=len(events)) if prose is None else prose,
                   identity=identity(), rows=lambda: iter(rows), load=load, spool=spool)


@pytest.mark.parametrize("count", [0, 1, 6])
def test_write_streamed_writes_render_transcripts_bytes(tmp_path: Path, count: int) -> None:
    events = [event(i) for i in range(count)]
    with ItemSpool(tmp_path) as spool:
        _write(tmp_path / "a.md", events, spool, [])
    whole = Transcript(prose=PROSE.format(n=count), identity=identity(), events=events,
                       sessions=rows_for(events))
    text = (tmp_path / "a.md").read_text()
    assert text == render_transcript(whole)
    assert parse_transcript(text) == whole


def test_prose_without_the_outside_paths_line_is_refused(tmp_path: Path) -> None:
    rows = [SessionRow(probe="q", session="r1", state="killed", outside_paths=0)]
    with ItemSpool(tmp_path) as spool, pytest.raises(TranscriptRefused,
                                                      match="Outside-workspace"):
        write_streamed(tmp_path / "a.md", prose="", identity=identity(),
                       rows=lambda: iter([(rows[0], None)]), load=lambda ref: event(ref),
                       spool=spool)
    assert not (tmp_path / "a.md").exists()


def test_each_event_is_loaded_and_proved_once_then_read_from_the_spool(tmp_path: Path) -> None:
    events, loads = [event(i) for i in range(4)], list[int]()
    with ItemSpool(tmp_path) as spool:
        _write(tmp_path / "a.md", events[:2], spool, loads)
        _write(tmp_path / "a.md", events, spool, loads)
        _write(tmp_path / "a.md", events, spool, loads)
        assert sorted(loads) == [0, 1, 2, 3]
        assert len(spool) == 4
    assert (tmp_path / "a.md").read_text() == render_transcript(Transcript(
        prose=PROSE.format(n=4), identity=identity(), events=events, sessions=rows_for(events)))


def test_a_reference_no_row_gives_any_more_is_forgotten(tmp_path: Path) -> None:
    events = [event(i) for i in range(3)]
    with ItemSpool(tmp_path) as spool:
        _write(tmp_path / "a.md", events, spool, [])
        _write(tmp_path / "a.md", events[:1], spool, [])
        assert len(spool) == 1


def test_a_file_that_does_not_read_back_never_replaces_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proof reads the written file: a row written as another fails it."""
    events = [event(i) for i in range(2)]

    def wrong(row: SessionRow) -> str:
        return row_line(row).replace("| killed |", "| timed-out |")

    with ItemSpool(tmp_path) as spool:
        _write(tmp_path / "a.md", events, spool, [])
        old = (tmp_path / "a.md").read_bytes()
        monkeypatch.setattr("recorder.transcript._streamed.row_line", wrong)
        with pytest.raises(TranscriptUnproven, match="another row"):
            _write(tmp_path / "a.md", events, spool, [])
    assert (tmp_path / "a.md").read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["a.md"]


def test_an_item_that_is_not_the_proved_one_fails_the_proof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [event(i) for i in range(2)]
    with ItemSpool(tmp_path) as spool:
        _write(tmp_path / "a.md", events, spool, [])
        item = spool.item
        calls = iter(range(1_000))

        def drifting(ref: int) -> bytes:  # what is written differs from what the proof reads
            return item(ref) if next(calls) < 2 else item(ref).replace(b"x 0", b"y 0")

        monkeypatch.setattr(spool, "item", drifting)
        with pytest.raises(TranscriptUnproven, match="not the proved item"):
            _write(tmp_path / "a.md", events, spool, [])


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(SessionRow(probe="p0", session="r0", state="recorded", outside_paths=0), None)],
         "no event carries it"),
        ([(SessionRow(probe="p0", session="r0", state="killed", outside_paths=0), 0)],
         "must be 'recorded'"),
        ([(SessionRow(probe="q", session="r0", state="killed", outside_paths=0), None)] * 2,
         "distinct"),
    ],
    ids=["recorded-without-event", "event-of-a-killed-row", "repeated-row"],
)
def test_parts_that_cross_sections_wrongly_are_refused(
    tmp_path: Path, rows: list[tuple[SessionRow, int | None]], message: str
) -> None:
    with ItemSpool(tmp_path) as spool, pytest.raises(TranscriptRefused, match=message):
        write_streamed(tmp_path / "a.md", prose=PROSE.format(n=0), identity=identity(),
                       rows=lambda: iter(rows), load=lambda ref: event(ref), spool=spool)
    assert not (tmp_path / "a.md").exists()


@pytest.mark.parametrize(("name", "value"), SHAPES, ids=[s[0] for s in SHAPES])
def test_hostile_values_are_written_as_render_transcript_writes_them(
    tmp_path: Path, name: str, value: str
) -> None:
    """Every hostile shape in calls, an answer and an event without calls: the same bytes,
    read back by the check as the parts."""
    events = [event(0, value), Event(probe="p1", session="r1", calls=[], answer=value),
              event(2, value)]
    with ItemSpool(tmp_path) as spool:
        _write(tmp_path / "a.md", events, spool, [])
    whole = Transcript(prose=PROSE.format(n=len(events)), identity=identity(), events=events,
                       sessions=rows_for(events))
    text = (tmp_path / "a.md").read_text(encoding="utf-8")
    assert text == render_transcript(whole)
    assert parse_transcript(text) == whole
