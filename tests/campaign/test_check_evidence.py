"""``check-transcript FILE --batch BATCH``: a transcript held to its batch's evidence.

Rules (docs/transcript.md "Checking a transcript against its batch", docs/cli.md):

- Alone, check-transcript proves the form: a file that passes the closed models is
  "well-formed" (exit 0), whatever its values say.
- With ``--batch``, every event of the file's arm is derived again from the batch's kept
  streams with the current recorder and compared with the file: an event, a row's state or
  an identity member that does not match is refused (exit 1), the message naming the
  session, the key and both values, escaped for the terminal.
- "could not verify" (exit 4, never a pass) when the file's runner (identity ``harness``) is
  not this runner, when a stream was not kept (``--no-keep-streams``) or is missing, or when
  a session's workspace is gone while its produced artifacts need it; it says which and why.
- All match: "verified clean" (exit 0). A copy of the transcript elsewhere is matched to the
  batch by its arm.

The batch is the format-2 fixture (tests/campaign/test_format2_batch.py says how it was
made): every session that ran kept its stream and workspace. Each test forges one thing on
a copy; the expected values are read from the fixture's ledger and transcript with ``json``
and plain text, not from the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from campaign.batch import BatchLock
from tests.campaign.batch_fixture import cli, fixture_copy, last_finals

if TYPE_CHECKING:
    from collections.abc import Iterator

ANSWERED: Final = ("present", "FX-PRB-0002", "s1")
"""A recorded session with an answer, calls and a produced note (notes/records.md)."""
READER: Final = ("present", "FX-PRB-0001", "s1")
"""A recorded session with a Grep and a Read, and nothing produced (``produced: []``)."""
FAILED: Final = ("present", "FX-PRB-0003", "s1")
"""A session whose one attempt ended harness-error (its row is not recorded)."""
EXIT_REFUSED: Final = 1
EXIT_UNVERIFIED: Final = 4


@pytest.fixture
def copy() -> Iterator[Path]:
    """A fresh copy of the format-2 fixture (batch, corpus, scripts) for each test."""
    yield from fixture_copy("format2")


def _check(copy: Path, *files: Path, batch: bool = True) -> tuple[int, list[str]]:
    """Run check-transcript on ``files`` (against the copy's batch and corpus when ``batch``);
    its exit status and stdout lines."""
    extra = ["--batch", str(copy / "batch"), "--corpus", str(copy / "corpus")] if batch else []
    run = cli("check-transcript", *map(str, files), *extra)
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, run.stdout.splitlines()


def _transcript(copy: Path, arm: str = "present") -> Path:
    return copy / "batch" / "transcripts" / f"{arm}.md"


def _forged(copy: Path, old: str, new: str, *, name: str = "forged.md") -> Path:
    """A copy of the present arm's transcript outside the batch with ``old`` made ``new``
    (once: the forgery touches one value)."""
    text = _transcript(copy).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = copy / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def _final(copy: Path, key: tuple[str, str, str]) -> dict[str, Any]:
    return last_finals(copy / "batch")[key]


def _rewrite_ledger(copy: Path, change: Any) -> None:
    """Apply ``change`` to each ledger record (a dict, changed in place), keeping its line
    form: one JSON object per line, keys sorted, no spaces (as the runner writes them)."""
    path = copy / "batch" / "ledger.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for record in records:
        change(record)
    path.write_text("".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n"
                            for r in records), encoding="utf-8")


def test_an_honest_transcript_and_a_copy_of_it_elsewhere_are_verified_clean(copy: Path) -> None:
    elsewhere = copy / "kept-aside.md"
    elsewhere.write_bytes(_transcript(copy).read_bytes())
    status, lines = _check(copy, _transcript(copy, "absent"), elsewhere)
    assert status == 0, lines
    assert lines == [f"{_transcript(copy, 'absent')}: verified clean",
                     f"{elsewhere}: verified clean"]


def test_two_arms_transcripts_swapped_in_the_batch_are_refused(copy: Path) -> None:
    """Each file is honest about its own arm, but the grader and the report read an arm's
    transcript by its name: present's text at absent.md and absent's at present.md would
    swap the arms' results, so each is refused for standing in the other arm's place."""
    present, absent = _transcript(copy, "present"), _transcript(copy, "absent")
    texts = present.read_bytes(), absent.read_bytes()
    present.write_bytes(texts[1])
    absent.write_bytes(texts[0])
    status, lines = _check(copy, present, absent)
    assert status == EXIT_REFUSED, lines
    assert lines[0] == f"{present}: refused: it does not match the batch's evidence"
    assert lines[1] == ("  identity: arm absent, but the file is the batch's present.md, the "
                        "place of another arm's transcript (files swapped or copied over?); "
                        "arm absent's transcript is absent.md")
    assert lines[2] == f"{absent}: refused: it does not match the batch's evidence"


def test_a_forged_answer_is_well_formed_alone_and_refused_against_its_batch(
        copy: Path) -> None:
    answer = _final(copy, ANSWERED)["event"]["answer"]
    forged = _forged(copy, f'answer: "{answer}"', 'answer: "forged"')
    assert _check(copy, forged, batch=False) == (0, [f"{forged}: well-formed"])
    status, lines = _check(copy, forged)
    assert status == EXIT_REFUSED
    assert lines[0] == f"{forged}: refused: it does not match the batch's evidence"
    arm, probe, session = ANSWERED
    assert lines[1:] == [f'  {arm} {probe}/{session}: answer is "forged" in the transcript, '
                         f'"{answer}" from its evidence']


def test_the_evidence_is_the_kept_stream_not_the_ledgers_event(copy: Path) -> None:
    """The same answer forged in the ledger's final record too: the stream still says the
    original, so the file is refused."""
    answer = _final(copy, ANSWERED)["event"]["answer"]
    forged = _forged(copy, f'answer: "{answer}"', 'answer: "forged"')

    def forge(record: dict[str, Any]) -> None:
        if record["kind"] == "final" and (record["arm"], record["probe"],
                                          record["session"]) == ANSWERED:
            record["event"]["answer"] = "forged"

    _rewrite_ledger(copy, forge)
    status, lines = _check(copy, forged)
    assert status == EXIT_REFUSED, lines
    assert f'answer is "forged" in the transcript, "{answer}" from its evidence' in lines[1]


def test_a_forged_call_is_named_by_its_place_in_the_event(copy: Path) -> None:
    """A call's argument changed: the place is ``calls[i].argument`` of that session."""
    calls = _final(copy, READER)["event"]["calls"]
    (index,) = (i for i, c in enumerate(calls) if c["tool"] == "Read")
    argument = calls[index]["argument"]
    forged = _forged(copy, f'argument: "{argument}"', 'argument: "docs/other.md"')
    status, lines = _check(copy, forged)
    assert status == EXIT_REFUSED
    arm, probe, session = READER
    assert lines[1:] == [f'  {arm} {probe}/{session}: calls[{index}].argument is '
                         f'"docs/other.md" in the transcript, "{argument}" from its evidence']


def test_an_absent_key_is_not_an_empty_one(copy: Path) -> None:
    """RC-12: ``produced: []`` (watched, nothing) dropped from an event reads as absent
    (not watched), which its evidence does not say."""
    assert _final(copy, READER)["event"]["produced"] == []
    text = _transcript(copy).read_text(encoding="utf-8")
    assert text.count("  produced: []\n") == 1
    forged = _forged(copy, "  produced: []\n", "")
    status, lines = _check(copy, forged)
    assert status == EXIT_REFUSED
    arm, probe, session = READER
    assert lines[1:] == [f"  {arm} {probe}/{session}: produced is absent in the transcript, "
                         "a list of 0 ([]) from its evidence"]


def test_a_forged_state_is_refused_naming_the_session_and_both_states(copy: Path) -> None:
    arm, probe, session = FAILED
    state = _final(copy, FAILED)["state"]
    forged = _forged(copy, f"| {probe} | {session} | {state} |", f"| {probe} | {session} | "
                     "timed-out |")
    assert _check(copy, forged, batch=False)[0] == 0
    status, lines = _check(copy, forged)
    assert status == EXIT_REFUSED
    assert lines[1:] == [f'  {arm} {probe}/{session}: state is "timed-out" in the '
                         f'transcript, "{state}" from its evidence']


def test_a_transcript_of_another_run_is_refused_by_its_identity(copy: Path) -> None:
    text = _transcript(copy).read_text(encoding="utf-8")
    seed = int(re.search(r"^seed: (\d+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]
    forged = _forged(copy, f"\nseed: {seed}\n", f"\nseed: {seed + 1}\n")
    status, lines = _check(copy, forged)
    assert status == EXIT_REFUSED
    assert lines[1:] == [f"  identity: seed is {seed + 1} in the transcript, {seed} in the "
                         "batch"]


def test_a_forged_value_is_shown_escaped(copy: Path) -> None:
    """An answer forged to hold an escape sequence reaches the terminal as text."""
    answer = _final(copy, ANSWERED)["event"]["answer"]
    forged = _forged(copy, f'answer: "{answer}"', 'answer: "\\e]0;owned\\a"')
    run = cli("check-transcript", str(forged), "--batch", str(copy / "batch"),
              "--corpus", str(copy / "corpus"))
    assert run.returncode == EXIT_REFUSED, run.stdout + run.stderr
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    assert 'answer is "\\x1b]0;owned\\x07" in the transcript' in run.stdout


def test_a_missing_stream_could_not_be_verified_and_says_which(copy: Path) -> None:
    stream = _final(copy, ANSWERED)["stream"]
    (copy / "batch" / stream).unlink()
    status, lines = _check(copy, _transcript(copy))
    assert status == EXIT_UNVERIFIED
    assert lines[0] == f"{_transcript(copy)}: could not verify"
    arm, probe, session = ANSWERED
    assert lines[1:] == [f'  {arm} {probe}/{session}: could not verify the events: the kept '
                         f'stream "{stream}" is missing']


def test_a_batch_that_kept_no_streams_could_not_be_verified(copy: Path) -> None:
    """``--no-keep-streams``: config.yaml says so and no final record names a stream."""
    config = copy / "batch" / "config.yaml"
    text = config.read_text(encoding="utf-8")
    assert text.count("\n  keep_streams: true\n") == 1
    config.write_text(text.replace("\n  keep_streams: true\n", "\n  keep_streams: false\n"),
                      encoding="utf-8")
    _rewrite_ledger(copy, lambda record: record.pop("stream", None))
    streamed = sorted((k[1], k[2]) for k, r in last_finals(copy / "batch").items()
                      if k[0] == "present" and r.get("lines"))
    assert len(streamed) > 1
    names = ", ".join(f"present {probe}/{session}" for probe, session in streamed)
    status, lines = _check(copy, _transcript(copy))
    assert status == EXIT_UNVERIFIED
    assert lines[1:] == [f"  {len(streamed)} sessions ({names}): could not verify the events: "
                         "the batch kept no streams (--no-keep-streams), so they cannot be "
                         "derived again"]


def test_a_discarded_workspace_leaves_produced_artifacts_unverified(copy: Path) -> None:
    """The produced note's digest and cites are derived from the workspace's files."""
    arm, probe, session = ANSWERED
    assert _final(copy, ANSWERED)["event"]["produced"]
    workspace = copy / "batch" / "sessions" / arm / probe / session / "workspace"
    for path in sorted(workspace.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    workspace.rmdir()
    status, lines = _check(copy, _transcript(copy))
    assert status == EXIT_UNVERIFIED
    assert lines[1:] == [f"  {arm} {probe}/{session}: could not verify the produced "
                         "artifacts: the session's workspace is missing, and their digests "
                         "and cites are derived from its files"]


def test_a_transcript_of_another_runner_could_not_be_verified(copy: Path) -> None:
    text = _transcript(copy).read_text(encoding="utf-8")
    harness = re.search(r'^harness: "(.*)"$', text, re.MULTILINE).group(1)  # type: ignore[union-attr]
    forged = _forged(copy, f'harness: "{harness}"', 'harness: "headwater-campaign 0.0.1"')
    status, lines = _check(copy, forged)
    assert status == EXIT_UNVERIFIED
    assert lines[1:] == ['  could not verify: the transcript was written by "headwater-campaign '
                         f'0.0.1" and this runner is "{harness}": another runner\'s recorder '
                         "may derive other events, so its events cannot be held to this one's"]


def test_a_session_another_runner_re_derived_could_not_be_verified(copy: Path) -> None:
    """``retranscribe`` by another runner left a ``rederived`` record whose event the
    transcript shows: this recorder may derive another, which is no forgery."""
    arm, probe, session = ANSWERED
    answer = _final(copy, ANSWERED)["event"]["answer"]
    final = _final(copy, ANSWERED)
    older = {"kind": "rederived", "arm": arm, "probe": probe, "session": session,
             "repetition": final["repetition"], "attempt": final["attempt"],
             "invocation": final["invocation"], "runner": "headwater-campaign 0.0.1",
             "state": "recorded", "reason": final["reason"], "outside_paths": 0,
             "served_model": final["served_model"],
             "event": {**final["event"], "answer": "older"}, "at": final["at"]}
    path = copy / "batch" / "ledger.jsonl"
    path.write_text(path.read_text(encoding="utf-8")
                    + json.dumps(older, sort_keys=True, separators=(",", ":")) + "\n",
                    encoding="utf-8")
    shown = _forged(copy, f'answer: "{answer}"', 'answer: "older"')  # as it renders now
    status, lines = _check(copy, shown)
    assert status == EXIT_UNVERIFIED, lines
    assert lines[1:] == [f'  {arm} {probe}/{session}: could not verify the events: the '
                         'recorder of "headwater-campaign 0.0.1" re-derived them '
                         "(retranscribe), and another runner's recorder may derive other "
                         "events"]


def test_a_batch_being_written_could_not_be_verified(copy: Path) -> None:
    """A runner holding the batch's lock writes its ledger ahead of its transcripts."""
    with BatchLock(copy / "batch"):
        status, lines = _check(copy, _transcript(copy))
    assert status == EXIT_UNVERIFIED
    assert lines[1:] == ["  could not verify: the batch is being written (a runner holds its "
                         "lock): its transcripts lag its ledger until that runner stops"]


def test_corpus_without_batch_is_a_usage_error(copy: Path) -> None:
    run = cli("check-transcript", str(_transcript(copy)), "--corpus", str(copy / "corpus"))
    assert run.returncode == 2
    assert "--batch" in run.stderr


def test_the_help_says_alone_is_the_form_and_batch_is_the_evidence() -> None:
    run = cli("check-transcript", "--help")
    assert run.returncode == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert "Alone, it checks a transcript's form" in text
    assert "--batch BATCH also derives every event of the file's arm again from the streams" \
        in text
