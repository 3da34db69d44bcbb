"""The report's spend and system prompts from attempts that ran through the provider gateway.

RC-14 as proposed: an attempt with ``gateway`` costs its provider-priced sum (not the
harness's figure); unpriced requests make a lower bound that names the models. Per arm,
the system-prompt digests of its recorded sessions' ``request`` rows, counted per digest.
Sums by hand.
"""

from __future__ import annotations

from pathlib import Path

from campaign.batch import SessionKey
from campaign.report import build_report
from campaign.report._json import report_json
from campaign.report._reading import read_for_report
from campaign.report._text import arm_rows
from tests.campaign.gateway_ledger import final, request, started
from tests.report.batches import HandBatch

P = "HW-PRB-0001"


def _batch(tmp_path: Path, records: list[object]) -> Path:
    b = HandBatch(tmp_path, {P: (["yes"], [])}, arms=("present", "absent"), repetitions=3)
    for record in records:
        b.ledger.append(record)  # type: ignore[arg-type]
    b.stop()
    return b.close()


def _k(arm: str, rep: int) -> SessionKey:
    return SessionKey(arm, P, f"s{rep}")


def test_the_spend_is_the_provider_priced_sum_not_the_harnesss(tmp_path: Path) -> None:
    # present: 0.0123 + 0.0045 = 0.0168 USD: 2 cents (ceiling of 1.68), 1.7c on screen
    # (16.8 tenths, nearest); the harness's 0.5 twice (100 cents) does not count.
    a, b = _k("present", 1), _k("present", 2)
    path = _batch(tmp_path, [started(a), request(a), final(a, harness="0.5", provider="0.0123"),
                             started(b), request(b), final(b, harness="0.5", provider="0.0045")])
    report = build_report([path])
    present = next(arm for arm in report.arms if arm.column == "present")
    assert (present.spend.cents, present.spend.tenths, present.spend.lower_bound) == (2, 17,
                                                                                      False)
    assert report_json(report)["arms"][0]["spend"]["cents"] == 2


def test_unpriced_requests_make_the_spend_a_lower_bound_naming_their_models(
        tmp_path: Path) -> None:
    a = _k("present", 1)
    path = _batch(tmp_path, [started(a), final(a, provider="0.02", unpriced=["claude-x"],
                                               unpriced_requests=2)])
    report = build_report([path])
    rows = {row.label: row.values for row in arm_rows(report)}
    column = [arm.column for arm in report.arms].index("present")
    assert rows["spend"][column] == ">=2c (2 unpriced request(s): claude-x)"
    spend = report_json(report)["arms"][column]["spend"]
    assert (spend["lower_bound"], spend["unpriced_requests"], spend["unpriced_models"]) == (
        True, 2, ["claude-x"])


def test_each_arm_shows_the_system_prompts_its_recorded_sessions_met(tmp_path: Path) -> None:
    p1, p2, p3 = _k("present", 1), _k("present", 2), _k("present", 3)
    a1, a2 = _k("absent", 1), _k("absent", 2)
    records: list[object] = [
        started(p1), request(p1, digest="sha256:" + "a" * 64), final(p1),
        started(p2), request(p2, digest="sha256:" + "a" * 64), final(p2),
        # not recorded: its other prompt does not count
        started(p3), request(p3, digest="sha256:" + "c" * 64),
        final(p3, "timed-out", retryable=True),
        started(a1), request(a1, digest="sha256:" + "a" * 64), final(a1),
        started(a2), request(a2, digest="sha256:" + "b" * 64),
        request(a2, digest="sha256:" + "b" * 64), final(a2),
    ]
    path = _batch(tmp_path, records)
    report = build_report([path])
    columns = [arm.column for arm in report.arms]
    rows = {row.label: row.values for row in arm_rows(report)}
    assert rows["system prompts"][columns.index("present")] == "same for all 2"
    assert rows["system prompts"][columns.index("absent")] == (
        "2 distinct over 2: sha256:aaaaaaaaaaaa (1), sha256:bbbbbbbbbbbb (1)")
    absent = report_json(report)["arms"][columns.index("absent")]["system_prompts"]
    assert absent == {"sessions": 2, "digests": {"sha256:" + "a" * 64: 1,
                                                 "sha256:" + "b" * 64: 1}}
    reading = read_for_report(path)
    assert all(t.in_flight == 0 for t in reading.prompts.values())  # counts, not rows


def test_a_batch_without_request_rows_has_no_system_prompts_row(tmp_path: Path) -> None:
    b = HandBatch(tmp_path, {P: (["yes"], [])}, arms=("present",), repetitions=1)
    b.attempt("present", P, 1, answer="yes")
    b.stop()
    report = build_report([b.close()])
    assert "system prompts" not in {row.label for row in arm_rows(report)}


def test_sessions_that_each_met_the_same_two_prompts_met_the_same_prompts(
        tmp_path: Path) -> None:
    # The harness sends more than one kind of request (each its own system prompt): every
    # recorded session meeting both is still "the same" for all of them.
    p1, p2 = _k("present", 1), _k("present", 2)
    records: list[object] = []
    for key in (p1, p2):
        records += [started(key), request(key, digest="sha256:" + "a" * 64),
                    request(key, digest="sha256:" + "d" * 64), final(key)]
    report = build_report([_batch(tmp_path, records)])
    columns = [arm.column for arm in report.arms]
    rows = {row.label: row.values for row in arm_rows(report)}
    assert rows["system prompts"][columns.index("present")] == "same for all 2 (2 prompts each)"
    assert rows["system prompts"][columns.index("absent")] == "-"
