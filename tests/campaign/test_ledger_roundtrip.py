"""A ledger line read into its typed record is written back byte for byte (docs/batch.md,
"The ledger": the ledger is the batch's evidence, and its keys on disk do not change).

The fixture batches of config format 1 and 2 (tests/fixtures/batches/) were written by
earlier runners; every line of their ledgers decodes and re-encodes to the same bytes. A
final record holding every typed part the fixtures lack (anomalies, orphan results, unread
artifacts, denials, an init policy without ``cwd``, an event with ``answer: null`` and
findings) does too. Read, the parts are typed: the cost is an exact `Decimal`, the event
an `Event`, the egress counts `EgressCounts`.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from campaign.batch import EgressCounts, InitPolicyRecord
from campaign.batch._ledger import decode_record, encode_record
from campaign.batch._records import FinalRecord
from recorder import Call, Event
from tests.conftest import FIXTURES

LEDGERS = sorted((FIXTURES / "batches").glob("*/batch/ledger.jsonl"))
DIGEST = "sha256:" + "c" * 64
FULL = (
    b'{"anomalies":2,"anomaly_lines":[{"excerpt":"banner","line":1,"size_bytes":6}],'
    b'"arm":"present","at":"2026-12-01T00:00:05Z","attempt":2,"calls":[{"argument":"ls",'
    b'"result":"' + DIGEST.encode() + b'","tool":"Bash"},{"argument":"x","tool":"Read"}],'
    b'"claude_code_version":"2.1.0","cost_known":true,"cost_usd":"1E-7","counts":false,'
    b'"duration_s":1.5,"egress":{"allowed":1,"allowed_target":"127.0.0.1:1","denied":'
    b'{"example.com:443":2},"most_open":1,"upstream_failures":0},"end":"line-too-long",'
    b'"exit_status":-15,"init_policy":{"config_dir":"/run/headwater/config",'
    b'"declared_mcp_servers":["docs"],"host_skill_names":[],"permission_mode":"dontAsk"},'
    b'"invocation":1,"kind":"final","lines":3,"network":"confined","orphan_results":'
    b'[{"line":2,"repeated":true,"result":"' + DIGEST.encode() + b'","tool_use_id":null}],'
    b'"permission_denials":["Write"],"probe":"HW-PRB-0001","reason":"line-too-long: r",'
    b'"repetition":1,"retryable":true,"session":"s1","started_at":"2026-12-01T00:00:00Z",'
    b'"state":"line-too-long","unread_artifacts":[{"path":"big.bin","reason":"over the cap",'
    b'"size_bytes":null}]}\n'
)
RECORDED = (
    b'{"arm":"absent","at":"2026-12-01T00:00:05Z","attempt":1,"cost_known":true,'
    b'"cost_usd":"0.009600000000000001","event":{"answer":null,"calls":[],"probe":'
    b'"HW-PRB-0001","produced":[{"cites":[],"findings":["r1"],"path":"a.md","result":"'
    + DIGEST.encode() + b'"},{"path":"/etc/x"}],"session":"s1"},"invocation":1,"kind":'
    b'"final","probe":"HW-PRB-0001","reason":"recorded","repetition":1,"retryable":false,'
    b'"session":"s1","started_at":"2026-12-01T00:00:00Z","state":"recorded"}\n'
)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("ledger", LEDGERS, ids=lambda p: p.parts[-3])
def test_every_line_of_a_fixture_ledger_is_written_back_byte_for_byte(ledger: Path) -> None:
    lines = _lines(ledger)
    finals = 0
    for number, line in enumerate(lines, 1):
        record = decode_record(line.rstrip(b"\n"), path=ledger, line=number)
        assert encode_record(record) == line, f"{ledger}:{number}"
        finals += isinstance(record, FinalRecord)
    assert finals >= 4  # the fixtures' recorded and failed attempts are all in the proof


@pytest.mark.parametrize("line", [FULL, RECORDED], ids=["every-part", "recorded"])
def test_a_final_record_with_every_typed_part_is_written_back_byte_for_byte(
        line: bytes, tmp_path: Path) -> None:
    record = decode_record(line.rstrip(b"\n"), path=tmp_path / "ledger.jsonl", line=1)
    assert encode_record(record) == line


def test_a_final_record_read_holds_typed_parts(tmp_path: Path) -> None:
    full = decode_record(FULL.rstrip(b"\n"), path=tmp_path / "l", line=1)
    assert isinstance(full, FinalRecord)
    assert full.cost_usd == Decimal("1E-7") and isinstance(full.cost_usd, Decimal)
    assert full.egress == EgressCounts(allowed_target="127.0.0.1:1", allowed=1,
                                       denied={"example.com:443": 2}, upstream_failures=0,
                                       most_open=1)
    assert full.calls == [Call(tool="Bash", argument="ls", result=DIGEST),
                          Call(tool="Read", argument="x")]
    assert full.init_policy is not None and full.init_policy.policy().cwd is None
    assert full.anomaly_lines is not None and full.anomaly_lines[0].excerpt == "banner"
    recorded = decode_record(RECORDED.rstrip(b"\n"), path=tmp_path / "l", line=1)
    assert isinstance(recorded, FinalRecord) and isinstance(recorded.event, Event)
    assert "answer" in recorded.event.model_fields_set and recorded.event.answer is None


@pytest.mark.parametrize("text", ['"0.1"', '"1e-7"', '"-0.01"', '"NaN"', "0.01", '"abc"'])
def test_a_cost_is_the_json_text_of_a_non_negative_number(text: str, tmp_path: Path) -> None:
    """The ledger's cost is exact: a string holding a JSON number (never a float); any
    other value is no line this runner writes."""
    line = RECORDED.replace(b'"0.009600000000000001"', text.encode()).rstrip(b"\n")
    if text in ('"0.1"', '"1e-7"'):
        record = decode_record(line, path=tmp_path / "l", line=1)
        assert isinstance(record, FinalRecord) and record.cost_usd == Decimal(text[1:-1])
        return
    with pytest.raises(Exception, match="cost_usd"):
        decode_record(line, path=tmp_path / "l", line=1)


def test_an_init_policy_is_kept_whole() -> None:
    policy = InitPolicyRecord(permission_mode="dontAsk", declared_mcp_servers=["a", "b"],
                              host_skill_names=["s"], config_dir="/c", cwd="/w").policy()
    assert InitPolicyRecord.of(policy).model_dump() == {
        "permission_mode": "dontAsk", "declared_mcp_servers": ["a", "b"],
        "host_skill_names": ["s"], "config_dir": "/c", "cwd": "/w"}
