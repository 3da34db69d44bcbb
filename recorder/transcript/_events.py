"""The ``## Events`` block: read whole, or grown one proved event at a time (RC-15, RC-16).

`read_events` reads a block's YAML text through the closed models; it is what
`parse_transcript`, and so the check, does with the block. `item_of` is the
writer's side for a transcript that grows: each event is dumped once, as one
top-level item of the block, and proved once (its item reads back through
`read_events` as exactly that event); the arm's `ItemSpool` keeps the items,
and `write_streamed` joins them in the rows' order and proves the written
block by recognising them by their text instead of loading them again, so
rendering an arm of N events of which k are new costs O(N) string work and the
YAML of the k new events only.

Why a known item needs no second load: the block is a YAML block sequence at
column 0, and each item the dialect writes is one ``- `` line followed only by
lines indented by at least one space (every string is one double-quoted line,
never folded; no anchors, tags or document markers). A block sequence of such
items loads as the list of what each item loads as alone, so an item proved
alone is proved in the block. The tests hold the whole-block reader to the
same answer.
"""

from __future__ import annotations

from typing import Final

from pydantic import ValidationError

from ._closed import check_closed, kind, refusal
from ._errors import TranscriptRefused, TranscriptUnproven
from ._models import HEADINGS, Event
from ._yaml import yaml_load, yaml_text

EMPTY_BLOCK: Final = "[]\n"
"""The block of an arm with no recorded session (RC-16: ``[]`` when none)."""


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


def item_of(event: Event) -> str:
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
