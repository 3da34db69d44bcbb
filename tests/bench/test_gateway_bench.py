"""bench/gateway.py's smallest variant runs and prints every figure it names: the added
latency of a JSON and of a streamed response, and the runner's peak RSS relaying large
bodies (docs/bench.md "bench/gateway.py"). A mechanism check, no timed assertion: what the
figures say is the bench's business, not the test suite's."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
BENCH = REPO / "bench" / "gateway.py"
KINDS: Final = ("json", "sse (40 events)")
"""The two responses measured: one JSON message, one stream of 40 events."""
ADDED_MEDIAN: Final = "added median latency per request"
LATENCY: Final = (ADDED_MEDIAN, "added p90 latency per request",
                  "sequential requests per second, gateway / direct")
"""What the bench says of each kind, direct against through the gateway."""
RELAYS: Final = ("one 1 MiB body", "2 gateways x one 1 MiB body at once")
"""The smallest variant's relays: one body of 1 MiB, and 2 sessions' gateways at once."""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, dict[str, Any]]]:
    """The smallest variant's printed text and its figures by name."""
    out = tmp_path_factory.mktemp("gateway-bench") / "figures.json"
    done = subprocess.run([sys.executable, str(BENCH), "--variant", "smoke", "--json", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=100, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())["figures"]
    return done.stdout, {f["name"]: f for f in figures}


@pytest.mark.timeout(120)
def test_the_added_latency_of_each_kind_is_printed_with_its_target_of_10_ms(
        ran: tuple[str, dict[str, dict[str, Any]]]) -> None:
    stdout, figures = ran
    for kind in KINDS:
        for says in LATENCY:
            figure = figures[f"gateway {kind}: {says}"]
            assert isinstance(figure["value"], float) and math.isfinite(figure["value"])
            assert f"| {figure['name']} |" in stdout
        median = figures[f"gateway {kind}: {ADDED_MEDIAN}"]
        assert (median["unit"], median["target"]) == ("ms", "<= 10")
        assert median["met"] in (True, False)  # measured against its target, whichever way


@pytest.mark.timeout(120)
def test_the_runners_peak_rss_is_printed_for_each_relay_without_a_target(
        ran: tuple[str, dict[str, dict[str, Any]]]) -> None:
    stdout, figures = ran
    for relay in RELAYS:
        peak = figures[f"gateway, {relay}: runner peak RSS"]
        over = figures[f"gateway, {relay}: runner peak RSS over its baseline"]
        for figure in (peak, over):
            assert (figure["unit"], figure["target"], figure["met"]) == ("MiB", "", None)
            assert f"| {figure['name']} |" in stdout
        assert 0 <= over["value"] < peak["value"]  # a peak over a baseline of the same process
