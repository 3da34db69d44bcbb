"""The report in the terminal: rich tables on a terminal, plain text in a pipe.

On a terminal: rich tables, a bold mark on differences whose interval
excludes 0, warnings in yellow. Off a terminal (a pipe, a file): the same
tables drawn in ASCII, no colour or control codes, and no line wrapped (the
console is as wide as the widest table). The rows come from `_text`, so the
figures are the page's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from campaign._terminal_text import PIPE_WIDTH, cell, one_line

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
    from typing import TextIO

    from ._model import Report
    from ._text import Row



class _Console(Console):
    """A console that leaves a closed pipe (``report | head``) to the CLI: rich would exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError("the reader of the report went away")


def print_report(report: Report, out: TextIO, *, force_plain: bool = False) -> None:
    """Write ``report`` to ``out``: rich on a terminal, plain ASCII elsewhere (module docstring).

    Args:
        report: The figures.
        out: Where to write (stdout in the CLI).
        force_plain: Plain text even on a terminal (tests).

    Raises:
        BrokenPipeError: ``out``'s reader went away (the CLI then ends quietly, status 0).
    """
    probe = Console(file=out)
    plain = force_plain or not probe.is_terminal
    console = _Console(file=out, highlight=False, soft_wrap=True, no_color=plain,
                      color_system=None if plain else "auto",
                      width=PIPE_WIDTH if plain else None)
    style = box.ASCII if plain else box.ROUNDED
    console.print(DESCRIBES_ONLY, markup=False)
    console.print(one_line(layout_line(report)), markup=False)
    for batch in report.batches:
        for line in standing_lines(batch):  # names paths and sessions: escaped
            console.print(one_line(line), markup=False)
    headings = [column_label(report, c.id) for c in report.columns]
    for figures in report.probes:
        console.print()
        rows = probe_rows(figures)
        marked = any(any(row.marked) for row in rows)  # the legend only where a mark is
        console.print(_table(cell(f"{figures.id}: {figures.title}"), headings, rows,
                             style, plain=plain, caption=MARK_NOTE if marked else None))
    console.print()
    console.print(_table(cell("per arm, over the batch"), headings, arm_rows(report), style,
                         plain=plain))
    console.print()
    if not report.warnings:
        console.print("warnings: none (the arms met the same conditions, as far as the report "
                      "checks: docs/report.md)", markup=False)
    for warning in report.warnings:
        console.print(cell(f"warning: {warning.message}", style="" if plain else "yellow"))


def _table(title: Text, headings: list[str], rows: list[Row], style: box.Box, *, plain: bool,
           caption: str | None = None) -> Table:
    table = Table(title=title, box=style, caption=caption, title_justify="left",
                  caption_justify="left", header_style="" if plain else "bold")
    table.add_column("")
    for heading in headings:
        table.add_column(cell(heading), justify="right")
    for row in rows:  # a row may hold what a session sent (its served model): escaped
        values = [cell(v, style="bold" if (row.marked and row.marked[i] and not plain) else "")
                  for i, v in enumerate(row.values)]
        table.add_row(cell(row.label), *values)
    return table
