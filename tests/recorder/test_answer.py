"""RC-13, the answer rule: expectations taken from the recorder contract's own examples."""

from __future__ import annotations

import pytest

from recorder._answer import answer_words, extract_answer

STATUS = ["current HW-DR-0052", "retired HW-DR-0052", "superseded HW-DR-0052"]
WORDS = ["yes", "no"]


@pytest.mark.parametrize(
    ("final_text", "declared", "expected"),
    [
        # The contract's example: the same two facts in the other order, in the declared form.
        ("HW-DR-0052 current", STATUS, "current HW-DR-0052"),
        # The contract's example: the other miss has an extra word and stays no answer.
        ("0052 current HW-DR-0052", STATUS, None),
        # A missing word gives no value.
        ("current", STATUS, None),
        # A message whose last line is a sentence carries no answer.
        ("The document is current.", ["current"], None),
        # Markdown emphasis carries no answer.
        ("**yes**", WORDS, None),
        # The contract's example: reasoning, then the word on a line of its own, carries that word.
        ("I read the register and checked the date.\nyes", WORDS, "yes"),
        # Trailing blank lines are not the last non-empty line.
        ("Reasoning.\nno\n\n   \n", WORDS, "no"),
        # One trailing period is stripped ...
        ("yes.", WORDS, "yes"),
        # ... only one.
        ("yes..", WORDS, None),
        # Case folded, both sides, and the declared form is written.
        ("CURRENT hw-dr-0052", STATUS, "current HW-DR-0052"),
        ("YES", ["Yes"], "Yes"),
        # Trimmed, and runs of white space are one separator.
        ("   HW-DR-0052 \t  current   ", STATUS, "current HW-DR-0052"),
        # A wrong word of the set is recorded as that word (the grader finds it wrong).
        ("retired HW-DR-0052", STATUS, "retired HW-DR-0052"),
        # A declared answer is processed the same way (its own trailing period, case).
        ("done", ["Done."], "Done."),
    ],
)
def test_extract_answer_rule(final_text: str, declared: list[str], expected: str | None) -> None:
    assert extract_answer(final_text, declared) == expected


def test_extract_answer_no_text_is_null() -> None:
    assert extract_answer(None, WORDS) is None
    assert extract_answer("", WORDS) is None
    assert extract_answer("\n \n", WORDS) is None


def test_extract_answer_no_declared_answers_is_null() -> None:
    assert extract_answer("yes", []) is None


def test_extract_answer_two_declared_with_equal_word_sets_is_null() -> None:
    # "a b" and "b a" are two declared answers with one word set: not exactly one.
    assert extract_answer("a b", ["a b", "b a"]) is None


def test_extract_answer_identical_duplicates_count_once() -> None:
    assert extract_answer("yes", ["yes", "yes"]) == "yes"


@pytest.mark.parametrize(
    ("final_text", "expected"),
    [
        # A "\r" does not end a line: "reasoning\ryes" is one line of two words.
        ("reasoning\ryes", None),
        # U+2028 and U+0085 do not end a line either.
        ("reasoning\u2028yes", None),
        ("reasoning\x85yes", None),
        # A CRLF line end: "\r" is trimmed as white space.
        ("reasoning\r\nyes\r\n", "yes"),
    ],
    ids=["cr", "u2028", "nel", "crlf"],
)
def test_extract_answer_lines_end_at_newline_only(final_text: str, expected: str | None) -> None:
    assert extract_answer(final_text, WORDS) == expected


def test_answer_words_is_a_set() -> None:
    assert answer_words(" B a b. ") == frozenset({"a", "b"})
    assert answer_words("x..") == frozenset({"x."})
