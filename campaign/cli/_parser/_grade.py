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
                         "intervals, differences from the reference arm (docs/grading.md)",
                    description="Grade each recorded session against the expectations its "
                    "probe declares under expect: in its front matter (docs/expectations.md). "
                    "Each expectation gets one of three verdicts: satisfied, unsatisfied, or "
                    "not observed when the transcript lacks what it needs (never a pass); a "
                    "session is unsatisfied if any is, else not observed if any is, else "
                    "satisfied. Prints per probe and arm the satisfied share with its 95% "
                    "Wilson interval, the difference from the reference arm (the plan's "
                    "first) with Newcombe's interval and Fisher's exact p, the pooled "
                    "Mantel-Haenszel odds ratio across probes, then every session's verdicts "
                    "naming the event and call they came from. Reads the transcripts as the "
                    "batch holds them, held to its ledger (check-transcript --batch holds "
                    "them to the kept streams). Exit 0 printed; 2 not a batch, a transcript "
                    "that differs from its ledger, batches of different plans, or no corpus.")
    p.add_argument("batches", type=Path, nargs="+", metavar="BATCH",
                   help="batch directories of one plan; several are graded together")
    p.add_argument("--corpus", type=Path, metavar="DIR",
                   help="the corpus whose probes declare the expectations (default: the path "
                        "the first batch's config.yaml records); no corpus there is exit 2")
    p.add_argument("--json", action="store_true",
                   help="print one versioned JSON object instead, every verdict with its event "
                        "and call (docs/grading.md)")
