"""``report BATCH [BATCH ...] [--json] [--side-by-side]``: the arms side by side, per probe.

Reads the batches (never writes them), builds the figures once
(`campaign.report.build_report`) and prints them: rich tables on a
terminal, plain text in a pipe, or with ``--json`` the versioned object on
stdout. Exit 0, or 2 when a BATCH is not a batch, is named twice, or the
batches cannot be merged (the message names the member that differs;
``--side-by-side`` shows them apart).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from campaign.report import build_report, print_report, report_json

from ._errors import EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    """``report``: print the report of the batches (module docstring).

    Raises:
        ReportError: a batch is not readable, named twice, or batches differ (exit 2).
    """
    paths = [Path(b).expanduser().resolve() for b in args.batches]
    report = build_report(paths, side_by_side=args.side_by_side)
    if args.json:
        sys.stdout.write(json.dumps(report_json(report), indent=1, ensure_ascii=False) + "\n")
    else:
        print_report(report, sys.stdout)
    return EXIT_OK
