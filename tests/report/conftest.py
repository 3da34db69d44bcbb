"""Fixtures of the report's tests."""

from __future__ import annotations

import pytest

from campaign.report import Report, build_report
from tests.report.scenario import scenario_batch


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The report of `scenario_batch`, built once per module."""
    return build_report([scenario_batch(tmp_path_factory.mktemp("scenario"))])
