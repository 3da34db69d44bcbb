"""``grade``: the command that grades batches against the corpus's expectations."""

from __future__ import annotations

from pathlib import Path

from .._args import GradeArgs
from ._base import Subparsers, add_command


def add_grade_command(sub: Subparsers) -> None:
    """Add ``grade``."""
    p = add_command(sub, "grade", GradeArgs, "_grade", "cmd_grade",
                    help="verdicts of every recorded session against the expectations the "
                         "probes declare (expect:), satisfied shares per arm with 95%% "
                         "intervals, differences from the reference arm (docs/grading.md)")
    p.add_argument("batches", type=Path, nargs="+", metavar="BATCH",
                   help="batch directories of one plan; several are graded together")
    p.add_argument("--corpus", type=Path, metavar="DIR",
                   help="the corpus whose probes declare the expectations (default: the path "
                        "the first batch's config.yaml records); no corpus there is exit 2")
    p.add_argument("--json", action="store_true",
                   help="print one versioned JSON object instead, every verdict with its event "
                        "and call (docs/grading.md)")
