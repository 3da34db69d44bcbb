"""Benchmark (not a test): what one session's store costs (create, mkfs, mount, umount, remove).

Times `open_session_store` entered and left ``--runs`` times, for each size in
``--sizes`` (MiB), with the inode count `store_size` gives a 10,000-file
corpus, and prints the median, the 10th and the 90th percentile in ms. A
runner that is not root times the plain-directory store instead (and says so).

Usage::

    .venv/bin/python bench/store.py [--runs N] [--sizes 64,1024,16384] [--root DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox.storage import open_session_store, store_size


def _time_one(size_bytes: int, inodes: int, root: Path) -> float:
    start = time.perf_counter()
    with open_session_store(size_bytes=size_bytes, inodes=inodes, root=root) as store:
        store.subdir("workspace")
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--sizes", default="64,1024,16384", help="image sizes in MiB")
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    _, inodes = store_size(sealed_bytes=0, sealed_files=10_000, write_bytes=0)
    kind = "ext4 on a loop device" if os.geteuid() == 0 else "plain directory (not root)"
    print(f"store: {kind}, {inodes} inodes, {args.runs} runs per size")
    with tempfile.TemporaryDirectory(prefix="headwater-bench-store-", dir="/var/tmp") as tmp:
        root = args.root or Path(tmp) / "store"
        for mib in (int(s) for s in args.sizes.split(",")):
            _time_one(mib << 20, inodes, root)  # warm: page cache, loop module
            times = sorted(_time_one(mib << 20, inodes, root) for _ in range(args.runs))
            deciles = statistics.quantiles(times, n=10)
            print(f"{mib:>6} MiB: median {statistics.median(times):6.1f} ms  "
                  f"p10 {deciles[0]:6.1f}  p90 {deciles[-1]:6.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
