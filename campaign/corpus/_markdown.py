"""The Markdown a corpus file is cut into: lines, front matter, the ``## Task`` section.

Pure text functions, no I/O (docs/plan.md states the rules):

* `split_lines` - lines end at ``\\n`` only.
* `opens_front_matter` / `split_front_matter` - front matter is the lines
  between a first line ``---`` and the next line ``---`` (``\\r`` allowed
  before each line's ``\\n``). A Markdown file whose first line is not ``---``
  has none: under ``docs/`` it is an *untyped file*. One whose first line is
  ``---`` and that no later ``---`` line closes has broken front matter.
* `task_of` - the probe's prompt (RC-04), word for word.
"""

from __future__ import annotations

import re
from typing import Final

_LINE_RE: Final = re.compile(r"[^\n]*\n|[^\n]+\Z")
_OPEN_RE: Final = re.compile(r"---\r*(?:\n|\Z)")
"""A first line ``---`` (what ``line.rstrip("\\r\\n") == "---"`` accepts for a first line)."""
_OPEN_BYTES_RE: Final = re.compile(rb"---\r*(?:\n|\Z)")
_CLOSE_RE: Final = re.compile(r"^---\r*$", re.MULTILINE)
"""A later line ``---``: in MULTILINE mode ``^`` and ``$`` see ``\\n`` only, as `split_lines`."""
_FENCE_RE: Final = re.compile(r"\A {0,3}(`{3,}|~{3,})")
_HEADING_RE: Final = re.compile(r"\A {0,3}(#{1,6})(?:[ \t]|\Z)")
_TASK_HEADING_RE: Final = re.compile(r"\A {0,3}##[ \t]+Task[ \t]*(?:#+[ \t]*)?\Z")
_TASKISH_RE: Final = re.compile(r"\A {0,3}#{1,6}[ \t]+tasks?\b", re.IGNORECASE)
"""A heading that looks like the task heading and is not it (``### Task``, ``## task``)."""
_UNSPACED_RE: Final = re.compile(r"\A {0,3}#{1,6}tasks?\b", re.IGNORECASE)
"""A line ``##Task``: with no space after the ``#`` marks it is not a heading at all."""
_HINTS_SHOWN: Final = 5
"""At most this many headings are quoted when a probe has no ``## Task``."""


class TaskSectionError(ValueError):
    """A probe body without exactly one non-empty ``## Task`` section; the message says what
    was found instead (the near misses, with their line numbers)."""


def split_lines(text: str) -> list[str]:
    """Lines ending at ``\\n`` only, each with its terminator (the last may have none)."""
    return _LINE_RE.findall(text)


def opens_front_matter(text: str | bytes) -> bool:
    """True when the first line of ``text`` is ``---`` (trailing ``\\r`` allowed).

    Bytes are looked at as they are, so a file in another encoding that does
    not open front matter is never decoded.
    """
    if isinstance(text, bytes):
        return _OPEN_BYTES_RE.match(text) is not None
    return _OPEN_RE.match(text) is not None


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Split ``text`` into (front matter YAML, body); (None, text) when there is none.

    Front matter is the lines between a first line ``---`` and the next line
    ``---`` (a trailing ``\\r`` allowed on both). The body is everything after
    the closing line's ``\\n``. When the first line is ``---`` and no line
    closes it, the result is (None, text) too: `opens_front_matter` tells the
    two apart. Reads only as far as the closing line, so its cost does not
    grow with the body.
    """
    opened = _OPEN_RE.match(text)
    if opened is None:
        return None, text
    closed = _CLOSE_RE.search(text, opened.end())
    if closed is None:
        return None, text
    body_start = closed.end() + 1 if closed.end() < len(text) else closed.end()
    return text[opened.end() : closed.start()], text[body_start:]


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(index, level, content) of each ATX heading outside fenced code blocks."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        content = line.rstrip("\r\n")
        opener = _FENCE_RE.match(content)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and content.strip() == opener.group(1):
                fence = None
            continue
        if opener:
            fence = opener.group(1)
        elif heading := _HEADING_RE.match(content):
            found.append((i, len(heading.group(1)), content))
    return found


def _no_task_found(lines: list[str], heads: list[tuple[int, int, str]], first_line: int) -> str:
    """What the body has instead of a ``## Task`` heading, in words, with line numbers."""
    near = [f"`{content.strip()}` on line {i + first_line}" for i, _, content in heads
            if _TASKISH_RE.match(content)]
    if near:
        return ("found " + ", ".join(near[:_HINTS_SHOWN]) + "; the task is the section under "
                "a level-2 heading spelled exactly `## Task`")
    outside = {i for i, _, _ in heads}
    unspaced = [f"`{line.strip()}` on line {i + first_line}" for i, line in enumerate(lines)
                if i not in outside and _UNSPACED_RE.match(line)]
    if unspaced:
        return ("found " + ", ".join(unspaced[:_HINTS_SHOWN]) + ", which is not a heading: "
                "Markdown needs a space after the `#` marks, as in `## Task`")
    fenced = [i for i, line in enumerate(lines)
              if i not in outside and _TASK_HEADING_RE.match(line.rstrip("\r\n"))]
    if fenced:
        return (f"the `## Task` on line {fenced[0] + first_line} is inside a fenced code block, "
                "where it is not a heading")
    level2 = [f"`{content.strip()}` (line {i + first_line})" for i, level, content in heads
              if level == 2]
    if level2:
        return "the level-2 headings are " + ", ".join(level2[:_HINTS_SHOWN])
    return "the body has no level-2 heading at all"


def task_of(body: str, *, first_line: int = 1) -> str:
    """The body of the ``## Task`` section, word for word (RC-04; docs/plan.md).

    The section runs from the line after the heading ``## Task`` to the next
    ATX heading of level 1 or 2 outside a fenced code block, or the end of
    the file. Blank (empty or white-space-only) lines at its start and end are
    dropped, and the line terminator of its last line; every other byte is
    kept (inner blank lines, indentation, trailing spaces, ``\\r``, ``###``
    sub-headings).

    Args:
        body: the probe file's text after its front matter.
        first_line: the file's line number of the first line of ``body``, so
            the messages name lines of the file.

    Raises:
        TaskSectionError: no ``## Task`` heading (the message says what was
            found instead: ``### Task``, ``## task``, a fenced ``## Task``, or
            the level-2 headings there are), more than one, or an empty section.
    """
    lines = split_lines(body)
    heads = _headings(lines)
    starts = [i for i, level, content in heads if level == 2 and _TASK_HEADING_RE.match(content)]
    if not starts:
        raise TaskSectionError("no `## Task` section, which holds the prompt the session gets, "
                               f"word for word: {_no_task_found(lines, heads, first_line)}")
    if len(starts) > 1:
        where = ", ".join(str(i + first_line) for i in starts)
        raise TaskSectionError(f"{len(starts)} `## Task` sections (lines {where}); a probe has "
                               "exactly one")
    end = next((i for i, level, _ in heads if i > starts[0] and level <= 2), len(lines))
    section = lines[starts[0] + 1 : end]
    while section and not section[0].strip():
        section.pop(0)
    while section and not section[-1].strip():
        section.pop()
    if not section:
        raise TaskSectionError(f"the `## Task` section (line {starts[0] + first_line}) is empty")
    task = "".join(section)
    return task.removesuffix("\n").removesuffix("\r") if task.endswith("\n") else task
