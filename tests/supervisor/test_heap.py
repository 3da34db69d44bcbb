"""Free heap pages given back while a batch runs (campaign/supervisor/_heap.py).

Rule the expectation comes from: glibc's ``free`` gives memory back only from the
top of a heap, and ``malloc_trim(0)`` gives back every whole free page of every
arena (malloc_trim(3)). So a child that frees most of a heap whose top is still
in use keeps those pages resident until `give_back_heap` runs, and not after.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import campaign
from tests.conftest import python_child

_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from campaign.supervisor._heap import give_back_heap

def rss_kib():
    with open("/proc/self/status") as fp:
        return next(int(line.split()[1]) for line in fp if line.startswith("VmRSS:"))

# 64 MB in blocks of 2 kB (below the mmap threshold: on the heap), one in 16 kept, so
# what is freed lies between blocks still in use and free() alone gives back none of it.
blocks = [bytearray(2048) for _ in range(32_000)]
kept = blocks[::16]
del blocks
before = rss_kib()
trimmed = give_back_heap()
print(json.dumps({{"before": before, "after": rss_kib(), "trimmed": trimmed,
                   "kept": len(kept)}}))
"""


def test_give_back_heap_returns_the_free_pages_between_live_blocks() -> None:
    root = str(Path(campaign.__file__).resolve().parents[1])
    done = subprocess.run(python_child(_CHILD.format(root=root)), capture_output=True,
                          text=True, check=True, timeout=60)
    figures = json.loads(done.stdout)
    if not figures["trimmed"]:
        pytest.fail("this C library has no malloc_trim (the runner's hosts run glibc)")
    assert figures["before"] - figures["after"] > 32 * 1024, figures  # KiB: most of 64 MB
