r"""The answer rule (docs/glossary.md RC-13; the recorder contract, "the answer is the final line").

The answer is read off the final message's last non-empty line, compared as a
set of words with each declared answer, and written in its declared form.

Lines end at ``"\n"`` only. ``"\r"``, ``"\v"``, ``"\f"``, U+0085, U+2028,
U+2029 and the other characters `str.splitlines` would break at do not end a
line: a ``"\r"`` before ``"\n"`` is trimmed as white space, and the others,
being white space to `str.split`, separate words within the line. A line is
empty when it holds only white space.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

LINE_END: Final = "\n"
"""The one character that ends a line for RC-13."""


def answer_words(text: str) -> frozenset[str]:
    """The word set of one line: trimmed, one trailing period stripped, case folded, split.

    ``"HW-DR-0052 current."`` -> ``{"hw-dr-0052", "current"}``; ``"word.."``
    keeps one period (``{"word."}``). Both sides of the comparison use this.
    """
    line = text.strip()
    if line.endswith("."):
        line = line[:-1]
    return frozenset(line.casefold().split())


def extract_answer(final_text: str | None, declared: Sequence[str]) -> str | None:
    """Return the declared answer the final message's last line states, or None (RC-13).

    Args:
        final_text: the final message's text blocks concatenated (RC-13), or
            None when the final message had no text block.
        declared: the probe's declared answers, in their declared form.

    Returns:
        The declared form of the one declared answer whose word set equals the
        last non-empty line's word set. None when there is no text, no
        declared answer, no match, or more than one distinct declared answer
        with that word set (identical duplicate strings count once).
    """
    if not final_text or not declared:
        return None
    last = next((line for line in reversed(final_text.split(LINE_END)) if line.strip()), None)
    if last is None:
        return None
    words = answer_words(last)
    if not words:
        return None
    matches = {answer for answer in declared if answer_words(answer) == words}
    return matches.pop() if len(matches) == 1 else None
