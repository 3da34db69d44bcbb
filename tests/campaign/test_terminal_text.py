"""`campaign._terminal_text`: what a session sent, escaped for the terminal (docs/cli.md).

Expected values come from the rule: C0, DEL, C1, U+2028/U+2029, bidi controls and lone
surrogates escaped (``\\n``, ``\\r``, ``\\t``, ``\\xHH`` up to U+00FF, ``\\uHHHH`` beyond);
everything else kept; `block` keeps ``\\n`` and ``\\t``.
"""

from __future__ import annotations

import pytest
from rich.console import Console

from campaign._terminal_text import block, cell, one_line


@pytest.mark.parametrize(("text", "shown"), [
    ("plain 2.1.197", "plain 2.1.197"),
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
    ("\x1b[2J", "\\x1b[2J"),
    ("\x1b]52;c;UFdORUQ=\x07", "\\x1b]52;c;UFdORUQ=\\x07"),
    ("\x9b31m\x9d0;t\x9c", "\\x9b31m\\x9d0;t\\x9c"),
    ("a\nb\rc\td", "a\\nb\\rc\\td"),
    ("\x00\x7f\x85", "\\x00\\x7f\\x85"),
    ("\u2028\u2029", "\\u2028\\u2029"),
    ("\u202eevil\u2066", "\\u202eevil\\u2066"),
    ("\udcff\ud800", "\\udcff\\ud800"),
    ("caf\u00e9 \u00a0 \U0001f600 [bold]x[/bold] \\x1b",
     "caf\u00e9 \u00a0 \U0001f600 [bold]x[/bold] \\x1b"),
])
def test_one_line_escapes_exactly_the_controls(text: str, shown: str) -> None:
    assert one_line(text) == shown


def test_one_line_output_holds_no_control_at_all() -> None:
    every = "".join(map(chr, range(0x110000)))
    out = one_line(every)
    assert not [ch for ch in out if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F
                or 0xD800 <= ord(ch) <= 0xDFFF or ch in "\u2028\u2029"]


def test_block_keeps_lines_and_tabs_only() -> None:
    assert block("a\tb\nc\x1b[2J\rd\u2028") == "a\tb\nc\\x1b[2J\\rd\\u2028"
    assert block("x\\ty") == "x\\ty"  # a backslash the session wrote is not a tab


def test_cell_is_never_markup() -> None:
    console = Console(width=200, no_color=True, color_system=None)
    with console.capture() as captured:
        console.print(cell("[bold]b[/bold] [link=x]l[/link] \x1b[2J"))
    assert captured.get() == "[bold]b[/bold] [link=x]l[/link] \\x1b[2J\n"
