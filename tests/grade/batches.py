"""A graded copy of the format-2 fixture batch: its corpus's probes given ``expect:``.

The fixture (tests/fixtures/batches/format2/, tests/campaign/test_format2_batch.py says how
it was made) has two arms, ``present`` (the reference) and ``absent``; FX-PRB-0001 was
recorded in ``present`` only (``absent``'s session never ran), FX-PRB-0002 in both, and
FX-PRB-0003 ended ``harness-error`` in both. Its corpus declares no expectations: writing
them moves the read set (the probe files are in it), so `pin_read_set` writes the read set
the edited corpus composes into plan.yaml, computed here from the files by the ``tree``
formula (sha256 over ``<digest> <relpath>\\n`` sorted by path), not by the grader.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

from .events import DOC

EXPECT: Final = {
    "FX-PRB-0001": ("expect:\n  answered: current FX-DR-0002\n"
                    "  opened: [docs/decisions/FX-DR-0002.md]\n"
                    f"  not_opened: [{DOC}]\n"),
    "FX-PRB-0002": 'expect:\n  answered: "2"\n  cites: [FX-DR-0001]\n',
    "FX-PRB-0003": "expect:\n  answered: superseded FX-DR-0001\n",
}


def declare(corpus: Path, expect: dict[str, str] = EXPECT) -> None:
    """Write each probe's ``expect:`` block into its front matter (before ``examines:``)."""
    for probe, block in expect.items():
        path = corpus / "docs" / "probes" / f"{probe}.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("examines:", block + "examines:", 1), encoding="utf-8")


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read_set_of(corpus: Path) -> str:
    """The tree formula over every probe file and each file its front matter examines."""
    paths = set()
    for probe in (corpus / "docs" / "probes").glob("*.md"):
        paths.add(probe.relative_to(corpus).as_posix())
        front = probe.read_text(encoding="utf-8").split("---\n")[1]
        after = front.split("examines:\n", 1)[1]
        paths |= {line.strip()[2:] for line in after.splitlines() if line.startswith("  - ")}
    lines = [f"{_digest((corpus / p).read_bytes())} {p}\n"
             for p in sorted(paths, key=lambda p: p.encode())]
    return _digest("".join(lines).encode())


def pin_read_set(batch: Path, corpus: Path) -> None:
    """Make plan.yaml, and each transcript's identity, record the read set ``corpus``
    composes now (as if recorded so: the grader holds a transcript's identity to its plan)."""
    now = read_set_of(corpus)
    for path in (batch / "plan.yaml", *sorted((batch / "transcripts").glob("*.md"))):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        lines = [f"read_set: {now}\n" if line.startswith("read_set:") else line
                 for line in lines]
        path.write_text("".join(lines), encoding="utf-8")
