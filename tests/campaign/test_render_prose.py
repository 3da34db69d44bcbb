"""An arm's transcript rendered from a ledger whose records carry hostile session values.

Rule (docs/transcript.md, "Values from the session in the prose"; tests/hostile.py):
the session's values that reach the prose, here the init line's
``claude_code_version``, the served ``message.model``, the egress proxy's
denied targets and a checker's failure note, are each written as one JSON
string literal with ``< > & ` `` escaped, so none can forge a line, hide the
lines after it, or make the render (and so every later render of the batch,
rebuilt from the ledger) fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from campaign.batch._journal import Journal
from campaign.batch._ledger import Ledger
from campaign.batch._records import FinalRecord, StartedRecord
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from recorder._check import check_transcript_file
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files
from tests.hostile import HOSTILE, HOSTILE_IDS, assert_unforged, prose_of, rule_literal

PROBE = "HW-PRB-0001"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    root = write_files(tmp_path_factory.mktemp("corpus"), {
        ".headwater/probe.yml": probe_yml(tiers={"campaign": {"arms": ["present"],
                                                              "repetitions": 2}}),
        "docs/probes/p1.md": probe_doc(PROBE, "A probe"),
        "docs/a.md": doc("HW-A-0001", "A.\n"),
    })
    return compose_plan(load_corpus(root), tier="campaign")


def final(session: str, value: str, **more: Any) -> FinalRecord:
    """A recorded attempt whose session-derived fields all carry ``value``."""
    fields: dict[str, Any] = {
        "arm": "present", "probe": PROBE, "session": session, "repetition": 1, "attempt": 1,
        "invocation": 1, "started_at": "2026-11-30T12:00:00Z", "reason": "recorded",
        "retryable": False, "state": "recorded", "cost_usd": "0.01", "cost_known": True,
        "outside_paths": 1, "anomalies": 0, "served_model": value,
        "claude_code_version": value, "network": "confined",
        "egress": {"allowed_target": "127.0.0.1:9", "allowed": 3,
                   "denied": {value: 2, "example.org:443": 1}},
        "event": {"probe": PROBE, "session": session, "calls": [], "produced": []},
        **more,
    }
    return FinalRecord(**fields)


def write_ledger(batch: Path, value: str) -> None:
    batch.mkdir()
    with Ledger(batch / "ledger.jsonl") as ledger:
        ledger.append(StartedRecord(arm="present", probe=PROBE, session="r1", repetition=1,
                                    attempt=1, invocation=1, position=None,
                                    at="2026-11-30T12:00:00Z"))
        ledger.append(final("r1", value, findings_note=f"findings checker failed: {value}"))
        ledger.append(StartedRecord(arm="present", probe=PROBE, session="r2", repetition=1,
                                    attempt=1, invocation=1, position=None,
                                    at="2026-11-30T12:00:00Z"))
        ledger.append(final("r2", "claude-served-9", egress={
            "allowed_target": "127.0.0.1:9", "allowed": 3, "denied": {}}))


def render_arm(batch: Path, plan: Plan, *, arm: str) -> Path:
    """The arm's transcript as the journal renders it from the ledger."""
    with Journal(batch, plan, planned=(), network="confined",
                 provider_note="Provider: the Messages API at test.") as journal:
        anyio.run(journal.render, [arm], backend="trio")
    return batch / "transcripts" / f"{arm}.md"


@pytest.mark.parametrize(("name", "value", "forged"), HOSTILE, ids=HOSTILE_IDS)
def test_hostile_ledger_values_render_as_literals_and_pass_the_check(
    tmp_path: Path, plan: Plan, name: str, value: str, forged: list[str]
) -> None:
    write_ledger(tmp_path / "b", value)
    path = render_arm(tmp_path / "b", plan, arm="present")
    assert check_transcript_file(path).verdict == "clean"
    text = path.read_text(encoding="utf-8")
    write_ledger(tmp_path / "baseline", "2.1.197")
    baseline = render_arm(tmp_path / "baseline", plan, arm="present").read_text()
    assert_unforged(text, forged, baseline=baseline, outside_total=2)
    lines = prose_of(text).split("\n")
    # A record holds a lone surrogate as \xHH (docs/batch.md, "Names that are not UTF-8"):
    # the prose writes the record's value. HOSTILE's one lone surrogate is U+DC80.
    value = value.replace("\udc80", "\\x80")
    literal = rule_literal(value)
    assert f"{PROBE}/r1: {rule_literal('findings checker failed: ' + value)}; its artifacts " \
        "carry no findings key (not checked, which is not a pass)." in lines
    denied = sorted([(value, f"{literal} x2 ({PROBE}/r1)"),
                     ("example.org:443", f'"example.org:443" x1 ({PROBE}/r1)')])
    assert f"Denied connections: 3: {', '.join(d for _, d in denied)}." in lines
    assert any(line.startswith("Claude Code versions: ") and literal in line for line in lines)


def test_a_render_from_the_same_ledger_is_the_same_bytes(tmp_path: Path, plan: Plan) -> None:
    """The transcript is rebuilt from the ledger after every record: a hostile value must not
    make one render differ from the next (nor fail it)."""
    write_ledger(tmp_path / "b", HOSTILE[0][1])
    first = render_arm(tmp_path / "b", plan, arm="present").read_bytes()
    assert render_arm(tmp_path / "b", plan, arm="present").read_bytes() == first
