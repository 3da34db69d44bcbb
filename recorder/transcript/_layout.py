"""The RC-16 layout: its pieces (`row_line`, `table_head`, `yaml_block`, `session_row`,
`read_identity`) and `parse_transcript`, which reads it whole.

The one writer, `write_streamed`, writes the layout from these pieces and
proves its output by reading it back through them (the writer "proves its own
output by reading it back through the same closed models", RC-16).
"""

from __future__ import annotations

import re
from typing import Final

from pydantic import ValidationError

from ._closed import check_closed, refusal
from ._errors import TranscriptRefused
from ._events import read_events
from ._models import (
    HEADINGS,
    SESSIONS_HEADER,
    Identity,
    SessionRow,
    Transcript,
)
from ._yaml import yaml_load

_SESSIONS_RULE: Final = "|---|---|---|---|"


def row_line(row: SessionRow) -> str:
    """The ``## Sessions`` table's line of ``row`` (without its newline)."""
    return f"| {row.probe} | {row.session} | {row.state} | {row.outside_paths} |"


def table_head() -> str:
    """The ``## Sessions`` table's first two lines, each with its newline."""
    return f"{SESSIONS_HEADER}\n{_SESSIONS_RULE}\n"


_HEADING_LINES: Final = {h: re.compile("^" + re.escape(h) + "$", re.MULTILINE) for h in HEADINGS}


