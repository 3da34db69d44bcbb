"""Progress display off a terminal: one plain line per finished attempt, counted over the batch."""

from __future__ import annotations

import io
from decimal import Decimal

from campaign._progress import Progress


def test_progress_plain_lines_count_the_whole_batch() -> None:
    out = io.StringIO()
    with Progress({"present": 2, "absent": 2}, stream=out) as progress:
        progress.session_done(arm="present", probe="P", session="s1", state="recorded",
                              reason="", cost_usd=Decimal("0.01"))
        progress.session_done(arm="absent", probe="P", session="s1", state="no-result",
                              reason="no result line", cost_usd=None)
    lines = out.getvalue().splitlines()
    assert lines == ["[1/4] present P s1: recorded",
                     "[2/4] absent P s1: no-result (no result line)"]
    assert progress.arms["absent"].failed == 1 and progress.arms["absent"].cost_unknown == 1
