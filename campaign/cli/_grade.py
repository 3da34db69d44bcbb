"""``grade BATCH [BATCH ...] [--corpus DIR] [--json]``: verdicts, shares and differences.

Reads the batches and the corpus (never writes either), grades every recorded session
(`campaign.grade.grade_batches`), computes the figures once and prints them: text for people,
or with ``--json`` the versioned object. Every string a session controls is escaped for the
terminal (text) or made strict UTF-8 (JSON). Exit 0, or 2 when a BATCH is not a batch, is
named twice, the batches are not of one plan, or no corpus is where config.yaml (or
``--corpus``) says (docs/grading.md).
"""

from __future__ import annotations

import json
import sys

from campaign._json_text import json_safe
from campaign.grade import figures, grade_batches, grade_json, grade_text

from ._args import GradeArgs
from ._errors import EXIT_OK


def cmd_grade(args: GradeArgs) -> int:
    """``grade``: print the verdicts of the batches (module docstring).

    Raises:
        GradeError: a batch is not readable, named twice, batches differ, or no corpus
            (exit 2).
        CorpusError: the corpus cannot be loaded or an ``expect:`` breaks a rule (exit 2).
    """
    paths = [b.expanduser().resolve() for b in args.batches]
    corpus = args.corpus.expanduser().resolve() if args.corpus is not None else None
    grading = grade_batches(paths, corpus=corpus)
    found = figures(grading)
    if args.json:
        sys.stdout.write(json.dumps(json_safe(grade_json(grading, found)), indent=1) + "\n")
    else:
        sys.stdout.write(grade_text(grading, found))
    return EXIT_OK
