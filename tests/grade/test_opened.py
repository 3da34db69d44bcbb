"""``opened`` and ``not_opened`` from the contract's own sentences (DESIGN "Grading"; the spec:
"ls and rm of the document count as reads of it. The target of an output redirect and an
argument of tee are writes, and they do not count. The body of a heredoc is text and not a
command ... The grader expands nothing.")."""

from __future__ import annotations

import time

import pytest

from campaign.expect import Expectations
from campaign.grade import Evidence, Verdict, event_verdicts

from .events import DOC, WORKSPACE, call, event

OPENED = Expectations(opened=(DOC,))
NOT_OPENED = Expectations(not_opened=(DOC,))


def _opened(command: str, tool: str = "Bash") -> Verdict:
    (verdict,) = event_verdicts(event(calls=[call(tool, command)]), 0, OPENED, WORKSPACE)
    return verdict.verdict


@pytest.mark.parametrize("command", [
    f"ls {DOC}",                        # "ls ... of the document count as reads of it"
    f"rm {DOC}",
    f"cat '{DOC}'",                     # quotes are removed, not expanded
    f"cat ./{DOC}",                     # lexically the same path
    f"wc -l < {DOC}",                   # an input redirect reads it
    f"cat {WORKSPACE}/{DOC}",           # absolute under the workspace path
    f"cat <<EOF\nhello\nEOF\nhead {DOC}",  # after the heredoc's body, a command again
    f"echo x | tee out.txt; grep -c y {DOC}",  # tee ends with its simple command
    f"echo `cat {DOC}`",                # an unquoted backtick separates words as $( ) do
    f"cat <> {DOC}",                    # opened for reading and writing on stdin: a read
    f"cat $'{DOC}'",                    # ANSI-C quoting: the quoted text is the word
    "cat $'" + DOC.replace("/", "\\x2f") + "'",  # its escapes decoded (\x2f is /)
])
def test_a_bash_word_naming_the_document_opens_it(command: str) -> None:
    assert _opened(command) is Verdict.SATISFIED


@pytest.mark.parametrize("command", [
    f"cat <<EOF\n{DOC}\nEOF",            # "the body of a heredoc is text and not a command"
    f"cat <<'EOF'\n{DOC}\nEOF",
    f"cat <<-EOF\n\t{DOC}\n\tEOF",
    f"tee {DOC}",                        # "an argument of tee ... does not count"
    f"echo x | tee -a {DOC}",
    f"echo x > {DOC}",                   # "the target of an output redirect"
    f"echo x >> {DOC}",
    f"echo x 2>{DOC}",
    f"echo x &> {DOC}",
    f"echo x >| {DOC}",
    f'echo "`cat {DOC}`"',               # inside double quotes a backtick stays in the word
    f"bash -c 'cat {DOC}'",              # one word: the command string is not parsed again
    f"bash <<EOF\ncat {DOC}\nEOF",       # a heredoc fed to a shell is still a body: text
    f"cat $DIR/{DOC.split('/', 1)[1]}",  # "the grader expands nothing"
    "cat docs/decisions/*.md",
    f'echo "$(cat {DOC})"',
    f"cat /elsewhere/{DOC}",             # absolute, not under the workspace path
    f"cat '{DOC}",                       # does not lex: the shell ran nothing
])
def test_a_word_that_is_written_text_or_expanded_does_not_open_it(command: str) -> None:
    assert _opened(command) is Verdict.UNSATISFIED


@pytest.mark.parametrize(("tool", "argument"), [
    ("Read", DOC), ("Edit", DOC), ("Write", DOC), ("MultiEdit", DOC), ("NotebookEdit", DOC),
    ("Read", f"{WORKSPACE}/{DOC}"),
    ("Grep", f"status: in {DOC}"),
    ("Grep", f"a in b in {DOC}"),        # the pattern holds " in "
])
def test_a_path_argument_or_grep_path_equal_to_the_document_opens_it(tool: str,
                                                                     argument: str) -> None:
    assert _opened(argument, tool) is Verdict.SATISFIED


@pytest.mark.parametrize(("tool", "argument"), [
    ("Grep", "status: in docs/decisions"),  # a directory is not the document
    ("Grep", "FX-DR-0001"),                 # no path: the whole workspace
    ("Glob", DOC),                          # not a tool the contract counts
    ("Read", f"../{DOC}"),
])
def test_other_calls_do_not_open_it(tool: str, argument: str) -> None:
    assert _opened(argument, tool) is Verdict.UNSATISFIED


def test_an_event_without_calls_is_not_observed_never_unsatisfied() -> None:
    for expectations in (OPENED, NOT_OPENED):
        (verdict,) = event_verdicts(event(answer="x"), 4, expectations, WORKSPACE)
        assert verdict.verdict is Verdict.NOT_OBSERVED
        assert verdict.evidence is None


def test_calls_empty_is_watched_and_saw_none() -> None:
    (opened,) = event_verdicts(event(calls=[]), 0, OPENED, WORKSPACE)
    (unopened,) = event_verdicts(event(calls=[]), 0, NOT_OPENED, WORKSPACE)
    assert opened.verdict is Verdict.UNSATISFIED
    assert unopened.verdict is Verdict.SATISFIED and unopened.evidence == Evidence(0)


def test_the_satisfied_verdict_names_its_event_and_call() -> None:
    calls = [call("Glob", "docs/*"), call("Read", "CLAUDE.md"), call("Read", DOC),
             call("Bash", f"cat {DOC}")]
    (verdict,) = event_verdicts(event(calls=calls), 3, OPENED, WORKSPACE)
    assert verdict.verdict is Verdict.SATISFIED
    assert verdict.evidence == Evidence(event=3, call=2)
    (broken,) = event_verdicts(event(calls=calls), 3, NOT_OPENED, WORKSPACE)
    assert broken.verdict is Verdict.UNSATISFIED and broken.evidence == Evidence(3, 2)


def test_no_workspace_path_leaves_absolute_words_naming_nothing() -> None:
    (verdict,) = event_verdicts(event(calls=[call("Bash", f"cat {WORKSPACE}/{DOC}")]), 0,
                                OPENED, None)
    assert verdict.verdict is Verdict.UNSATISFIED


def test_a_grep_pattern_of_a_million_splits_is_graded_at_once() -> None:
    argument = "x in " * 1_000_000 + f"y in {DOC}"
    started = time.monotonic()
    assert _opened(argument, "Grep") is Verdict.SATISFIED
    assert time.monotonic() - started < 2.0  # every split joined again would take minutes
