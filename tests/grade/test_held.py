"""A transcript is graded only when it is its batch's: its identity names the arm of its
file and the plan's members, and its events and states are the ledger's.

The rules (docs/grading.md "What is graded"): the arm is the transcript's own
``identity.arm``; a transcript another arm's file name holds, or another batch's, is refused
(exit 2) with the command that holds it to its batch; a hand-edited event or state is
refused naming the session and the key; a missing transcript of an arm the ledger ended
sessions of is refused naming the file and ``retranscribe``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from campaign.grade import NotABatch, TranscriptDiffers, TranscriptMissing, grade_batches
from tests.campaign.batch_fixture import cli, fixture_copy

from .batches import declare, pin_read_set

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def copy() -> Iterator[Path]:
    """A fresh copy of the format-2 fixture, its probes declaring expectations, the read
    set pinned (so nothing but the edit under test differs)."""
    for root in fixture_copy("format2"):
        declare(root / "corpus")
        pin_read_set(root / "batch", root / "corpus")
        yield root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_swapped_transcript_files_are_refused_not_graded_as_the_other_arm(copy: Path) -> None:
    transcripts = copy / "batch" / "transcripts"
    present, absent = transcripts / "present.md", transcripts / "absent.md"
    kept = present.read_bytes()
    present.write_bytes(absent.read_bytes())
    absent.write_bytes(kept)
    with pytest.raises(NotABatch) as refused:
        grade_batches([copy / "batch"], corpus=copy / "corpus")
    assert "arm present but its identity names arm absent" in str(refused.value)
    assert f"check-transcript {present} --batch {copy / 'batch'}" in str(refused.value)
    run = cli("grade", str(copy / "batch"), "--corpus", str(copy / "corpus"))
    assert run.returncode == 2 and "identity names arm absent" in run.stderr


def test_another_batchs_transcript_is_refused_by_the_member_that_differs(copy: Path) -> None:
    _edit(copy / "batch" / "transcripts" / "absent.md", "seed: 1\n", "seed: 2\n")
    with pytest.raises(NotABatch) as refused:
        grade_batches([copy / "batch"], corpus=copy / "corpus")
    assert "identity has seed 2 and the batch's plan.yaml 1" in str(refused.value)
    assert "check-transcript" in str(refused.value)


def test_a_hand_edited_answer_is_refused_naming_session_and_key(copy: Path) -> None:
    _edit(copy / "batch" / "transcripts" / "absent.md", 'answer: "2"', 'answer: "3"')
    with pytest.raises(TranscriptDiffers) as refused:
        grade_batches([copy / "batch"], corpus=copy / "corpus")
    assert (refused.value.session, refused.value.key) == ("FX-PRB-0002/s1", "its answer")
    assert "the transcript may have been edited" in str(refused.value)
    run = cli("grade", str(copy / "batch"), "--corpus", str(copy / "corpus"))
    assert run.returncode == 2 and "differs from the batch's ledger" in run.stderr


def test_a_hand_edited_state_is_refused(copy: Path) -> None:
    _edit(copy / "batch" / "transcripts" / "absent.md",
          "| FX-PRB-0003 | s1 | harness-error |", "| FX-PRB-0003 | s1 | timed-out |")
    with pytest.raises(TranscriptDiffers) as refused:
        grade_batches([copy / "batch"], corpus=copy / "corpus")
    assert refused.value.session == "FX-PRB-0003/s1"
    assert refused.value.key == "its state (timed-out against harness-error)"


def test_a_missing_transcript_of_an_arm_with_ended_sessions_is_refused(copy: Path) -> None:
    absent = copy / "batch" / "transcripts" / "absent.md"
    absent.unlink()
    with pytest.raises(TranscriptMissing) as refused:
        grade_batches([copy / "batch"], corpus=copy / "corpus")
    assert refused.value.transcript == absent and refused.value.ended == 2
    assert f"headwater-campaign retranscribe {copy / 'batch'}" in str(refused.value)
    run = cli("grade", str(copy / "batch"), "--corpus", str(copy / "corpus"))
    assert run.returncode == 2 and "is missing while the ledger holds 2" in run.stderr


def test_a_session_its_runner_cut_short_is_apart_as_interrupted_as_status_says(
        copy: Path) -> None:
    ledger = copy / "batch" / "ledger.jsonl"  # absent's FX-PRB-0001 never ran: now it starts
    with ledger.open("a", encoding="utf-8") as fp:  # and its runner dies (no final record)
        fp.write('{"arm":"absent","at":"2026-12-02T18:45:00Z","attempt":1,"invocation":1,'
                 '"kind":"started","position":5,"probe":"FX-PRB-0001","repetition":1,'
                 '"session":"s1"}\n')
    status = cli("status", str(copy / "batch"), "--json")
    assert status.returncode == 0, status.stderr
    assert '"interrupted"' in status.stdout and "FX-PRB-0001" in status.stdout
    grading = grade_batches([copy / "batch"], corpus=copy / "corpus")
    states = {(a.arm, a.probe): a.state for a in grading.apart}
    assert states["absent", "FX-PRB-0001"] == "interrupted"


def test_an_event_of_a_session_the_ledger_has_not_recorded_is_refused(copy: Path) -> None:
    absent = copy / "batch" / "transcripts" / "absent.md"  # absent's FX-PRB-0001 never ran
    _edit(absent, '```yaml\n- probe: "FX-PRB-0002"',
          '```yaml\n- probe: "FX-PRB-0001"\n  session: "s1"\n  answer: "current FX-DR-0002"\n'
          '- probe: "FX-PRB-0002"')
    _edit(absent, "| FX-PRB-0002 | s1 | recorded | 0 |",
          "| FX-PRB-0001 | s1 | recorded | 0 |\n| FX-PRB-0002 | s1 | recorded | 0 |")
    with pytest.raises(TranscriptDiffers) as refused:
        grade_batches([copy / "batch"], corpus=copy / "corpus")
    assert refused.value.session == "FX-PRB-0001/s1"
    assert refused.value.key == "its event (the ledger has not recorded that session)"
