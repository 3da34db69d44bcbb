"""The runner under a hard memory cap: a 500 MB session recorded by a runner held to 150 MiB.

The standing check against a regression into holding the stream (docs/bench.md, the
memory target): whatever retains the stream, or a large part of it, dies against the cap and fails
this test the same day, whatever shape the regression takes. The cap is RLIMIT_DATA (the
heap and every private writable mapping: what a process that holds data must grow), not
RLIMIT_AS, which address-space reservations alone would trip. The real command line runs
one batch under real bwrap; the stand-in prints 500 MB of Read pairs, each line holding a
200 KiB text twice, as fast as the pipe takes them; the stream is kept (compressed), as
every batch keeps it.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign.batch._ledger import read_ledger
from campaign.batch._records import FinalRecord
from tests.campaign.corpora import write_files
from tests.integration import kit
from tests.standin import write_stream_standin

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]

CAP_BYTES = 150 * 1024 * 1024
"""The runner's RLIMIT_DATA: about three times what it needs for this stream (measured)."""
STREAM_BYTES = 500_000_000
MODEL = "claude-standin-1"


@pytest.fixture
def root() -> Iterator[Path]:
    with kit.host_dir("hw-memcap-") as path:
        kit.write_script(path / "scripts", "unused", "no task says this")
        yield path


def capped_cli(*args: str) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (CAP_BYTES, CAP_BYTES))

    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, env=kit.base_env(), timeout=600, check=False,
                          cwd=kit.REPO, preexec_fn=cap)  # fmt: skip


def test_a_500_mb_session_is_recorded_by_a_runner_capped_at_150_mib(root: Path) -> None:
    corpus = write_files(root / "corpus", {
        ".headwater/probe.yml": (f"tiers:\n  campaign: {{arms: [present], repetitions: 1}}\n"
                                 f"tools: [Read]\nmodel: {MODEL}\n"),
        "docs/guide.md": "---\nid: HW-DOC-0001\n---\n\n# Guide\n",
        "docs/probes/p001.md": ("---\nid: HW-PRB-0001\ntitle: Probe one\nanswers: [yes, no]\n"
                                "examines: [docs/guide.md]\n---\n\n## Task\n\nIs it? End with "
                                "yes or no.\n"),
    })
    harness = write_stream_standin(root / "harness", total_bytes=STREAM_BYTES)
    batch = root / "batch"
    run = capped_cli("run", str(corpus), "--batch-dir", str(batch), "--harness", str(harness),
                     "--provider", "scripted", "--scripts", str(root / "scripts"),
                     "--network", "host", "--retries", "0")
    assert run.returncode == 0, run.stderr[-3000:]
    (final,) = [r for r in read_ledger(batch / "ledger.jsonl") if isinstance(r, FinalRecord)]
    assert final.state == "recorded", final.reason
    assert final.stream_bytes is not None and final.stream_bytes >= STREAM_BYTES
    assert final.event is not None and len(final.event["calls"]) > 1000
