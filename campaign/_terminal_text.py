"""Text for a terminal: what a session sent, escaped so it can only be read, never obeyed.

A string a session controls (its served model, tool names and arguments, produced
paths, its final text, the result text a harness-error reason quotes) reaches the
operator's terminal through ``show``, ``status``, ``report``, ``record``, the live
view and error messages. Written raw, ``ESC ] 0 ; title BEL`` retitles the terminal,
``ESC [ 2 J`` clears it, ``ESC ] 52 ; c ; ... BEL`` writes the clipboard, a CSI
(0x9b) recolours it, and a newline starts a line the runner never wrote. Every
terminal writer passes such a string through `one_line` (a field on a line of its
own) or `block` (multi-line text), and prints it without rich markup (`cell`, or
``markup=False``), so ``[bold]`` or ``[link=...]`` stays text (docs/cli.md,
"What a session wrote, on the terminal").

The rule, one place: a character is escaped when it is a C0 control (U+0000..U+001F),
DEL (U+007F), a C1 control (U+0080..U+009F: CSI 0x9b, OSC 0x9d, NEL 0x85 ...), a
line or paragraph separator (U+2028, U+2029), a bidirectional embedding, override or
isolate (U+202A..U+202E, U+2066..U+2069: they reorder what the operator reads), or a
lone surrogate (U+D800..U+DFFF: no terminal encoding holds one). It is written
``\\n``, ``\\r`` or ``\\t`` for those three, ``\\xHH`` up to U+00FF and ``\\uHHHH``
beyond (lowercase hex), so ESC is ``\\x1b``. `block` keeps ``\\n`` and ``\\t`` and
escapes the rest. Nothing else changes: a backslash is not doubled, so the text
``\\x1b`` a session wrote reads as the escape does; the ledger keeps what was sent.
"""

from __future__ import annotations

import re
from typing import Final

from rich.text import Text

PIPE_WIDTH: Final = 10_000
"""Columns of a console that is not a terminal (a pipe, a log, a file): so wide that a table
takes the width it needs and no line is wrapped or a column cut. The report's and the command
line's consoles both use it."""

_ESCAPED: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Every character `one_line` writes as an escape (module docstring)."""
_BLOCK_ESCAPED: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""`_ESCAPED` less ``\\t`` and ``\\n``: what `block` escapes."""
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def one_line(text: object) -> str:
    """``text`` (``str()`` of it) as one line of a terminal: every control escaped.

    Args:
        text: Any value; a string a session sent, a path, a reason.

    Returns:
        The text with each character of the rule (module docstring) written as its
        escape, ``\\n`` included: the result holds no control byte and no line break,
        so it cannot move the cursor, retitle or clear the terminal, or start a line.
        E.g. ``"a\\x1b[2J\\nb"`` gives ``a\\x1b[2J\\nb`` (backslashes literal).
    """
    return _ESCAPED.sub(_escape, str(text))


def block(text: object) -> str:
    """``text`` as lines of a terminal: newlines and tabs kept, every other control escaped.

    For multi-line text (a session's final text) whose caller prefixes each line
    (``show`` writes ``    | `` before each), so no line it prints starts with what
    the session wrote. A carriage return is escaped (it would overwrite the prefix).

    Returns:
        `one_line`'s result with ``\\n`` and ``\\t`` left as they were.
    """
    return _BLOCK_ESCAPED.sub(_escape, str(text))


def cell(text: object, style: str = "") -> Text:
    """A rich `Text` of `one_line` of ``text``: a table cell or a title rich never parses as
    markup (``[bold]``, ``[link=...]`` stay as written)."""
    return Text(one_line(text), style=style)
