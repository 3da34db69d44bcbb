"""The ledger: typed records, fsynced appends, a torn last line set aside, a refused write
undone."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import anyio
import pytest

from campaign.batch import _ledger
from campaign.batch._ledger import Ledger, LedgerCorrupt, read_ledger, read_ledger_at
from campaign.batch._records import (
    FinalRecord,
    InvocationRecord,
    LedgerHeader,
    StartedRecord,
    TornRecord,
)

SESSION = {"arm": "present", "probe": "P-1", "session": "s1", "repetition": 1, "attempt": 1,
           "invocation": 1}


def _started(**over: object) -> StartedRecord:
    return StartedRecord(**{**SESSION, "position": 0, **over})


def _final(**over: object) -> FinalRecord:
    return FinalRecord(**{**SESSION, "started_at": "2026-12-01T00:00:00Z", "state": "recorded",
                          "reason": "recorded", "retryable": False, "cost_usd": "0.01",
                          "cost_known": True, **over})


def test_a_new_ledger_starts_with_its_header_and_records_read_back_typed(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(InvocationRecord(number=1, command="run", pid=7, runner="x", retries=2,
                                       max_cost_cents=None, est_session_cents=None,
                                       max_wall_s=None))
        ledger.append(_started())
        ledger.append(_final())
    records = list(read_ledger(path))
    assert [type(r) for r in records] == [LedgerHeader, InvocationRecord, StartedRecord,
                                          FinalRecord]
    assert records[3] == _final(at=records[3].at)
    assert all(line.endswith(b"}") for line in path.read_bytes().split(b"\n")[:-1])
    assert path.read_bytes().endswith(b"\n")


def test_offsets_returned_by_append_read_the_same_record_back(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(_started())
        at = ledger.append(_final(cost_usd="0.5"))
    final = next(r for r in read_ledger(path) if isinstance(r, FinalRecord))
    assert (at, final) in list(read_ledger_at(path))


def test_a_cut_last_line_is_skipped_by_readers_and_never_read_as_a_record(tmp_path: Path) -> None:
    # A writer mid-append (or a crash) leaves a line without its newline: not yet evidence.
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(_started())
    with path.open("ab") as fp:
        fp.write(b'{"kind":"final","arm":"pres')
    assert [type(r) for r in read_ledger(path)] == [LedgerHeader, StartedRecord]


def test_opening_sets_a_torn_tail_aside_and_the_next_append_is_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(_started())
    whole = path.read_bytes()
    fragment = b'{"kind":"final","arm":"present","probe":"P-1","sess'
    path.write_bytes(whole + fragment)
    with Ledger(path) as ledger:
        assert ledger.torn is not None
        assert ledger.torn == TornRecord(offset=len(whole), size_bytes=len(fragment),
                                         set_aside=f"ledger.torn-{len(whole)}", at=ledger.torn.at)
        ledger.append(_final())
    assert (tmp_path / f"ledger.torn-{len(whole)}").read_bytes() == fragment
    data = path.read_bytes()
    assert data.startswith(whole) and fragment not in data
    kinds = [json.loads(line)["kind"] for line in data.splitlines()]
    assert kinds == ["ledger", "started", "torn", "final"]


def test_a_complete_line_that_is_not_a_record_refuses_the_ledger_naming_the_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(_started())
    with path.open("ab") as fp:
        fp.write(b"not json\n")
    with pytest.raises(LedgerCorrupt, match=r"ledger.jsonl:3: not a JSON line"):
        list(read_ledger(path))


def test_a_key_outside_the_record_shape_refuses_the_line(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(_started())
    line = json.loads(path.read_bytes().splitlines()[1])
    line["mood"] = "fine"
    with path.open("ab") as fp:
        fp.write(json.dumps(line).encode() + b"\n")
    with pytest.raises(LedgerCorrupt, match=r":3: mood"):
        list(read_ledger(path))


@pytest.mark.parametrize(
    ("records", "said"),
    [([_started(), _final(), _final()], ":4: a second final record for attempt 1 of present "
                                        "P-1 s1"),
     ([_final()], ":2: a final record for attempt 1 of present P-1 s1, which is not the "
                  "session's last started attempt"),
     ([_started(), _final(), _started(attempt=2), _final()], ":5: a final record for attempt 1"),
     ([_started(attempt=2), _started()], ":3: attempt 1 of present P-1 s1 starts after "
                                         "attempt 2 started")],
    ids=["final-twice", "final-never-started", "final-of-an-earlier-attempt", "attempt-down"],
)
def test_records_out_of_the_runners_order_refuse_the_line(
        tmp_path: Path, records: list[StartedRecord | FinalRecord], said: str) -> None:
    # A final record copied twice would count its attempt's cost twice (docs/batch.md).
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        for record in records:
            ledger.append(record)
    with pytest.raises(LedgerCorrupt, match=r"ledger.jsonl" + said):
        list(read_ledger(path))


def test_a_time_the_runner_did_not_write_refuses_the_line(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(_started())
    line = json.loads(path.read_bytes().splitlines()[1])
    line["at"] = "2026-12-01T10:38:@@@"
    with path.open("ab") as fp:
        fp.write(json.dumps(line).encode() + b"\n")
    with pytest.raises(LedgerCorrupt, match=r":3: at"):
        list(read_ledger(path))


def test_a_ledger_whose_first_line_is_no_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(_ledger.encode_record(_started()))
    with pytest.raises(LedgerCorrupt, match=":1: the first line is not the ledger header"):
        list(read_ledger(path))


def test_a_refused_write_leaves_no_part_of_its_line(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The disk fills mid-line: half the bytes land, then ENOSPC. The ledger is cut back.
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    ledger.append(_started())
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        if fd == ledger._fd and len(data) > 10:
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)  # what the ledger writes with
    with pytest.raises(OSError, match="No space left"):
        ledger.append(_final())
    monkeypatch.undo()
    assert path.read_bytes() == before
    ledger.append(_final())
    ledger.close()
    assert [type(r) for r in read_ledger(path)] == [LedgerHeader, StartedRecord, FinalRecord]


@pytest.mark.anyio
async def test_aappend_writes_whole_even_while_its_caller_is_cancelled(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger, anyio.CancelScope() as scope:
        ledger.append(_started())
        scope.cancel()
        await ledger.aappend(_final(state="killed", reason="cancelled", retryable=True,
                                    cost_usd=None, cost_known=False, counts=False))
    finals = [r for r in read_ledger(path) if isinstance(r, FinalRecord)]
    assert [(f.state, f.counts) for f in finals] == [("killed", False)]


def test_a_record_reads_back_as_written_times_included(tmp_path: Path) -> None:
    # A time made when the record is made is evidence, never a default to leave out.
    path = tmp_path / "ledger.jsonl"
    written = [_started(), _final(), _started(attempt=2),
               _final(attempt=2, outside_paths=0, counts=True, event=None)]
    with Ledger(path) as ledger:
        for record in written:
            ledger.append(record)
    assert list(read_ledger(path))[1:] == written
