"""How a string that came from the session enters the prose: one JSON literal (`prose_value`)."""

from __future__ import annotations

import json
from typing import Final

_MARKUP_ESCAPES: Final = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&`"})
"""Beyond JSON's own escapes: HTML's three (as JSON encoders that embed in HTML do) and the
backtick, which opens a Markdown code span."""


def prose_value(value: str) -> str:
    """``value``, a string that came from the session, as the prose writes it: one JSON literal.

    The rule: the JSON string literal of ``value`` (``json.dumps`` with
    ``ensure_ascii``): double quotes around it, ``"`` and ``\\`` escaped, every
    control character and every non-ASCII character as ``\\uXXXX`` (U+2028,
    U+0085 and a lone surrogate included; a character outside the BMP as its
    UTF-16 pair), and then ``<``, ``>``, ``&`` and the backtick as ``\\u003c``,
    ``\\u003e``, ``\\u0026`` and ``\\u0060``. The result is one line of
    printable ASCII (32..126) whose extent its quotes mark; ``json.loads`` of it
    gives back ``value`` exactly. So it cannot end its line, be a heading, open
    an HTML comment or a code span, or close a fence, and it never makes a
    render fail. No value is cut: a long value gives a long line.

    Args:
        value: Any string, as the session sent it (any length, any code points).

    Returns:
        The literal, quotes included, e.g. ``"2.1.197"`` for ``2.1.197``.
    """
    return json.dumps(value, ensure_ascii=True).translate(_MARKUP_ESCAPES)
