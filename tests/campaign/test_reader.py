"""One batch reader: `read_batch` (campaign/batch/_reader.py), and a journal that goes on from it.

Rules: a batch is read as config.yaml, plan.yaml, its lock's holder and its ledger folded in
one pass, reading only (a torn last line skipped, never repaired); a file that is not the
runner's is refused naming the file; a journal opened on a reading whose ledger nothing was
appended to since goes on from its fold and transcripts without reading the ledger again, and
one whose ledger grew reads it again; ``record`` takes its session's final record from the
fold.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from campaign.batch import BatchFileError, Journal, LedgerCorrupt, read_batch, workspace_note
from campaign.batch import _journal as journal_module
from campaign.batch._reader import BatchReading
from tests.report.batches import HandBatch

P = "HW-PRB-0001"
PROBES: dict[str, tuple[list[str], list[str]]] = {P: (["yes", "no"], [])}


def _batch(root: Path) -> HandBatch:
    b = HandBatch(root, PROBES, repetitions=2)
    b.attempt("present", P, 1, answer="yes", calls=[])
    b.attempt("absent", P, 1, state="timed-out", cost=None, known=False, retryable=True)
    b.started("present", P, 2, at=5.0)  # running when its runner died
    return b


def _journal(reading: BatchReading, *, adopt: bool) -> Journal:
    config = reading.config
    return Journal(reading.path, reading.plan, planned=reading.planned,
                   network=config.facts.network, provider_note=config.facts.provider_note,
                   workspace_note=workspace_note(config), reading=reading if adopt else None)


def _render(journal: Journal) -> dict[str, str]:
    anyio.run(journal.render, None, backend="trio")
    return {p.name: p.read_text() for p in sorted((journal.batch / "transcripts").iterdir())}


def test_a_batch_is_read_whole_in_one_pass_and_left_as_it_was(tmp_path: Path) -> None:
    path = _batch(tmp_path).close()
    with (path / "ledger.jsonl").open("ab") as fp:
        fp.write(b'{"kind": "started", "arm"')  # a runner appending right now
    before = (path / "ledger.jsonl").read_bytes()
    reading = read_batch(path)
    assert (reading.config.options.command, reading.plan.seed, reading.holder) == ("run", 0, None)
    counts = reading.fold.statistics().arms
    assert (counts["present"].recorded, counts["absent"].failed) == (1, 1)
    # No runner holds it: the attempt still running was interrupted (its cost unknown).
    assert counts["present"].interrupted == 1 and reading.fold.cost_unknown == 2
    assert (path / "ledger.jsonl").read_bytes() == before  # read only: the fragment stays
    assert reading.unchanged()


def test_the_ledger_as_it_stands_when_not_settled(tmp_path: Path) -> None:
    reading = read_batch(_batch(tmp_path).close(), settle=False)
    assert reading.fold.statistics().arms["present"].running == 1


@pytest.mark.parametrize("name", ["config.yaml", "plan.yaml"])
def test_a_missing_file_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    path = _batch(tmp_path).close()
    (path / name).unlink()
    with pytest.raises(BatchFileError) as caught:
        read_batch(path)
    assert caught.value.path == path / name and "not a batch" in str(caught.value)


def test_a_ledger_line_the_runner_did_not_write_is_refused(tmp_path: Path) -> None:
    path = _batch(tmp_path).close()
    with (path / "ledger.jsonl").open("ab") as fp:
        fp.write(b'{"kind": "nonsense"}\n')
    with pytest.raises(LedgerCorrupt):
        read_batch(path)


def test_a_journal_goes_on_from_a_reading_without_reading_the_ledger_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _batch(tmp_path).close()
    with _journal(read_batch(path, settle=False), adopt=False) as replayed:
        expected = _render(replayed)
        expected_stats = replayed.fold.statistics()

    def refuse(*_: object) -> int:
        raise AssertionError("the ledger was read again")

    monkeypatch.setattr(journal_module, "replay_ledger", refuse)
    reading = read_batch(path, transcripts=True, settle=False)
    with _journal(reading, adopt=True) as journal:
        assert journal.fold is reading.fold
        assert journal.fold.statistics() == expected_stats
        assert _render(journal) == expected


def test_a_journal_reads_the_ledger_again_when_it_grew_after_the_reading(
        tmp_path: Path) -> None:
    b = _batch(tmp_path)
    reading = read_batch(b.path, transcripts=True)
    b.attempt("present", P, 2, answer="no", calls=[], attempt=2)
    b.close()
    assert not reading.unchanged()
    with reading, _journal(reading, adopt=True) as journal:
        assert journal.fold is not reading.fold
        assert journal.fold.statistics().arms["present"].recorded == 2


def test_a_reading_without_its_transcripts_is_not_gone_on_from(tmp_path: Path) -> None:
    reading = read_batch(_batch(tmp_path).close())
    with _journal(reading, adopt=True) as journal:
        assert journal.fold is not reading.fold


def test_the_fold_keeps_the_last_final_record_whole(tmp_path: Path) -> None:
    b = _batch(tmp_path)
    b.attempt("absent", P, 2, state="refused-seal", cost=None)
    last = read_batch(b.close()).fold.last_final
    assert last is not None
    assert (last.arm, last.session, last.state) == ("absent", "s2", "refused-seal")


def test_a_reading_with_its_transcripts_spools_the_events_as_it_goes(tmp_path: Path) -> None:
    """A replay keeps no event in memory: each goes to its arm's spool right after its record."""
    path = _batch(tmp_path).close()
    with read_batch(path, transcripts=True) as reading:
        assert reading.spools is not None
        assert all(not arm.pending for arm in reading.projection.arms.values())
        assert len(reading.spools.spool("present")) == 1  # present's one recorded session
        assert len(reading.spools.spool("absent")) == 0
