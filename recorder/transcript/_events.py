"""The ``## Events`` block: read whole, or grown one proved event at a time (RC-15, RC-16).

`read_events` reads a block's YAML text through the closed models; it is what
`parse_transcript`, and so the check, does with the block. `ProvedEvents` is
the writer's side for a transcript that grows: each event is dumped once, as
one top-level item of the block, and proved once (its item reads back through
`read_events` as exactly that event). A render then joins the kept items in
the order it is given and its read-back recognises them by their text instead
of loading them again, so rendering an arm of N events of which k are new
costs O(N) string work and the YAML of the k new events only.

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
    from collections.abc import Iterable

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


@final
class ProvedEvents:
    """Events whose block items were dumped and proved, kept so that no render does it twice.

    `item` dumps and proves an event the first time it is asked for that event
    (by its probe and session, which name one event of an arm: RC-15) and
    returns the kept item after that; `read` recognises a block made of kept
    items. `render_transcript` makes one per render; a batch's growing
    transcripts keep their items in an `ItemSpool` instead (`write_streamed`).

    Not thread-safe: use one from one thread at a time. Memory: each kept
    event and its item (about 0.7 kB for three calls and one artifact).
    """

    def __init__(self) -> None:
        self._by_session: dict[tuple[str, str], tuple[Event, str]] = {}
        self._known: dict[str, Event] = {}

    def item(self, event: Event) -> str:
        """The block item of ``event``; O(its size) the first time, a lookup after.

        An event whose probe and session name a kept event that differs from it
        replaces that one (its item is dumped and proved anew).

        Raises:
            TranscriptUnproven: the item did not read back as ``event`` (a bug in
                the dialect; the event itself was already validated).
        """
        key = (event.probe, event.session)
        kept = self._by_session.get(key)
        if kept is not None and (kept[0] is event or kept[0] == event):
            return kept[1]
        item = item_of(event)
        if kept is not None:
            del self._known[kept[1]]
        self._by_session[key] = (event, item)
        self._known[item] = event
        return item

    def __len__(self) -> int:
        return len(self._by_session)

    def block(self, events: Iterable[Event]) -> str:
        """The ``## Events`` block's YAML text (fences excluded) of ``events``, in that order."""
        return "".join(self.item(e) for e in events) or EMPTY_BLOCK

    def read(self, block: str) -> list[Event] | None:
        """Read ``block`` back if it is made of kept items only, else None.

        The text is cut before each line that starts with ``- `` (an item's
        first line, and no other line of an item, starts so); each piece must be
        a kept item, and gives the event it was proved as. None means "not
        known here": the caller reads the block whole with `read_events`.
        """
        if block == EMPTY_BLOCK:
            return []
        starts = [m.start() for m in _ITEM_START.finditer(block)]
        if not starts or starts[0] != 0:
            return None
        events = []
        for a, b in zip(starts, [*starts[1:], len(block)], strict=True):
            event = self._known.get(block[a:b])  # one piece at a time: no copy of the block
            if event is None:
                return None
            events.append(event)
        return events
