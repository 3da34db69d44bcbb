"""The summary the report opens with: probes as rows, columns as columns, one share per cell.

`summary_rows` gives one `Row` per probe: for a graded probe each cell is its
satisfied share (`_text.graded_text`), toned ``higher`` or ``lower`` where the
95% Newcombe interval of its difference from the reference column lies wholly
above or below 0 (green or red, and always the word too: never colour alone);
for a probe that declares no expectations, the share of its most frequent
answer, marked ``ungraded``. `grading_line` says who graded and over what,
`SUMMARY_LEGEND` what the cells and colours mean. The terminal and the page
both draw these, so they say the same thing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from campaign.grade import MOVED_READ_SET

from ._text import Row, answer_label, graded_text, percent

if TYPE_CHECKING:
    from ._model import AnswerShare, Cell, ProbeFigures, Report

SUMMARY_TITLE: Final = "summary: per probe, the share of each arm's recorded sessions that " \
                       "satisfied every expectation"
UNGRADED: Final = "ungraded"
"""Marks a probe that declares no expectations (its cells show the most frequent answer)."""
SUMMARY_LEGEND: Final = (
    "Each cell: the sessions that satisfied every expectation of the probe, of the recorded "
    "ones, the percent and [95% Wilson interval]; beside it, the difference from the reference "
    "column in percentage points and [95% Newcombe interval]. \"higher\" (green) or \"lower\" "
    "(red): that interval lies wholly above or below 0; no word and no colour: it includes 0; "
    "\"unconfirmed\" beside it: Fisher's exact test of the same counts does not reach 0.05, "
    "so there are too few sessions to be sure (docs/statistics.md). "
    "Sessions whose event lacks what an expectation needs are \"not observed\", counted apart "
    "and never as either side. \"ungraded\": the probe declares no expectations, so the cell "
    "is the share of its most frequent answer, which says how the sessions ended, not whether "
    "that is right.")
MOVED_NOTE: Final = (
    f"{MOVED_READ_SET}: the probes or documents the corpus composes now differ from those the "
    "batch recorded (an edited expect: moves it), so the verdicts are the current "
    "expectations' over the sessions as they ran")


def grading_line(report: Report) -> str:
    """Who graded and against what, or why nothing is graded (one line)."""
    facts = report.grading
    if facts.grader is None:
        return (f"{UNGRADED}: {facts.ungraded}; each probe shows its most frequent answer's "
                "share instead")
    graded, total = sum(p.graded for p in report.probes), len(report.probes)
    verb = "probe declares" if total == 1 else "probes declare"
    line = (f"graded by grader {facts.grader} against the expectations in {facts.corpus}: "
            f"{graded} of {total} {verb} expectations")
    if facts.moved_read_set:
        line += f"; {MOVED_NOTE}"
    return line


def summary_rows(report: Report) -> list[Row]:
    """One row per probe, a value per column (module docstring)."""
    rows = []
    for probe in report.probes:
        label = f"{probe.id}: {probe.title}"
        if probe.graded:
            rows.append(Row(label, tuple(graded_text(c.graded) for c in probe.cells), "graded",
                            tones=tuple(_tone(c) for c in probe.cells)))
        else:
            rows.append(Row(label, _ungraded_values(probe), "ungraded"))
    return rows


def _tone(cell: Cell) -> str:
    if cell.graded is None or cell.graded.direction == "unclear":
        return ""
    return cell.graded.direction


def most_frequent(probe: ProbeFigures) -> int | None:
    """The index (in the cells' answer order) of the answer most sessions gave over every
    column, the first in that order on a tie; None when no session was answered."""
    if not probe.cells:
        return None
    totals = [sum(c.answers[i].count for c in probe.cells)
              for i in range(len(probe.cells[0].answers))]
    if not any(totals):
        return None
    return totals.index(max(totals))


def _ungraded_values(probe: ProbeFigures) -> tuple[str, ...]:
    index = most_frequent(probe)
    if index is None:
        return tuple(f"- ({UNGRADED})" for _ in probe.cells)
    return tuple(_answer_text(c.answers[index], c.answered) for c in probe.cells)


def _answer_text(share: AnswerShare, of: int) -> str:
    if share.share is None:
        return f"- ({UNGRADED})"
    return (f"{answer_label(share.answer)} {share.count}/{of} {percent(share.share)} "
            f"({UNGRADED})")
