"""Benchmark (not a test): peak RSS and throughput of drive_child over long streams.

docs/bench.md (memory): the runner's peak RSS is flat in stream length
(within 10 % between 100 MB and 1 GB of the same lines) and under 100 MB.

Usage: ``.venv/bin/python bench/reader_memory.py [SIZE_MB ...]`` (default 100 1000).
Each size runs in a fresh interpreter (``--one SIZE_MB``) so that one run's
peak does not hide another's; ``ru_maxrss`` of that interpreter is the
runner's peak (the generator child is not counted: RUSAGE_SELF).
"""


from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from recorder._driver import drive_child
from sandbox._process import open_child

MB = 1_000_000
DEFAULT_SIZES_MB = (100, 1000)

GENERATOR = r"""
import json, os, sys
total = int(sys.argv[1])
def line(obj):
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"
block = bytearray()
block += line({"type": "system", "subtype": "init", "permissionMode": "dontAsk",
               "tools": ["Read"] * 20})
i = 0
while len(block) < 1 << 20:
    i += 1
    block += line({"type": "assistant", "message": {"id": f"msg_{i}", "model": "claude-sonnet-4-5",
                   "content": [{"type": "text", "text": "word " * (20 + i % 200)}]}})
    block += line({"type": "user", "message": {"content": [{"type": "tool_result",
                   "tool_use_id": f"toolu_{i}", "content": "x" * (i % 4000)}]}})
big = line({"type": "user", "message": {"content": [{"type": "image", "data": "A" * 1_400_000}]}})
block = bytes(block)
written = 0
n = 0
while written < total:
    chunk = big if n % 100 == 10 else block  # a 1.4 MB line (BC-03) at ~10 MB, then every ~100 MB
    view = memoryview(chunk)
    while view:
        view = view[os.write(1, view):]
    written += len(chunk)
    n += 1
"""


async def _one(size_mb: int) -> dict[str, float]:
    counted = {"lines": 0, "bytes": 0}

    def on_line(line: bytes) -> None:
        counted["lines"] += 1
        counted["bytes"] += len(line) + 1

    with tempfile.TemporaryDirectory() as tmp:
        generator = Path(tmp) / "generator.py"
        generator.write_text(GENERATOR)
        rss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        async with open_child([sys.executable, str(generator), str(size_mb * MB)]) as child:
            result = await drive_child(child, on_line=on_line,
                                       stderr_tail=Path(tmp) / "stderr.tail",
                                       wall_limit_s=3600, watchdog_s=600)
        seconds = time.monotonic() - started
    assert result.exit_status == 0, result
    assert result.end == "exited", result
    assert counted["bytes"] == result.stdout_bytes
    return {
        "size_mb": size_mb,
        "stdout_mb": result.stdout_bytes / MB,
        "lines": counted["lines"],
        "seconds": seconds,
        "mb_per_s": result.stdout_bytes / MB / seconds,
        "rss_before_drive_mib": rss_before_kib / 1024,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(json.dumps(anyio.run(_one, int(argv[1]), backend="trio")))
        return 0
    sizes = [int(a) for a in argv] or list(DEFAULT_SIZES_MB)
    rows = []
    for size in sizes:
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(size)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(done.stdout))
    print(f"{'stream':>9} {'lines':>10} {'seconds':>8} {'MB/s':>7} {'RSS idle':>9} {'peak RSS':>9}")
    for r in rows:
        print(
            f"{r['stdout_mb']:>7.0f}MB {r['lines']:>10} {r['seconds']:>8.2f} "
            f"{r['mb_per_s']:>7.0f} {r['rss_before_drive_mib']:>7.1f}Mi "
            f"{r['peak_rss_mib']:>7.1f}Mi"
        )
    if len(rows) >= 2:
        ratio = rows[-1]["peak_rss_mib"] / rows[0]["peak_rss_mib"]
        print(
            f"peak RSS ratio {rows[-1]['size_mb']} MB / {rows[0]['size_mb']} MB: {ratio:.3f} "
            f"(target: within 10 %, and under 100 MB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
