"""The runner's memory: flat in the stream's length, and flat in the corpus's file sizes.

Second test (docs/sealing.md, "Large files"): one `record` on the example corpus with a
300 MB text document added (tests/integration/bigcorpus.py: real lines, some of 10 MB,
written under /var/tmp, never sparse) against the same record on the example corpus; the
runner's VmHWM and its largest child's peak (grep, bwrap) may grow by at most 32 MiB
(+ 8 MiB of slack). Each whole read of that file it would hold costs 300 MB.

First test: the runner under a hard memory cap: a 500 MB session recorded by a runner
held to 150 MiB.

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

import json
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign.batch._ledger import read_ledger
from campaign.batch._records import FinalRecord
from tests.campaign.corpora import write_files
from tests.integration import bigcorpus, kit
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
                     "--network", "host", "--retries", "0", "--max-stdout", "1G")
    assert run.returncode == 0, run.stderr[-3000:]
    (final,) = [r for r in read_ledger(batch / "ledger.jsonl") if isinstance(r, FinalRecord)]
    assert final.state == "recorded", final.reason
    assert final.stream_bytes is not None and final.stream_bytes >= STREAM_BYTES
    assert final.event is not None and len(final.event.calls or []) > 1000


BIG_FILE_BYTES = 300_000_000
FLAT_BYTES = 32 * 1024 * 1024
"""The target: a corpus file of any size costs the runner at most this much peak RSS."""
SLACK_BYTES = 8 * 1024 * 1024
"""Run-to-run noise of one runner's VmHWM (measured: within 2 MiB between runs)."""


def _record_peak(corpus: Path, batch: Path, root: Path) -> tuple[int, int]:
    """One `record` of HW-PRB-0003 (a Read, a Write, an answer) on ``corpus``: the runner's
    VmHWM and its largest child's peak (bytes; tests/integration/hwm_runner.py)."""
    peak_file = root / f"{batch.name}.hwm"
    done = subprocess.run(
        [sys.executable, str(kit.REPO / "tests" / "integration" / "hwm_runner.py"), "record",
         "--corpus", str(corpus), "--probe", "HW-PRB-0003", "--arm", "present",
         "--batch-dir", str(batch), "--provider", "scripted",
         "--scripts", str(EXAMPLE_SCRIPTS), "--harness", str(HARNESS), "--network", "host"],
        capture_output=True, text=True, env=kit.base_env(HW_HWM_FILE=str(peak_file)),
        timeout=600, check=False, cwd=kit.REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    own, child = peak_file.read_text().split()
    return int(own) * 1024, int(child) * 1024


EXAMPLE_SCRIPTS = kit.REPO / "demo" / "example" / "scripts"
HARNESS = kit.REPO / ".harness" / "node_modules" / ".bin" / "claude"


@pytest.mark.harness
def test_a_300_mb_corpus_file_costs_the_runner_at_most_32_mib(harness: Path) -> None:
    # docs/sealing.md "Large files": every pass over a corpus or workspace file reads it in
    # chunks, so the runner's peak is flat in the corpus's largest file.
    with kit.host_dir("hw-bigfile-") as root:
        small = bigcorpus.example_corpus(root / "small", bulk_bytes=None)
        big = bigcorpus.example_corpus(root / "big", bulk_bytes=BIG_FILE_BYTES)
        base, base_child = _record_peak(small, root / "b-small", root)
        peak, peak_child = _record_peak(big, root / "b-big", root)
        manifest = json.loads(next((root / "b-big" / "sessions").rglob("manifest.json"))
                              .read_text())
        assert bigcorpus.BULK in json.dumps(manifest)  # the big file was sealed in, not lost
    print(f"runner VmHWM {peak / 2**20:.1f} MiB against {base / 2**20:.1f} MiB; largest child "
          f"{peak_child / 2**20:.1f} MiB against {base_child / 2**20:.1f} MiB")
    assert peak <= base + FLAT_BYTES + SLACK_BYTES, (peak, base)
    # grep, the harness, bwrap: none holds the file either (grep -z would, as one record).
    assert peak_child <= base_child + FLAT_BYTES + SLACK_BYTES, (peak_child, base_child)
