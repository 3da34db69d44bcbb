"""The report's figures as a person reads them: first attempts, and costs that add up.

Rules: the first-attempt row counts an attempt with no outcome of its own as interrupted;
costs on screen are written in tenths of a cent (the last test's comment). First-attempt
rule (docs/batch.md "Retries", docs/report.md): attempt 1 of a session is counted by the
state of its final record; one that never got a final record (its runner died, and a later
attempt began) or that its runner stopped (``killed`` with ``counts: false``: a signal, a
refused write) is no outcome of its session, and counts as ``interrupted``.
"""

from __future__ import annotations

from pathlib import Path

from campaign.batch._records import FinalRecord
from campaign.report import build_report
from tests.report.batches import HandBatch, stamp

P = "HW-PRB-0001"


def test_first_attempts_without_a_final_record_of_their_own_are_interrupted(
        tmp_path: Path) -> None:
    b = HandBatch(tmp_path, {P: (["yes"], [])}, arms=("present",), repetitions=3)
    b.started("present", P, 1)  # never final: its runner died
    b.attempt("present", P, 1, attempt=2, answer="yes", at=10.0)
    b.started("present", P, 2)
    b.ledger.append(FinalRecord(
        arm="present", probe=P, session="s2", repetition=2, attempt=1, invocation=1,
        started_at=stamp(0), at=stamp(1), state="killed", retryable=True,
        reason="killed: the runner stopped (a signal) while the session ran", cost_usd=None,
        cost_known=False, counts=False))
    b.attempt("present", P, 2, attempt=2, answer="yes", at=10.0)
    b.attempt("present", P, 3, answer="yes")
    b.stop()
    (present,) = build_report([b.close()]).arms
    assert present.first_attempt == {"interrupted": 2, "recorded": 1}
    assert present.after_retry == {"recorded": 2}


def test_costs_on_screen_show_a_tenth_of_a_cent_so_the_sum_reads_right(tmp_path: Path) -> None:
    # docs/report.md "Costs": each screen figure is its own ceiling in tenths of a cent; two
    # sessions of 0.023 USD are 2.3c each and 4.6c in all (whole cents showed 3c and 5c),
    # and RC-14's whole-cent ceiling stays the figure of the JSON and the transcripts.
    from campaign.report._text import arm_rows, probe_rows

    b = HandBatch(tmp_path, {P: (["yes"], [])}, arms=("present",), repetitions=2)
    b.attempt("present", P, 1, answer="yes", cost="0.023")
    b.attempt("present", P, 2, answer="yes", cost="0.023")
    b.stop()
    report = build_report([b.close()])
    rows = {row.label: row.values for row in probe_rows(report.probes[0])}
    assert rows["cost per recorded"] == ("2.3c each, 4.6c in all",)
    assert {row.label: row.values for row in arm_rows(report)}["spend"] == ("4.6c",)
    cost = report.probes[0].cells[0].cost
    assert (cost.cents, cost.per_recorded_cents) == (5, 3)


def test_screen_figures_round_to_the_nearest_tenth_and_a_lower_bound_down() -> None:
    # docs/report.md "cost per recorded": each figure rounded once to the nearest tenth of a
    # cent (3.44c twice is 3.4c each, 6.9c in all, not 3.5c each); a lower bound rounded down.
    from decimal import Decimal

    from campaign.batch import AttemptCost, SpendSum
    from campaign.report._tally import cost_of
    from campaign.report._text import cost_text

    spend = SpendSum()
    for _ in range(2):
        spend.add(AttemptCost(usd=Decimal("0.0344"), unknown=False, provider=False,
                              harness_usd=Decimal("0.0344")))
    cost = cost_of(spend, 2)
    assert (cost.tenths, cost.per_recorded_tenths, cost.cents) == (69, 34, 7)
    assert cost_text(cost) == "3.4c each, 6.9c in all"
    spend.add_interrupted(None)
    low = cost_of(spend, 2)
    assert (low.tenths, low.per_recorded_tenths) == (68, 34)
    assert cost_text(low) == ">=3.4c each, >=6.8c in all"
