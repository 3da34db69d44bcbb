"""A growing transcript written a row at a time and proved by reading the file back.

`write_streamed`, the one transcript writer, writes the RC-16 layout
(`parse_transcript` reads it) without holding the transcript: no list of
events or rows, no text of the whole file. The events' items come from the
arm's `ItemSpool` (each dumped and proved once, when first seen) and the rows
from the caller, one at a time. The proof is the writer's (RC-16: it reads its
own output back before the file replaces the old one), done on the written
file a line at a time: the prose and the identity block read back through the
closed models as the parts given, each item of the events block is byte for
byte the proved item of the next recorded row, and each table line reads back
through `SessionRow` as that row; nothing stands before, between or after.
The rules that cross sections (`Transcript`'s) are checked as the rows go by.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO, Final, TypeAlias

from pydantic_core import PydanticCustomError

from recorder._atomic import write_atomic

from ._errors import TranscriptRefused, TranscriptUnproven
from ._events import EMPTY_BLOCK
from ._layout import read_identity, row_line, session_row, table_head, yaml_block
from ._models import HEADINGS, check_outside_line, checked_prose
from ._yaml import yaml_text

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path

    from ._models import Event, Identity, SessionRow
    from ._spool import ItemSpool

Rows: TypeAlias = "Callable[[], Iterable[tuple[SessionRow, int | None]]]"
"""Gives the table's rows in order, each with its event's reference (recorded rows) or None."""
_RECORDED: Final = "recorded"


def write_streamed(
    path: Path,
    *,
    prose: str,
    identity: Identity,
    rows: Rows,
    load: Callable[[int], Event],
    spool: ItemSpool,
) -> None:
    """Write the transcript of these parts to ``path`` atomically, proved, a row at a time.

    The RC-16 text of ``Transcript(prose, identity, events, sessions)``, where
    ``sessions`` are the rows and ``events`` the events of the rows that carry a
    reference, in the rows' order (`parse_transcript` reads it back as those).

    Args:
        prose: The free prose (`prose_for`); identity: the twelve keys.
        rows: Called once per pass (three; four when the spool forgets a reference),
            each time giving the same rows in the table's order, each with the
            reference of its event (exactly the ``recorded`` rows carry one) or None.
            Memory: one row at a time, and a set of the rows' names while a pass
            checks them (the one part of a render that grows with the arm).
        load: The event of a reference the spool does not hold (read once, proved,
            kept in ``spool``).
        spool: The arm's items, kept across renders; references no row gives any
            more are forgotten.

    Raises:
        TranscriptRefused: the parts break a rule that crosses sections (RC-15,
            RC-16: a heading in the prose, names repeated, an event without its
            ``recorded`` row or the reverse, the outside-paths line); nothing is written.
        TranscriptUnproven: the file did not read back as these parts (a bug).
        OSError: the host refused the write; ``path`` is unchanged.
    """
    prose = _rule(checked_prose, prose)
    head = (f"{prose}\n\n{HEADINGS[0]}\n\n```yaml\n{yaml_text(identity.model_dump())}```\n\n"
            f"{HEADINGS[1]}\n\n```yaml\n")
    if not prose:
        head = head.lstrip("\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, _pieces(head, prose, rows, load, spool),
                 check=lambda written: _prove(written, prose, identity, rows, spool))


def _rule(check: Callable[[str], str], value: str) -> str:
    try:
        return check(value)
    except PydanticCustomError as exc:
        raise TranscriptRefused(exc.type, exc.message()) from exc


def _pieces(head: str, prose: str, rows: Rows, load: Callable[[int], Event],
            spool: ItemSpool) -> Iterator[bytes]:
    """The file's bytes: the head, the items (spooling new ones), the table; checks as it goes."""
    yield head.encode("utf-8")
    seen: set[tuple[str, str]] = set()
    outside = events = 0
    for row, ref in rows():
        _check_row(row, ref, seen)
        outside += row.outside_paths
        if ref is not None:
            if ref not in spool:
                event = load(ref)
                if (event.probe, event.session) != (row.probe, row.session):
                    raise TranscriptRefused("RC-16", f"event {event.probe}/{event.session} "
                                            f"stands at the row {row.probe}/{row.session}")
                spool.add(ref, event)
            events += 1
            yield spool.item(ref)
    if events < len(spool):
        spool.keep_only(ref for _, ref in rows() if ref is not None)
    if not events:
        yield EMPTY_BLOCK.encode()
    try:
        check_outside_line(prose, outside)
    except PydanticCustomError as exc:
        raise TranscriptRefused(exc.type, exc.message()) from exc
    yield f"```\n\n{HEADINGS[2]}\n\n{table_head()}".encode()
    for row, _ in rows():
        yield (row_line(row) + "\n").encode("utf-8")


