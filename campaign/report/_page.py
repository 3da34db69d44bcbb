"""``report --html FILE``: the report as one self-contained page.

One HTML file with its CSS inline and one inline SVG chart per probe (the
answer distribution per column, `_chart`), then the same tables as the
terminal (`_text`'s rows): nothing is fetched, no script runs, no font is
loaded (the page uses the reader's system fonts), so it opens the same
offline, from a mail attachment or a CI artefact.

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
from ._text import (
    DESCRIBES_ONLY,
    MARK_NOTE,
    arm_rows,
    column_label,
    layout_line,
    probe_rows,
    standing_lines,
)

if TYPE_CHECKING:
    from ._model import Report

TEMPLATE: Final = "report.html.j2"


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
    probes = []
    for i, p in enumerate(report.probes):
        rows = probe_rows(p)
        probes.append({"figures": p, "rows": rows, "chart": answer_chart(p, labels, index=i),
                       "marked": any(any(row.marked) for row in rows)})  # its legend only there
    # `block`: a control a session sent (ESC, BEL, C1, a bidi override) is written as an
    # escape, so `cat` of the page cannot replay it (docs/cli.md); HTML escaping is the
    # template's.
    return block(_environment().get_template(TEMPLATE).render(
        report=report, labels=labels, colours=[colour(i) for i in range(len(labels))],
        describes_only=DESCRIBES_ONLY, mark_note=MARK_NOTE,
        layout=layout_line(report),
        standings=[standing_lines(b) for b in report.batches], probes=probes,
        arm_rows=arm_rows(report), runner=runner_version(), json_format=REPORT_FORMAT))
