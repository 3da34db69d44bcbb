"""The shell words of a Bash command, in one linear pass (for RC-08's outside paths).

`shell_words` gives what ``shlex.shlex(command, posix=True,
punctuation_chars=True)`` with ``whitespace_split`` gives: POSIX quoting
(``'...'`` literal, ``"..."`` in which a backslash escapes only a backslash
or a double quote, a bare backslash taking the next character as it is),
runs of ``( ) ; < > | &`` as words of their own, and an unquoted ``#``
ending the word and beginning a comment to the end of the line (as shlex
has it, also inside a word). Unlike shlex, which builds each token a character at a
time (quadratic for a long word: a 4 MB command took minutes), this takes
time linear in the command's length. An unclosed quote gives `UnbalancedQuote`
(shlex raises ValueError there too).
"""

from __future__ import annotations

import re
from typing import Final

_PUNCTUATION: Final = "();<>|&"
_TOKEN: Final = re.compile(
    r"""(?P<space>[ \t\r\n]+)"""
    r"""|(?P<single>'[^']*')"""
    r"""|(?P<double>"(?:[^"\\]|\\.)*")"""
    r"""|(?P<escape>\\.)"""
    r"""|(?P<punct>[();<>|&]+)"""
    r"""|(?P<comment>\#[^\n]*)"""
    r"""|(?P<plain>[^ \t\r\n'"\\();<>|&\#]+)""",
    re.DOTALL,
)
_DOUBLE_ESCAPES: Final = re.compile(r'\\([\\"])')


class UnbalancedQuote(ValueError):
    """A quote is opened and never closed (or the command ends with a lone backslash)."""


def shell_words(command: str) -> list[str]:
    """The words of ``command`` as a POSIX shell lexer (shlex's punctuation mode) gives them.

    Raises:
        UnbalancedQuote: an unclosed quote, or a trailing lone backslash.
    """
    words: list[str] = []
    current: list[str] = []
    in_word = False
    pos, end = 0, len(command)
    while pos < end:
        m = _TOKEN.match(command, pos)
        if m is None:
            raise UnbalancedQuote(f"no closing quote after position {pos}")
        kind = m.lastgroup
        text = m.group()
        pos = m.end()
        if kind == "space":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        elif kind == "punct":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            words.append(text)
        elif kind == "comment":  # to the end of the line; it ends the word it meets
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        elif kind == "single":
            current.append(text[1:-1])
            in_word = True
        elif kind == "double":
            current.append(_DOUBLE_ESCAPES.sub(_unescape, text[1:-1]))
            in_word = True
        elif kind == "escape":
            current.append(text[1])
            in_word = True
        else:
            current.append(text)
            in_word = True
    if in_word:
        words.append("".join(current))
    return words


def _unescape(m: re.Match[str]) -> str:
    return m.group(1)
