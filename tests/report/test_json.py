"""``report --json``: a stable, versioned object carrying the same figures."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from campaign.report import Report, report_json
from tests.report import definitions as d
from tests.report.scenario import P

TOP_KEYS = {"format", "kind", "layout", "grading", "confidence", "z", "batches",
            "columns", "probes", "arms", "warnings"}
GRADING_KEYS = {"grader", "corpus", "moved_read_set", "ungraded"}
PROBE_KEYS = {"id", "title", "task", "answers", "examines", "graded", "most_frequent",
              "expectations", "verdicts", "cells"}
CELL_KEYS = {"column", "in_plan", "planned", "recorded", "states", "running", "interrupted",
             "not_started", "answered", "answers", "differences", "calls", "reads",
             "outside_paths", "cost", "graded", "produced"}
GRADED_KEYS = {"satisfied", "unsatisfied", "not_observed", "recorded", "apart", "share",
               "interval", "difference", "difference_interval", "direction"}
PRODUCED_KEYS = {"watched", "paths", "cites", "findings", "clean", "unchecked"}
ARM_KEYS = {"column", "planned", "recorded", "refused", "failed", "running", "not_started",
            "retried", "spend", "first_attempt", "after_retry", "served_versions",
            "harness_versions", "networks", "median_start", "system_prompts"}


def test_the_object_has_the_documented_keys_and_is_plain_json(report: Report) -> None:
    data = report_json(report)
    assert set(data) == TOP_KEYS
    assert set(data["grading"]) == GRADING_KEYS
    assert set(data["probes"][0]) == PROBE_KEYS
    assert set(data["probes"][0]["cells"][0]) == CELL_KEYS
    assert set(data["probes"][0]["cells"][0]["produced"]) == PRODUCED_KEYS
    assert set(data["arms"][0]) == ARM_KEYS
    assert json.loads(json.dumps(data)) == data


def test_the_json_form_carries_the_same_figures(report: Report) -> None:
    data = report_json(report)
    assert (data["format"], data["kind"], data["layout"]) == (2, "headwater-campaign report",
                                                              "single")
    probe = next(p for p in data["probes"] if p["id"] == P)
    absent = next(c for c in probe["cells"] if c["column"] == "absent")
    k1, n1, k2, n2 = 3, 12, 8, 10
    assert absent["differences"][0]["interval"] == pytest.approx(
        list(d.newcombe(k1, n1, k2, n2)), abs=1e-6)
    assert absent["answers"][0] == {"answer": "alpha", "count": 3, "share": 0.25,
                                    "interval": pytest.approx(list(d.wilson(3, 12)), abs=1e-6)}
    assert data["arms"][0]["spend"] == {"cents": 16, "per_recorded_cents": 1,
                                        "unknown_attempts": 1, "lower_bound": True,
                                        "unpriced_requests": 0, "unpriced_models": []}
    # A batch written before the gateway: no request rows, no digests.
    assert data["arms"][0]["system_prompts"] == {"sessions": 0, "digests": {}}
    assert Decimal(str(data["z"])) == Decimal(str(d.Z))


def test_docs_report_names_every_key_of_the_object() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text()
    section = docs[docs.index("## The JSON form"):docs.index("## The page")]
    for key in (TOP_KEYS | CELL_KEYS | ARM_KEYS | GRADING_KEYS | PROBE_KEYS | GRADED_KEYS
                | PRODUCED_KEYS):
        assert f"`{key}`" in section, key


def test_the_grading_is_in_the_object(tmp_path: Path) -> None:
    from campaign.expect import Expectations
    from campaign.report import build_report
    from tests.report.gradings import N, S, U, grading
    from tests.report.scenario import Q, scenario_batch

    batch = scenario_batch(tmp_path)
    g = grading(batch, {P: Expectations(answered="alpha", clean=True)},
                {("present", P): [S] * 9 + [N], ("absent", P): [S] * 2 + [U] * 10},
                apart={("present", P): ["timed-out"]}, moved=True, corpus="/c")
    data = report_json(build_report([batch], grading=g))
    assert data["grading"] == {"grader": "2", "corpus": "/c", "moved_read_set": True,
                               "ungraded": None}
    probe = next(p for p in data["probes"] if p["id"] == P)
    assert probe["graded"] is True and probe["task"] == "Do the task."
    assert probe["expectations"] == [{"key": "answered", "target": "alpha"},
                                     {"key": "clean", "target": None}]
    assert probe["verdicts"][0]["counts"] == [
        {"satisfied": 9, "unsatisfied": 0, "not_observed": 1},
        {"satisfied": 2, "unsatisfied": 10, "not_observed": 0}]
    present, absent = probe["cells"]
    assert present["graded"]["share"] == 0.9 and present["graded"]["recorded"] == 10
    assert present["graded"]["apart"] == {"timed-out": 1}
    assert present["graded"]["difference"] is None
    assert absent["graded"]["interval"] == pytest.approx(list(d.wilson(2, 12)), abs=1e-6)
    assert absent["graded"]["difference_interval"] == pytest.approx(
        list(d.newcombe(2, 12, 9, 10)), abs=1e-6)
    assert absent["graded"]["direction"] == "lower"
    other = next(p for p in data["probes"] if p["id"] == Q)
    assert other["graded"] is False and other["most_frequent"] == "42"
    assert other["cells"][0]["graded"] is None and other["verdicts"] == []
