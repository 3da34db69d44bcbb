"""The report in the terminal: rich tables on a terminal, plain text in a pipe.

The summary comes first (`_summary`: a share per probe and arm, green
"higher" or red "lower" against the reference), then each batch's standing,
then per probe its task, its expectations and its table, then the per-arm
table and the warnings. On a terminal: rich tables, a bold mark on
differences whose interval excludes 0, warnings in yellow. Off a terminal (a pipe, a file): the same
tables drawn in ASCII, no colour or control codes, and no line wrapped (the
console is as wide as the widest table). The rows come from `_text`, so the
figures are the page's.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Final

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from campaign._terminal_text import PIPE_WIDTH, block, cell, one_line

from ._summary import SUMMARY_LEGEND, SUMMARY_TITLE, grading_line, summary_rows
from ._text import (
    MARK_NOTE,
    SHARES_NOTE,
    arm_rows,
    column_label,
    expectations_line,
    layout_line,
    probe_rows,
    standing_lines,
)

if TYPE_CHECKING:
    from typing import TextIO

    from ._model import ProbeFigures, Report
    from ._text import Row

TONES: Final = {"higher": "green", "lower": "red"}
"""The summary's colours on a terminal (the word is in the cell too: never colour alone)."""
NOTE_WIDTH: Final = 100
"""The legend and the notes are filled to this many columns (a pipe's console never wraps)."""
TASK_PREFIX: Final = "    | "
"""Before each line of a probe's task: no line of it starts where the report's lines do."""


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
    console, plain = _console(out, force_plain=force_plain)
    style = box.ASCII if plain else box.ROUNDED
    headings = [column_label(report, c.id) for c in report.columns]
    _print_summary(console, report, style, plain=plain)
    console.print()
    console.print(one_line(layout_line(report)), markup=False)
    for batch in report.batches:
        for line in standing_lines(batch):  # names paths and sessions: escaped
            console.print(one_line(line), markup=False)
    probe_tables = [probe_rows(figures) for figures in report.probes]
    console.print()
    marked = any(any(row.marked) for rows in probe_tables for row in rows)
    console.print(textwrap.fill(f"{SHARES_NOTE}" + (f"; {MARK_NOTE}." if marked else "."),
                                NOTE_WIDTH), markup=False)
    for figures, rows in zip(report.probes, probe_tables, strict=True):
        console.print()
        _probe_head(console, figures)
        console.print(_table(None, headings, rows, style, plain=plain))  # titled above
    console.print()
    console.print(_table(cell("per arm, over the batch"), headings, arm_rows(report), style,
                         plain=plain))
    console.print()
    if not report.warnings:
        console.print("warnings: none (the arms met the same conditions, as far as the report "
                      "checks: docs/report.md)", markup=False)
    for warning in report.warnings:
        console.print(cell(f"warning: {warning.message}", style="" if plain else "yellow"))


def print_summary(report: Report, out: TextIO, *, force_plain: bool = False) -> None:
    """Write only the summary of ``report`` (the graded share per probe and arm, the grading
    line, the legend) to ``out``, as `print_report` begins; what ``run``, ``demo`` and
    ``resume`` print when a batch ends.

    Raises:
        BrokenPipeError: ``out``'s reader went away.
    """
    console, plain = _console(out, force_plain=force_plain)
    _print_summary(console, report, box.ASCII if plain else box.ROUNDED, plain=plain)


def _console(out: TextIO, *, force_plain: bool) -> tuple[Console, bool]:
    """The console for ``out``, and whether it is plain (a pipe, a file, or forced)."""
    plain = force_plain or not Console(file=out).is_terminal
    console = _Console(file=out, highlight=False, soft_wrap=True, no_color=plain,
                       color_system=None if plain else "auto",
                       width=PIPE_WIDTH if plain else None)
    return console, plain


def _print_summary(console: Console, report: Report, style: box.Box, *, plain: bool) -> None:
    headings = [column_label(report, c.id) for c in report.columns]
    console.print(_table(Text(SUMMARY_TITLE), headings, summary_rows(report), style,
                         plain=plain, first="probe"))
    console.print(cell(grading_line(report)))  # names the corpus path: escaped
    console.print(textwrap.fill(SUMMARY_LEGEND, NOTE_WIDTH), markup=False)


def _probe_head(console: Console, figures: ProbeFigures) -> None:
    """The probe's title, its task (from the corpus: untrusted, each line escaped and
    prefixed) and its expectations, above its table."""
    console.print(cell(f"{figures.id}: {figures.title}", style="bold"))
    console.print("task:", markup=False)
    for line in block(figures.task.rstrip("\n")).split("\n"):
        console.print(Text(TASK_PREFIX + line), markup=False)
    console.print(cell(expectations_line(figures)))


def _table(title: Text | None, headings: list[str], rows: list[Row], style: box.Box, *, plain: bool,
           first: str = "") -> Table:
    table = Table(title=title, box=style, title_justify="left",
                  header_style="" if plain else "bold")
    table.add_column(first)
    for heading in headings:
        table.add_column(cell(heading), justify="right")
    for row in rows:  # a row may hold what a session sent (its served model): escaped
        table.add_row(cell(row.label), *[cell(v, style=_style(row, i, plain=plain))
                                         for i, v in enumerate(row.values)])
    return table


def _style(row: Row, i: int, *, plain: bool) -> str:
    if plain:
        return ""
    if row.tones and row.tones[i]:
        return TONES[row.tones[i]]
    return "bold" if row.marked and row.marked[i] else ""
