"""Benchmark (not a test): the runner's peak RSS is flat in the size of the corpus's files.

The example corpus (demo/example/corpus) as it is, and again with one text file of
``--mb`` MB (300; ``--full``: 2,000) at docs/notes/bulk.md (tests/integration/bigcorpus.py:
real text, lines of 20 words and every 50th block a line of about 10 MB). Each corpus is
run as the demo's batch (tier ``campaign``: 16 sessions, scripted provider, real CLI and
bwrap, ``--network host``); with ``--full`` one ``record`` only (16 sealed copies of 2 GB
would be 32 GB of disk). The runner's own ``VmHWM`` and its largest child's ``ru_maxrss``
come from tests/integration/hwm_runner.py. Target: the large corpus's runner peak within
32 MiB of the bundled corpus's (docs/bench.md, "bench/bigfile.py").

Usage::

    .venv/bin/python bench/bigfile.py [--mb 300] [--full] [--root DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _figures

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.integration import bigcorpus  # noqa: E402

HARNESS = REPO / ".harness" / "node_modules" / ".bin" / "claude"
SCRIPTS = REPO / "demo" / "example" / "scripts"
TARGET_MIB = 32.0


def run(corpus: Path, batch: Path, *, one: bool) -> tuple[float, float, float]:
    """The runner's VmHWM and its largest child's peak (MiB), and the wall (s)."""
    peak_file = batch.with_suffix(".hwm")
    common = ["--provider", "scripted", "--scripts", str(SCRIPTS), "--harness", str(HARNESS),
              "--network", "host", "--batch-dir", str(batch)]
    args = (["record", "--corpus", str(corpus), "--probe", "HW-PRB-0003", "--arm", "present"]
            if one else ["run", str(corpus), "--tier", "campaign"])
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(REPO / "tests/integration/hwm_runner.py"),
                           *args, *common], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "HW_HWM_FILE": str(peak_file)}, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(args[:1])} on {corpus} exited {done.returncode}: "
                 f"{done.stderr[-2000:]}")
    own, child = (int(x) / 1024 for x in peak_file.read_text().split())
    return own, child, wall


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=int, default=None)
    parser.add_argument("--full", action="store_true", help="2,000 MB, one record")
    parser.add_argument("--root", type=Path, default=Path("/var/tmp"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    mb = args.mb if args.mb is not None else 2000 if args.full else 300
    what = "record" if args.full else "batch of 16"
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-bigfile-", dir=args.root))
    try:
        small = bigcorpus.example_corpus(work / "small", bulk_bytes=None)
        big = bigcorpus.example_corpus(work / "big", bulk_bytes=mb * 1_000_000)
        base = run(small, work / "b-small", one=args.full)
        large = run(big, work / "b-big", one=args.full)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{what}, bundled corpus: runner VmHWM {base[0]:.1f} MiB, largest child "
          f"{base[1]:.1f} MiB, {base[2]:.1f} s")
    print(f"{what}, + a {mb} MB file: runner VmHWM {large[0]:.1f} MiB, largest child "
          f"{large[1]:.1f} MiB, {large[2]:.1f} s")
    print(f"difference: runner {large[0] - base[0]:+.1f} MiB (target <= {TARGET_MIB:g}), "
          f"largest child {large[1] - base[1]:+.1f} MiB")
    figures = [
        _figures.at_most(f"bigfile: runner peak RSS, {what} + {mb} MB file - bundled",
                         large[0] - base[0], TARGET_MIB, "MiB"),
        _figures.info(f"bigfile: largest child's peak RSS, + {mb} MB file - bundled",
                      large[1] - base[1], "MiB"),
    ]
    if args.json is not None:
        args.json.write_text(json.dumps({"figures": _figures.to_json(figures)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
