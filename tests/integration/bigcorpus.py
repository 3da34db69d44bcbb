"""A corpus with one large text file: the bundled example corpus plus ``docs/notes/bulk.txt``.

Shared by tests/integration/test_memory_cap.py and bench/bigfile.py. The file is
a document (front matter with an id, so the load parses it) of real text (never
sparse: every byte is read), lines of 20 words, and every 50th block one line of
about 10 MB, so a pass that holds a line whole shows.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example" / "corpus"
BULK = "docs/notes/bulk.md"
BULK_FRONT = b"---\nid: HW-NOTE-0300\ntitle: Bulk\n---\n\n"
_WORDS = ["the", "cache", "record", "widget", "render", "index", "page", "provider", "retry",
          "budget", "decision", "note", "table", "scroll", "eviction", "policy", "section",
          "letter", "count", "summary"]


def write_text(path: Path, size_bytes: int, *, seed: int = 1, head: bytes = b"") -> int:
    """Write ``head`` and then text lines to ``path``, ``size_bytes`` or a little more in all;
    the bytes written."""
    rng = random.Random(seed)
    line = (" ".join(rng.choice(_WORDS) for _ in range(20)) + "\n").encode()
    long_line = (" ".join(rng.choice(_WORDS) for _ in range(2000))).encode() * 600 + b"\n"
    block = line * 4096
    written = len(head)
    with path.open("wb") as fp:
        fp.write(head)
        i = 0
        while written < size_bytes:
            chunk = long_line if i % 50 == 49 else block
            fp.write(chunk)
            written += len(chunk)
            i += 1
    return written


def example_corpus(root: Path, *, bulk_bytes: int | None) -> Path:
    """The example corpus copied to ``root``, with `BULK` of ``bulk_bytes`` when given."""
    shutil.copytree(EXAMPLE, root)
    if bulk_bytes is not None:
        write_text(root / BULK, bulk_bytes, head=BULK_FRONT)
    return root
