"""The tests' oracle for the RC-16 layout: the whole transcript rendered at once.

The product has one writer, `recorder.transcript.write_streamed`, which writes
a transcript a row at a time without holding it. The tests hold it to this
simpler renderer, which builds the whole text from a `Transcript` and proves
it by parsing it back with `parse_transcript`: where the two agree byte for
byte, the streamed writer writes the layout as the contract reads it. Used by
tests (and bench/render.py) only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recorder._atomic import write_atomic
from recorder.transcript import HEADINGS, TranscriptRefused, TranscriptUnproven, parse_transcript
from recorder.transcript._events import EMPTY_BLOCK, item_of
from recorder.transcript._layout import row_line, table_head
from recorder.transcript._yaml import yaml_text

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import BaseModel

    from recorder.transcript import Transcript


def render_transcript(transcript: Transcript) -> str:
    """The RC-16 Markdown text of ``transcript``, proven by reading it back.

    Layout, exactly: the prose; ``## Run identity`` and one ```` ```yaml ````
    block (the twelve keys in table order); ``## Events`` and one ```` ```yaml
    ```` block (a top-level sequence, ``[]`` when empty); ``## Sessions`` and
    the table ``| probe | session | state | outside paths |``. Every string
    value is double-quoted; unset optional keys are absent (RC-12).

    Raises:
        TranscriptUnproven: the text did not parse back to an equal transcript.
    """
    events = "".join(item_of(e) for e in transcript.events) or EMPTY_BLOCK
    table = table_head() + "".join(row_line(r) + "\n" for r in transcript.sessions)
    text = (
        f"{transcript.prose}\n\n"
        f"{HEADINGS[0]}\n\n```yaml\n{yaml_text(transcript.identity.model_dump())}```\n\n"
        f"{HEADINGS[1]}\n\n```yaml\n{events}```\n\n"
        f"{HEADINGS[2]}\n\n{table}"
    )
    if not transcript.prose:
        text = text.lstrip("\n")
    try:
        back = parse_transcript(text)
    except TranscriptRefused as exc:
        raise TranscriptUnproven(str(exc)) from exc
    if back != transcript or not _same_dump(back, transcript):
        raise TranscriptUnproven("parsed transcript differs from the one rendered")
    return text


def write_transcript(path: Path, transcript: Transcript) -> None:
    """`render_transcript`, replacing ``path`` atomically (a transcript file for a test).

    Raises:
        TranscriptUnproven: see `render_transcript`; nothing is written.
        OSError: the directory refused the write; ``path`` is unchanged.
    """
    write_atomic(path, [render_transcript(transcript).encode("utf-8")])


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="python", exclude_unset=True)


def _same_dump(a: Transcript, b: Transcript) -> bool:
    """``_dump(a) == _dump(b)``, one part at a time (absent and empty stay two facts)."""
    if a.model_fields_set != b.model_fields_set or a.prose != b.prose:
        return False
    if _dump(a.identity) != _dump(b.identity):
        return False
    for mine, theirs in ((a.events, b.events), (a.sessions, b.sessions)):
        if len(mine) != len(theirs):
            return False
        if any(x is not y and _dump(x) != _dump(y) for x, y in zip(mine, theirs, strict=True)):
            return False
    return True
