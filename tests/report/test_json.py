"""``report --json``: a stable, versioned object carrying the same figures."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from campaign.report import Report, report_json
from tests.report import definitions as d
from tests.report.scenario import P

TOP_KEYS = {"format", "kind", "describes_only", "layout", "confidence", "z", "batches",
            "columns", "probes", "arms", "warnings"}
CELL_KEYS = {"column", "in_plan", "planned", "recorded", "states", "running", "interrupted",
             "not_started", "answered", "answers", "differences", "calls", "reads",
             "outside_paths", "cost"}
ARM_KEYS = {"column", "planned", "recorded", "refused", "failed", "running", "not_started",
            "retried", "spend", "first_attempt", "after_retry", "served_versions",
            "harness_versions", "networks", "median_start"}


def test_the_object_has_the_documented_keys_and_is_plain_json(report: Report) -> None:
    data = report_json(report)
    assert set(data) == TOP_KEYS
    assert set(data["probes"][0]["cells"][0]) == CELL_KEYS
    assert set(data["arms"][0]) == ARM_KEYS
    assert json.loads(json.dumps(data)) == data
    assert "grades nothing" in data["describes_only"]


def test_the_json_form_carries_the_same_figures(report: Report) -> None:
    data = report_json(report)
    assert (data["format"], data["kind"], data["layout"]) == (1, "headwater-campaign report",
                                                              "single")
    probe = next(p for p in data["probes"] if p["id"] == P)
    absent = next(c for c in probe["cells"] if c["column"] == "absent")
    k1, n1, k2, n2 = 3, 12, 8, 10
    assert absent["differences"][0]["interval"] == pytest.approx(
        list(d.newcombe(k1, n1, k2, n2)), abs=1e-6)
    assert absent["answers"][0] == {"answer": "alpha", "count": 3, "share": 0.25,
                                    "interval": pytest.approx(list(d.wilson(3, 12)), abs=1e-6)}
    assert data["arms"][0]["spend"] == {"cents": 16, "per_recorded_cents": 1,
                                        "unknown_attempts": 1, "lower_bound": True}
    assert Decimal(str(data["z"])) == Decimal(str(d.Z))


def test_docs_report_names_every_key_of_the_object() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text()
    section = docs[docs.index("## The JSON form"):docs.index("## The page")]
    for key in TOP_KEYS | CELL_KEYS | ARM_KEYS:
        assert f"`{key}`" in section, key