def _sections(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The prose, and the span (start, end) of ``text`` that each heading's section holds.

    A section is the lines after its heading line up to the next heading line, or to the
    end: the span ends before the newline that precedes the next heading, and is empty
    when no line stands between. Spans, not lists of lines: a transcript of N events is
    not split into its lines to be read back (about 2 kB per event at once).
    """
    found: dict[str, list[int]] = {h: [m.start() for m in _HEADING_LINES[h].finditer(text)]
                                   for h in HEADINGS}
    for heading, where in found.items():
        if len(where) != 1:
            state = (
                "missing"
                if not where
                else "repeated at lines "
                + ", ".join(str(text.count("\n", 0, i) + 1) for i in where)
            )
            raise TranscriptRefused(
                "RC-16", f"heading {heading!r} is {state}; each appears exactly once"
            )
    starts = [found[h][0] for h in HEADINGS]
    if starts != sorted(starts):
        raise TranscriptRefused("RC-16", f"headings out of order; expected {' / '.join(HEADINGS)}")
    spans = []
    for k, heading in enumerate(HEADINGS):
        begin = starts[k] + len(heading) + 1  # past the heading line and its newline
        end = starts[k + 1] - 1 if k + 1 < len(starts) else len(text)
        spans.append((begin, max(begin, end)))
    return (text[: starts[0] - 1] if starts[0] else ""), spans


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of ``text[start:end]``'s lines without the blank lines at either end."""
    while start < end:
        newline = text.find("\n", start, end)
        stop = end if newline < 0 else newline
        if text[start:stop].strip():
            break
        start = end if newline < 0 else newline + 1
    while end > start:
        newline = text.rfind("\n", start, end)
        begin = start if newline < 0 else newline + 1
        if text[begin:end].strip():
            break
        end = start if newline < 0 else newline
    return start, end


def _lines(text: str, span: tuple[int, int]) -> list[str]:
    """The lines of a section, blank lines at either end dropped."""
    start, end = _trim(text, *span)
    return text[start:end].split("\n") if start < end else []


_OPEN_FENCE: Final = "```yaml\n"
_CLOSE_FENCE: Final = "\n```"


def yaml_block(text: str, span: tuple[int, int], heading: str) -> str:
    """The YAML text of the one fenced block a section of ``text`` holds (its lines, each with
    its newline); ``span`` is the section's (start, end), ``heading`` names it.

    Raises:
        TranscriptRefused: the section holds something besides one ```` ```yaml ```` block.
    """
    start, end = _trim(text, *span)
    first, last = text.find("\n", start, end), text.rfind("\n", start, end)
    if (first < 0 or not text.startswith(_OPEN_FENCE, start, end)
            or not text.endswith(_CLOSE_FENCE, start, end)):
        raise TranscriptRefused(
            "RC-16", f"{heading} must hold exactly one ```yaml block and nothing else"
        )
    if first == last:
        return "\n"  # the fences alone: no line between them
    inner = text[first + 1 : last + 1]
    if inner.startswith("```") or "\n```" in inner:
        raise TranscriptRefused(
            "RC-16", f"{heading} must hold exactly one ```yaml block; found another fence"
        )
    return inner


_ROW: Final = re.compile(r"\A\|(.*)\|\Z")
_RULE_ROW: Final = re.compile(r"\A\|(?: *:?-{3,}:? *\|){4}\Z")


def _session_rows(body: list[str]) -> list[SessionRow]:
    if not body or body[0] != SESSIONS_HEADER:
        got = body[0] if body else "nothing"
        raise TranscriptRefused(
            "RC-16", f"## Sessions must open with {SESSIONS_HEADER!r}; found {got!r}"
        )
    if len(body) < 2 or not _RULE_ROW.match(body[1]):
        raise TranscriptRefused("RC-16", "## Sessions table lacks its |---| separator row")
    return [session_row(line) for line in body[2:]]


def session_row(line: str) -> SessionRow:
    """One ``## Sessions`` table line (without its newline) read through `SessionRow`.

    Raises:
        TranscriptRefused: not four cells, or a cell breaks the row's rules (RC-16).
    """
    m = _ROW.match(line)
    cells = [c.strip() for c in m.group(1).split("|")] if m else []
    if len(cells) != 4 or not cells[3].isdigit():
        raise TranscriptRefused("RC-16", f"malformed ## Sessions row: {line!r}")
    values = dict(zip(("probe", "session", "state"), cells, strict=False))
    try:
        return SessionRow.model_validate({**values, "outside_paths": int(cells[3])})
    except ValidationError as exc:
        raise refusal(exc, f"## Sessions row {line!r}", "RC-16") from exc


def _plain_text(text: str) -> None:
    if "\r" in text:
        line = text[: text.index("\r")].count("\n") + 1
        raise TranscriptRefused(
            "RC-16",
            f"a carriage return (CRLF line ending) on line {line}; "
            "a transcript's lines end with \\n only",
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text[: exc.start].count("\n") + 1
        raise TranscriptRefused(
            "RC-16", f"line {line} holds {text[exc.start]!r}, which UTF-8 cannot encode"
        ) from exc


def parse_transcript(text: str) -> Transcript:
    """Check ``text`` against the contract and return the transcript it holds.

    This is the contract check (RC-14..RC-16, RC-10..RC-12): the RC-16 layout
    exactly (each heading once, in order; one ```` ```yaml ```` block under each
    of the first two and nothing else there; the sessions table), keys only
    from the four closed sets, all twelve identity keys, whole-number
    ``cost_cents``, digests where digests go, session names distinct within a
    probe, every event's session listed as ``recorded``. Prose is free; only
    the ``Outside-workspace paths named: N`` line is read (it must equal the
    table's sum).

    The text itself is plain: its lines end with ``\n`` only (a carriage
    return, as in a CRLF file, is refused with its line number) and it
    encodes as UTF-8 (no lone surrogate), so whatever parses here can be
    written and read back as the UTF-8 Markdown RC-16 defines.

    Raises:
        TranscriptRefused: the first breach found, with its rule and place.
    """
    _plain_text(text)
    prose, (identity_span, events_span, sessions_span) = _sections(text)
    identity = read_identity(yaml_block(text, identity_span, HEADINGS[0]))
    events_text = yaml_block(text, events_span, HEADINGS[1])
    events = read_events(events_text)
    del events_text  # a copy of the block: not held beside the rows' models
    sessions = _session_rows(_lines(text, sessions_span))
    try:
        return Transcript(prose=prose, identity=identity, events=events, sessions=sessions)
    except ValidationError as exc:
        raise refusal(exc, "transcript", "RC-16") from exc


def read_identity(block: str) -> Identity:
    """The ``## Run identity`` block's YAML text (without its fences) read through `Identity`.

    Raises:
        TranscriptRefused: it does not load, breaks the closed key set, lacks a key
            (RC-14) or a value breaks its rule.
    """
    raw = check_closed(yaml_load(block, HEADINGS[0]), Identity, "## Run identity")
    missing = [k for k in Identity.model_fields if k not in raw]
    if missing:
        raise TranscriptRefused(
            "RC-14", f"## Run identity lacks {', '.join(missing)}; all twelve keys are required"
        )
    try:
        return Identity.model_validate(raw)
    except ValidationError as exc:
        raise refusal(exc, "## Run identity", "RC-14") from exc
