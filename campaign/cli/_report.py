"""``report BATCH [BATCH ...] [--json] [--html FILE] [--side-by-side]``: arms side by side.

Reads the batches (never writes them), grades them (`campaign.grade.grade_batches`,
against the corpus at the path config.yaml records), builds the figures once
(`campaign.report.build_report`) and prints them: rich tables on a
terminal, plain text in a pipe, or with ``--json`` the versioned object on
stdout; ``--html FILE`` also writes the page. Exit 0, or 2 when a BATCH is
not a batch, is named twice, or the batches cannot be merged (the message
names the member that differs; ``--side-by-side`` shows them apart). A
report the grader cannot grade (no corpus there, a corpus or an ``expect:``
it refuses, batches of two plans side by side) is still printed, marked
ungraded with the reason.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from campaign._errors import CorpusError
from campaign._json_text import json_safe
from campaign.grade import GradeError, Grading, NoCorpus, grade_batches
from campaign.report import build_report, print_report, render_page, report_json
from campaign.supervisor import refused_write
from recorder import write_atomic

from ._args import ReportArgs
from ._errors import EXIT_OK, UsageError


def cmd_report(args: ReportArgs) -> int:
    """``report``: print the report of the batches (module docstring).

    Raises:
        ReportError: a batch is not readable, named twice, or batches differ (exit 2).
        UsageError: the page cannot be written where ``--html`` says (exit 2).
    """
    paths = [b.expanduser().resolve() for b in args.batches]
    grading, ungraded = grading_of(paths)
    report = build_report(paths, side_by_side=args.side_by_side, grading=grading,
                          ungraded=ungraded)
    if args.html is not None:
        page = Path(args.html).expanduser()
        try:
            write_atomic(page, render_page(report).encode("utf-8"), mode=0o644)
        except OSError as exc:
            if refused_write(exc):
                raise  # disk full or quota: the CLI's exit 6
            why = exc.strerror or str(exc)
            if not page.parent.is_dir():
                why = f"its directory {page.parent} does not exist"
            raise UsageError(f"--html {page}: cannot write the page there: {why}") from exc
    if args.json:
        # json_safe: a batch path that is not UTF-8 reads as \xHH (docs/batch.md); ASCII, as
        # status --json: a session's C1 control or bidi override reaches the terminal as \u
        # escapes, never raw (docs/cli.md, "What a session wrote, on the terminal").
        sys.stdout.write(json.dumps(json_safe(report_json(report)), indent=1) + "\n")
    else:
        print_report(report, sys.stdout)
    if args.html is not None:
        print(f"page: {Path(args.html).expanduser().resolve()}", file=sys.stderr)
    return EXIT_OK


def grading_of(paths: list[Path]) -> tuple[Grading | None, str | None]:
    """The grader's verdicts over ``paths``, or None and why not (the report's "ungraded").

    A batch the report cannot read either is left to `build_report`, which says so (exit 2).
    """
    try:
        return grade_batches(paths), None
    except NoCorpus as exc:
        return None, (f"no corpus at {exc.corpus} (the path {exc.batch}/config.yaml records), "
                      "so there are no expectations to grade against; "
                      "`headwater-campaign grade BATCH --corpus DIR` grades against another")
    except (GradeError, CorpusError) as exc:
        return None, f"the grader did not grade these batches: {exc}"
