"""The linear shell-word splitter against shlex, the definition it keeps (RC-08's Bash words)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder._shellwords import UnbalancedQuote, shell_words


def shlex_words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


CASES = [
    "cat /etc/passwd", "ls -la ~/x ../y", "echo 'a b' \"c d\" e\\ f", "a\"b c\"d",
    "grep -r x . > /tmp/out 2>&1", "a&&b||c;d|e", "echo '' \"\"", "echo a#b c", "# all comment",
    "x # trailing /etc/shadow\ny /etc/hosts", 'echo "a\\"b\\\\c\\$d"', "echo \\\n/x",
    "(cd /a && ls)", "cat<</tmp/in>>/tmp/out", "echo \"multi\nline\" /z", "\t a \r\n b ",
]


@pytest.mark.parametrize("command", CASES)
def test_the_words_are_shlexs(command: str) -> None:
    assert shell_words(command) == shlex_words(command)


@pytest.mark.parametrize("command", ["echo 'open", 'echo "open', "trailing \\"])
def test_unbalanced_quoting_is_refused_as_shlex_refuses_it(command: str) -> None:
    with pytest.raises(ValueError):
        shlex_words(command)
    with pytest.raises(UnbalancedQuote):
        shell_words(command)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=list(" \t\n'\"\\#;&|<>()ab/.~-$"), max_size=40))
def test_any_command_splits_as_shlex_splits_it(command: str) -> None:
    try:
        expected = shlex_words(command)
    except ValueError:
        with pytest.raises(UnbalancedQuote):
            shell_words(command)
        return
    assert shell_words(command) == expected


def test_a_long_word_splits_without_quadratic_work() -> None:
    # 4 MB in one word: shlex builds it a character at a time; this is one regex match.
    word = "/x" * 2_000_000
    assert shell_words(f"cat {word}") == ["cat", word]
