"""``status``, ``show``, ``retranscribe`` and ``report``: the commands that read a batch."""

from __future__ import annotations

from pathlib import Path

from .._args import ReportArgs, RetranscribeArgs, ShowArgs, StatusArgs
from ._base import Subparsers, add_command


def add_reading_commands(sub: Subparsers) -> None:
    """Add ``status``, ``show``, ``retranscribe`` and ``report``."""
    p = add_command(sub, "status", StatusArgs, "_status", "cmd_status",
                    help="how a batch stands, running or finished")
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/batch.md)")

    p = add_command(sub, "show", ShowArgs, "_show", "cmd_show",
                    help="one session's attempts: state and reason, calls, final text")
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("arm", metavar="ARM", help="the session's arm")
    p.add_argument("probe", metavar="PROBE", help="the probe's id")
    p.add_argument("session", metavar="SESSION", help="the session's name (s1, r2, ...)")

    p = add_command(sub, "retranscribe", RetranscribeArgs, "_retranscribe", "cmd_retranscribe",
                    help="derive a batch's events again from the streams it kept, with this "
                         "recorder (runs nothing)")
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("--corpus", type=Path, metavar="DIR",
                   help="where the batch's corpus is now (default: the path config.yaml "
                        "records); it must still plan to the same tree")

    p = add_command(sub, "report", ReportArgs, "_report", "cmd_report",
                    help="arms side by side per probe: a summary of graded shares first, then "
                         "states, answers with 95%% intervals, differences, verdicts, calls, "
                         "reads, what was produced, cost (docs/report.md)")
    p.add_argument("batches", type=Path, nargs="+", metavar="BATCH",
                   help="batch directories; several are merged when their plan members and "
                        "arms agree")
    p.add_argument("--json", action="store_true",
                   help="print one versioned JSON object instead (docs/report.md)")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="also write the report as one self-contained HTML page, a chart per "
                        "probe")
    p.add_argument("--side-by-side", action="store_true",
                   help="show each batch in columns of its own instead of merging (needed when "
                        "their plans or arms differ)")
