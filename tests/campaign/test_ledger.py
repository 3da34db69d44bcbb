"""The ledger: append + fsync, a cut last line ignored, every attempt kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaign._ledger import Ledger, SessionKey, final_records, read_ledger


def test_ledger_appends_lines_in_order(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append({"kind": "started", "arm": "present", "probe": "P", "session": "s1"})
        ledger.append({"kind": "final", "arm": "present", "probe": "P", "session": "s1",
                       "state": "recorded"})
    assert [r["kind"] for r in read_ledger(path)] == ["started", "final"]


def test_ledger_cut_last_line_is_ignored(tmp_path: Path) -> None:
    # A runner killed mid-write leaves a line without a newline: it never finished.
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b'{"kind":"started"}\n{"kind":"fin')
    assert list(read_ledger(path)) == [{"kind": "started"}]


def test_ledger_garbage_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b"not json\n")
    with pytest.raises(ValueError, match=":1:"):
        list(read_ledger(path))


def test_final_records_keep_every_attempt(tmp_path: Path) -> None:
    # RC-14 counts the cost of every attempt, so every final line is kept per session.
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        for attempt, state in ((1, "no-result"), (2, "recorded")):
            ledger.append({"kind": "final", "arm": "a", "probe": "P", "session": "s1",
                           "attempt": attempt, "state": state})
        ledger.append({"kind": "final", "arm": "b", "probe": "P", "session": "s1",
                       "attempt": 1, "state": "recorded"})
    finals = final_records(path, arm="a")
    assert list(finals) == [SessionKey("a", "P", "s1")]
    assert [r["state"] for r in finals[SessionKey("a", "P", "s1")]] == ["no-result", "recorded"]
