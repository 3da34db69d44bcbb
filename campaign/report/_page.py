"""``report --html FILE``: the report as one self-contained page.

One HTML file with its CSS inline: the summary first (`_summary`'s rows, the
same as the terminal's, each cell toned green "higher" or red "lower" with
the word in it), then per probe its task (folded), its expectations, an
inline SVG chart (the answer distribution per column, `_chart`) and the
same table as the terminal (`_text`'s rows). Every table has the same
column widths, so a column stays where it was from one table to the next.
Nothing is fetched, no script runs, no font is loaded (the page uses the
reader's system fonts), so it opens the same offline, from a mail
attachment or a CI artefact.

Templating is Jinja2 (Pallets; long-lived, the common choice) with
autoescaping on: a probe's title, an answer or a failure's reason is text
from a corpus or a harness, and must never become markup. A chart library
would bring either a script (Plotly, Vega: hundreds of KB of JavaScript
inline, or a CDN) or a raster image; a few rectangles and lines of SVG do
the job and stay readable as text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import jinja2

from campaign._terminal_text import block
from campaign.plan import runner_version

from ._chart import answer_chart, colour
from ._json import REPORT_FORMAT
from ._summary import SUMMARY_LEGEND, SUMMARY_TITLE, grading_line, summary_rows
from ._text import (
    MARK_NOTE,
    SHARES_NOTE,
    arm_rows,
    column_label,
    expectation_label,
    layout_line,
    probe_rows,
    standing_lines,
)

if TYPE_CHECKING:
    from ._model import Report

TEMPLATE: Final = "report.html.j2"
LABEL_REM: Final = 20
"""Width of every table's first column (the row labels), rem."""
VALUE_REM: Final = 20
"""Width of every other column, rem: each table is as wide as its columns, the same in all."""


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("campaign.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True)


def render_page(report: Report) -> str:
    """The page of ``report`` as one HTML document (module docstring).

    Raises:
        jinja2.TemplateError: the template is broken (a bug, never bad input).
    """
    labels = [column_label(report, c.id) for c in report.columns]
    tables = [probe_rows(p) for p in report.probes]
    probes = [{"figures": p, "rows": rows, "chart": answer_chart(p, labels, index=i),
               "expectations": [expectation_label(k, t).removeprefix("expect ")
                                for k, t in p.expectations]}
              for i, (p, rows) in enumerate(zip(report.probes, tables, strict=True))]
    marked = any(any(row.marked) for rows in tables for row in rows)  # said once, if at all
    # `block`: a control a session sent (ESC, BEL, C1, a bidi override) is written as an
    # escape, so `cat` of the page cannot replay it (docs/cli.md); HTML escaping is the
    # template's.
    return block(_environment().get_template(TEMPLATE).render(
        report=report, labels=labels, colours=[colour(i) for i in range(len(labels))],
        summary_title=SUMMARY_TITLE, summary_rows=summary_rows(report),
        grading_line=grading_line(report), summary_legend=SUMMARY_LEGEND,
        shares_note=SHARES_NOTE, mark_note=MARK_NOTE if marked else None,
        table_width=LABEL_REM + VALUE_REM * len(labels), label_rem=LABEL_REM,
        layout=layout_line(report),
        standings=[standing_lines(b) for b in report.batches], probes=probes,
        arm_rows=arm_rows(report), runner=runner_version(), json_format=REPORT_FORMAT))
