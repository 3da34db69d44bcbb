"""The transcripts' sentence on the sessions' directories says how their writes were bounded
(docs/storage.md: sampled, with RLIMIT_FSIZE per file, for a runner that is not root)."""

from __future__ import annotations

from typing import Literal

import pytest

from campaign.batch._config import BatchConfig, BatchFacts, OrderFacts, workspace_note
from campaign.batch._options import BatchOptions


def _config(disk_bound: Literal["kernel", "sampled"] | None) -> BatchConfig:
    options = BatchOptions(command="run", corpus="/c", tier="campaign", seed=0, harness_path="/h",
                           max_cost_cents=500, workspace_path="/workspace/c")  # fmt: skip
    return BatchConfig(options=options, facts=BatchFacts(
        runner="r", harness_version="v", network="host", network_note="n", provider_note="p",
        arms={}, order=OrderFacts(algorithm="a", seed=0),
        disk_bound=disk_bound))


def test_a_non_root_runners_batch_says_its_writes_limit_was_sampled() -> None:
    note = workspace_note(_config("sampled"))
    assert note.startswith("Every session saw its workspace at /workspace/c")
    assert "was not root" in note and "sampled, not bounded by the kernel" in note
    assert "RLIMIT_FSIZE" in note


@pytest.mark.parametrize("disk_bound", ["kernel", None])
def test_a_root_runners_batch_and_an_older_one_say_nothing_of_it(
        disk_bound: Literal["kernel"] | None) -> None:  # fmt: skip
    assert "sampled" not in workspace_note(_config(disk_bound))

