"""`campaign._json_text` and the ledger: a name that is not UTF-8 reaches JSON a strict reader
takes (docs/batch.md, "Names that are not UTF-8").

Expected values come from the rule: U+DC80..U+DCFF (a byte surrogateescape kept) as
``\\xHH`` (the byte), any other lone surrogate as ``\\uHHHH``, nothing else changed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from campaign._json_text import json_safe, json_text
from campaign.batch._ledger import Ledger, encode_record, read_ledger
from campaign.batch._records import FinalRecord, StartedRecord
from recorder.transcript import Artifact, Event

SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A JSON ``\\uD800``..``\\uDFFF`` escape (after an even run of backslashes)."""


@pytest.mark.parametrize(("value", "written"), [
    (os.fsdecode(b"\xff\xfe.txt"), "\\xff\\xfe.txt"),
    (os.fsdecode(b"a\x80b"), "a\\x80b"),
    ("x\udfff.md", "x\\udfff.md"),
    ("\ud800\udc7f", "\\ud800\\udc7f"),
    ("plain \u00e9 \U0001f600 \\xff \x1b", "plain \u00e9 \U0001f600 \\xff \x1b"),
    ("", ""),
])
def test_json_text_writes_each_lone_surrogate_as_its_escape(value: str, written: str) -> None:
    assert json_text(value) == written
    written.encode("utf-8")  # strict


def test_json_safe_reaches_keys_lists_and_tuples() -> None:
    odd = os.fsdecode(b"\xff")
    assert json_safe({odd: [odd, (odd, 1)], "n": None}) == {
        "\\xff": ["\\xff", ["\\xff", 1]], "n": None}


def started() -> StartedRecord:
    return StartedRecord(arm="present", probe="HW-PRB-0001", session="r1", repetition=1,
                         attempt=1, invocation=1, position=None)


def final(path: str, reason: str) -> FinalRecord:
    return FinalRecord(
        arm="present", probe="HW-PRB-0001", session="r1", repetition=1, attempt=1,
        invocation=1, started_at="2026-11-30T12:00:00Z", state="recorded", reason=reason,
        retryable=False, cost_usd="0.01", cost_known=True,
        event={"probe": "HW-PRB-0001", "session": "r1", "calls": [],
               "produced": [{"path": path}]},
        permission_denials=[reason])


def test_a_ledger_line_is_strict_json_and_the_record_reads_as_written(tmp_path: Path) -> None:
    record = final(os.fsdecode(b"\xff\xfe.txt"), "harness-error: \udfff")
    line = encode_record(record)
    assert not SURROGATE_ESCAPE.search(line)
    data = json.loads(line.decode("utf-8"))
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # no lone surrogate anywhere
    assert data["event"]["produced"] == [{"path": "\\xff\\xfe.txt"}]
    assert data["reason"] == data["permission_denials"][0] == "harness-error: \\udfff"
    assert record.reason == "harness-error: \\udfff"  # in memory as on disk
    with Ledger(tmp_path / "ledger.jsonl") as ledger:
        ledger.append(started())
        ledger.append(record)
    (read,) = [r for r in read_ledger(tmp_path / "ledger.jsonl") if isinstance(r, FinalRecord)]
    assert read == record


def test_a_ledger_of_before_reads_its_surrogate_escapes_as_the_rule_writes_them(
        tmp_path: Path) -> None:
    """A line an older runner wrote (``"\\udcff"`` in its JSON) is read as ``\\xff``."""
    old = encode_record(final("a.txt", "r")).replace(b'"a.txt"', b'"\\udcff.txt"')
    path = tmp_path / "ledger.jsonl"
    with Ledger(path) as ledger:
        ledger.append(started())
    with path.open("ab") as fp:
        fp.write(old)
    (read,) = [r for r in read_ledger(path) if isinstance(r, FinalRecord)]
    assert read.event is not None and read.event.produced == [Artifact(path="\\xff.txt")]


def test_retranscribe_finds_the_ledgers_artifact_by_the_name_the_stream_gives() -> None:
    """The ledger holds ``\\xff.txt``; the kept stream, read again, names ``"\\udcff.txt"``:
    its findings and (workspace discarded) its digest are still the ledger's."""
    from campaign.supervisor._retranscribe import _findings, _produced_from_ledger

    ledger = {"path": "\\xff.txt", "result": "sha256:" + "a" * 64, "cites": [],
              "findings": ["rule-1"]}
    record = final("x", "r").model_copy(update={"event": Event.model_validate({
        "probe": "HW-PRB-0001", "session": "r1", "calls": [], "produced": [ledger]})})
    streamed = os.fsdecode(b"\xff.txt")
    found = _findings(record)
    assert found is not None and found.get(streamed, ()) == ["rule-1"]
    event = _produced_from_ledger(
        Event(probe="HW-PRB-0001", session="r1", produced=[Artifact(path=streamed)]), record)
    assert event.produced == [Artifact.model_validate(ledger)]


def test_a_record_made_without_validation_is_written_strict_all_the_same() -> None:
    record = final("a.txt", "r")
    raw = FinalRecord.model_construct(**{**record.model_dump(), "reason": "x\udcff"})
    data = json.loads(encode_record(raw).decode("utf-8"))
    assert data["reason"] == "x\\xff"