def _check_row(row: SessionRow, ref: int | None, seen: set[tuple[str, str]]) -> None:
    key = (row.probe, row.session)
    if key in seen:
        raise TranscriptRefused("RC-15", "session names must be distinct within a probe; "
                                f"repeated in ## Sessions rows: {'/'.join(key)}")
    seen.add(key)
    if (ref is not None) != (row.state == _RECORDED):
        what = "row is recorded but no event carries it" if ref is None else (
            f"event has state {row.state!r} in ## Sessions; it must be 'recorded'")
        raise TranscriptRefused("RC-16", f"{'/'.join(key)}: {what}")


def _prove(written: Path, prose: str, identity: Identity,
           rows: Rows, spool: ItemSpool) -> None:
    """Read ``written`` back a line at a time; it must hold exactly these parts."""
    try:
        with written.open("rb") as fp:
            _prove_head(fp, prose, identity)
            _prove_items(fp, (ref for _, ref in rows() if ref is not None), spool)
            _prove_table(fp, (row for row, _ in rows()))
    except TranscriptRefused as exc:
        raise TranscriptUnproven(str(exc)) from exc


def _prove_head(fp: BinaryIO, prose: str, identity: Identity) -> None:
    lines: list[str] = []
    while (raw := fp.readline()) != f"{HEADINGS[1]}\n".encode():
        if not raw:
            raise TranscriptUnproven(f"no {HEADINGS[1]} line")
        lines.append(_text(raw))
    at = [i for i, line in enumerate(lines) if line == f"{HEADINGS[0]}\n"]
    if len(at) != 1:
        raise TranscriptUnproven(f"{HEADINGS[0]} stands {len(at)} times before {HEADINGS[1]}")
    if _rule(checked_prose, "".join(lines[: at[0]])) != prose:
        raise TranscriptUnproven("the prose read back differs from the one written")
    section = "".join(lines[at[0] + 1:])
    back = read_identity(yaml_block(section, (0, len(section)), HEADINGS[0]))
    if back != identity or back.model_dump() != identity.model_dump():
        raise TranscriptUnproven("the identity read back differs from the one written")


def _prove_items(fp: BinaryIO, refs: Iterable[int], spool: ItemSpool) -> None:
    _expect(fp, b"\n", b"```yaml\n")
    line = fp.readline()
    expected = iter(refs)
    if line == EMPTY_BLOCK.encode():
        if next(expected, None) is not None:
            raise TranscriptUnproven("the events block is empty and an event was written")
        _expect(fp, b"```\n")
        return
    for ref in expected:
        if not line.startswith(b"- "):
            raise TranscriptUnproven(f"an item of the events block begins {line[:40]!r}")
        item = [line]
        while (line := fp.readline()).startswith(b" "):
            item.append(line)
        if b"".join(item) != spool.item(ref):
            raise TranscriptUnproven("an item of the events block is not the proved item")
    if line != b"```\n":
        raise TranscriptUnproven(f"the events block goes on with {line[:40]!r}")


def _prove_table(fp: BinaryIO, rows: Iterable[SessionRow]) -> None:
    _expect(fp, b"\n", f"{HEADINGS[2]}\n".encode(), b"\n", *table_head().encode().splitlines(
        keepends=True))
    for row in rows:
        line = _text(fp.readline())
        if not line.endswith("\n"):
            raise TranscriptUnproven(f"the table ends before the row {row_line(row)!r}")
        back = session_row(line[:-1])
        if back != row:
            raise TranscriptUnproven(f"the row {line[:-1]!r} reads back as another row")
    if fp.read(1):
        raise TranscriptUnproven("the file goes on after the last row")


def _expect(fp: BinaryIO, *lines: bytes) -> None:
    for want in lines:
        got = fp.readline()
        if got != want:
            raise TranscriptUnproven(f"{got[:40]!r} stands where {want!r} was written")


def _text(raw: bytes) -> str:
    """One line read back: UTF-8 (strictly) without a carriage return (RC-16)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TranscriptUnproven(f"a line is not UTF-8: {exc}") from exc
    if "\r" in line:
        raise TranscriptUnproven("a line holds a carriage return")
    return line
