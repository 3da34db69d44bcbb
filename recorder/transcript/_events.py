"""The ``## Events`` block: read whole, or grown one proved event at a time (RC-15, RC-16).

`read_events` reads a block's YAML text through the closed models; it is what
`parse_transcript`, and so the check, does with the block. `EventsBlock` is
the writer's side for a transcript that grows: each event is dumped once, as
one top-level item of the block, and proved once (its item reads back through
`read_events` as exactly that event). A render then joins the proved items and
its read-back recognises them by their text instead of loading them again, so
rendering an arm of N events costs O(N) string work and no YAML, and adding an
event costs O(its size).

Why a known item needs no second load: the block is a YAML block sequence at
column 0, and each item the dialect writes is one ``- `` line followed only by
lines indented by at least one space (every string is one double-quoted line,
never folded; no anchors, tags or document markers). A block sequence of such
items loads as the list of what each item loads as alone, so an item proved
alone is proved in the block. The tests hold the whole-block reader to the
same answer.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, final

from pydantic import ValidationError

from ._closed import check_closed, kind, refusal
from ._errors import TranscriptRefused, TranscriptUnproven
from ._models import HEADINGS, Event
from ._yaml import yaml_load, yaml_text

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

EMPTY_BLOCK: Final = "[]\n"
"""The block of an arm with no recorded session (RC-16: ``[]`` when none)."""
_ITEM_START: Final = re.compile(r"^- ", re.MULTILINE)


def read_events(block: str) -> list[Event]:
    """The events of one ``## Events`` block's YAML text (without its fences).

    Raises:
        TranscriptRefused: the text does not load, is not a sequence, or an
            item breaks a closed key set or a value rule (naming ``events[i]``).
    """
    raw_events = yaml_load(block, HEADINGS[1])
    if not isinstance(raw_events, list):
        raise TranscriptRefused(
            "RC-16", f"## Events holds {kind(raw_events)}, not a sequence of events"
        )
    events = []
    for i, item in enumerate(raw_events):
        where = f"events[{i}]"
        try:
            events.append(Event.model_validate(check_closed(item, Event, where)))
        except ValidationError as exc:
            raise refusal(exc, where, "RC-15") from exc
    return events


def _item_of(event: Event) -> str:
    """``event`` as one item of the block, proved to read back as exactly ``event``."""
    item = yaml_text([event.model_dump(mode="python", exclude_unset=True)])
    lines = item.split("\n")
    if not item.startswith("- ") or lines[-1] or any(not x.startswith(" ") for x in lines[1:-1]):
        raise TranscriptUnproven(f"the item of {event.probe}/{event.session} is not one block item")
    try:
        back = read_events(item)
    except TranscriptRefused as exc:
        raise TranscriptUnproven(str(exc)) from exc
    if back != [event] or back[0].model_dump(exclude_unset=True) != event.model_dump(
        exclude_unset=True
    ):
        raise TranscriptUnproven(
            f"the item of {event.probe}/{event.session} reads back as another event"
        )
    return item


@final
class EventsBlock:
    """The ``## Events`` block of one arm, each event dumped and proved once (module docstring).

    Not thread-safe: one builder adds, and renders (`render_parts`) from the
    thread it adds from, or after adding stops. Memory: the events and their
    item texts (about 0.7 kB per event of three calls and one artifact).

    Args:
        events: Events to add at once, in order (as by `add`, one by one).

    Raises:
        TranscriptUnproven: an event's item did not read back as that event (a
            bug in the dialect; the event itself was already validated).
    """

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._events: list[Event] = []
        self._items: list[str] = []
        self._known: dict[str, Event] = {}
        for event in events:
            self.add(event)

    def add(self, event: Event) -> None:
        """Append ``event``: dump it as one item and prove it; O(the event's size).

        Raises:
            TranscriptUnproven: see the class; the block is left unchanged.
        """
        item = _item_of(event)
        self._events.append(event)
        self._items.append(item)
        self._known.setdefault(item, event)

    def __len__(self) -> int:
        return len(self._events)

    @property
    def events(self) -> Sequence[Event]:
        """The events, in the order added (a copy)."""
        return tuple(self._events)

    def text(self) -> str:
        """The block's YAML text, fences excluded: the items joined, or ``[]`` when none."""
        return "".join(self._items) or EMPTY_BLOCK

    def read(self, block: str) -> list[Event] | None:
        """Read ``block`` back if it is made of this block's proved items only, else None.

        The text is cut before each line that starts with ``- `` (an item's
        first line, and no other line of an item, starts so); each piece must be
        a proved item, and gives the event it was proved as. None means "not
        known here": the caller reads the block whole with `read_events`.
        """
        if block == EMPTY_BLOCK:
            return []
        starts = [m.start() for m in _ITEM_START.finditer(block)]
        if not starts or starts[0] != 0:
            return None
        pieces = [block[a:b] for a, b in zip(starts, [*starts[1:], len(block)], strict=True)]
        events = [self._known.get(piece) for piece in pieces]
        return None if any(e is None for e in events) else [e for e in events if e is not None]
