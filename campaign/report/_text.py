"""The report's figures as text: one set of rows that the terminal and the page both show.

`probe_rows` and `arm_rows` lay a probe's cells (or the columns' summaries)
out as labelled rows of strings, one string per column; `standing_lines`
says how each batch stands. The terminal tables and the HTML tables are
both drawn from these rows, so the two show the same figures, written the
same way: a share is ``k/n 87.5% [52.9, 97.8]`` (the 95% Wilson interval in
percent), a difference ``+12.5 [-20.1, 40.3]`` in percentage points with
``*`` when its 95% interval excludes 0, calls ``median (q1-q3)``, costs in
cents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Mapping

    from campaign.stats import Interval, Quartiles

    from ._model import AnswerShare, BatchStanding, Cell, Cost, Difference, ProbeFigures, Report

DESCRIBES_ONLY: Final = (
    "This report describes what the sessions did; it grades nothing. Whether an answer is "
    "right is for the expected values to say, and the recorder never reads them, so no figure "
    "here is a score, a pass or a verdict.")
MARK: Final = "*"
"""Follows a difference whose 95% interval excludes 0."""
MARK_NOTE: Final = f"{MARK} the 95% interval of the difference excludes 0"
OUTSTANDING_SHOWN: Final = 20
"""Outstanding sessions named per batch in the terminal and on the page (JSON names all)."""
LAYOUTS: Final = {
    "single": "one batch",
    "merged": "{n} batches merged: their plan members and arms agree",
    "side-by-side": "{n} batches side by side: columns are numbered by batch (1:present is the "
                    "first batch's present), each compared within its own batch",
}
RowKind: TypeAlias = Literal["count", "answer", "difference", "calls", "read", "outside", "cost",
                             "summary"]


@dataclass(frozen=True, slots=True)
class Row:
    """One labelled row of a table: a string per column, and which of them to set apart."""

    label: str
    values: tuple[str, ...]
    kind: RowKind
    marked: tuple[bool, ...] = ()
    """Per value: a difference whose interval excludes 0 (drawn bold)."""


def answer_label(answer: str | None) -> str:
    """A declared answer in quotes; ``null`` for no declared answer."""
    return "null" if answer is None else f'"{answer}"'


def percent(share: float | None) -> str:
    """``87.5%``; ``-`` for no share."""
    return "-" if share is None else f"{share * 100:.1f}%"


def interval_text(interval: Interval | None, *, signed: bool = False) -> str:
    """``[52.9, 97.8]`` in percent (or percentage points); empty for none."""
    if interval is None:
        return ""
    fmt = "{:+.1f}" if signed else "{:.1f}"
    return f"[{fmt.format(interval.low * 100)}, {fmt.format(interval.high * 100)}]"


def share_text(share: AnswerShare, of: int) -> str:
    """``7/8 87.5% [52.9, 97.8]``; ``-`` when no session was answered."""
    if share.share is None:
        return "-"
    return f"{share.count}/{of} {percent(share.share)} {interval_text(share.interval)}"


def difference_text(difference: Difference) -> str:
    """``-50.0 [-80.1, -3.2] *`` in percentage points; ``-`` when it cannot be taken."""
    if difference.difference is None:
        return "-"
    mark = f" {MARK}" if difference.excludes_zero else ""
    return (f"{difference.difference * 100:+.1f} "
            f"{interval_text(difference.interval, signed=True)}{mark}")


def calls_text(q: Quartiles | None) -> str:
    """``5 (4-6)``: the median, then the first and third quartiles; ``-`` for none."""
    if q is None:
        return "-"
    return f"{_num(q.median)} ({_num(q.q1)}-{_num(q.q3)})"


def _num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}".rstrip("0")


def cents_text(tenths: int) -> str:
    """A cost on screen, from tenths of a cent (each already rounded up once): ``2.3c``, and
    ``3c`` when it is whole. The one way the report writes cents: whole cents, each figure
    rounded up alone, made a sum look wrong (2.3c each for two sessions showed ``3c each, 5c
    in all``); the transcripts' ``cost_cents`` keeps RC-14's whole-cent ceiling."""
    whole, tenth = divmod(tenths, 10)
    return f"{whole}c" if tenth == 0 else f"{whole}.{tenth}c"


def cost_text(cost: Cost) -> str:
    """``2.3c each, 4.6c in all``; ``>=`` before each figure when some attempt's cost is
    unknown (`cents_text`)."""
    bound = ">=" if cost.lower_bound else ""
    each = ("-" if cost.per_recorded_tenths is None
            else f"{bound}{cents_text(cost.per_recorded_tenths)}")
    return f"{each} each, {bound}{cents_text(cost.tenths)} in all"


def spend_text(cost: Cost) -> str:
    """``>=12.4c (2 attempts of unknown cost)``, or ``12.4c`` (`cents_text`)."""
    if not cost.lower_bound:
        return cents_text(cost.tenths)
    return f">={cents_text(cost.tenths)} ({cost.unknown_attempts} attempt(s) of unknown cost)"


def counts_text(counts: Mapping[str, int]) -> str:
    """``recorded 7, timed-out 1``; ``-`` for none."""
    return ", ".join(f"{name} {n}" for name, n in counts.items()) or "-"


def probe_rows(probe: ProbeFigures) -> list[Row]:
    """The rows of one probe's table, one value per cell in column order (module docstring).

    A row per non-recorded state only when some column has such a session; a
    difference row shows ``reference`` in the reference column; ``planned`` says
    ``not planned`` in a column whose batch does not plan the probe (side by side).
    """
    cells = probe.cells
    rows = [Row("planned", tuple(str(c.planned) if c.in_plan else "not planned"
                                 for c in cells), "count"),
            Row("recorded", tuple(str(c.recorded) for c in cells), "count")]
    rows += _state_rows(cells)
    for i, share in enumerate(cells[0].answers if cells else ()):
        rows.append(Row(f"answer {answer_label(share.answer)}",
                        tuple(share_text(c.answers[i], c.answered) for c in cells), "answer"))
    for i, answer in enumerate(probe.answers):
        diffs = [None if c.differences is None else c.differences[i] for c in cells]
        rows.append(Row(
            f"difference {answer_label(answer)}",
            tuple("reference" if d is None else difference_text(d) for d in diffs),
            "difference", tuple(d is not None and d.excludes_zero for d in diffs)))
    rows.append(Row("calls per session", tuple(calls_text(c.calls) for c in cells), "calls"))
    for i, path in enumerate(probe.examines):
        rows.append(Row(f"read {path}", tuple(
            f"{c.reads[i].sessions}/{c.reads[i].of} {percent(c.reads[i].share)}"
            if c.reads[i].of else "-" for c in cells), "read"))
    rows.append(Row("outside paths", tuple(
        f"{c.outside_paths} ({c.outside_path_sessions} of {c.final} sessions)" for c in cells),
        "outside"))
    rows.append(Row("cost per recorded", tuple(cost_text(c.cost) for c in cells), "cost"))
    return rows


def _state_rows(cells: tuple[Cell, ...]) -> list[Row]:
    rows = []
    names = [s for s in (cells[0].states if cells else {}) if any(c.states[s] for c in cells)]
    for name in names:
        rows.append(Row(name, tuple(str(c.states[name]) for c in cells), "count"))
    for label, attr in (("running", "running"), ("interrupted", "interrupted"),
                        ("not started", "not_started")):
        if any(getattr(c, attr) for c in cells):
            rows.append(Row(label, tuple(str(getattr(c, attr)) for c in cells), "count"))
    return rows


def arm_rows(report: Report) -> list[Row]:
    """The rows of the per-column table over the whole batch."""
    arms = report.arms
    return [
        Row("planned", tuple(str(a.planned) for a in arms), "summary"),
        Row("recorded", tuple(str(a.recorded) for a in arms), "summary"),
        Row("refused", tuple(str(a.refused) for a in arms), "summary"),
        Row("failed", tuple(str(a.failed) for a in arms), "summary"),
        Row("running or interrupted", tuple(str(a.running) for a in arms), "summary"),
        Row("not started", tuple(str(a.not_started) for a in arms), "summary"),
        Row("retried", tuple(str(a.retried) for a in arms), "summary"),
        Row("spend", tuple(spend_text(a.spend) for a in arms), "summary"),
        Row("first attempts", tuple(counts_text(a.first_attempt) for a in arms), "summary"),
        Row("retried, now", tuple(counts_text(a.after_retry) for a in arms), "summary"),
        Row("served versions", tuple(counts_text(a.served_versions) for a in arms), "summary"),
        Row("Claude Code", tuple(counts_text(a.harness_versions) for a in arms), "summary"),
        Row("network", tuple(counts_text(a.networks) for a in arms), "summary"),
        Row("median start", tuple(a.median_start or "-" for a in arms), "summary"),
    ]


def layout_line(report: Report) -> str:
    """One line saying how many batches the report covers and how they are laid out."""
    return LAYOUTS[report.layout].format(n=len(report.batches))


def column_label(report: Report, column_id: str) -> str:
    """A column's heading: its id, and ``(reference)`` for the reference column."""
    column = next(c for c in report.columns if c.id == column_id)
    return f"{column.id} (reference)" if column.is_reference else column.id


def standing_lines(batch: BatchStanding) -> list[str]:
    """How one batch stands, in words: what made it, whether it runs, what is outstanding."""
    head = (f"batch {batch.path}: {batch.command}, tier {batch.tier}, model {batch.model}, "
            f"harness {batch.harness_version}, network {batch.network}, "
            f"{batch.invocations} invocation(s)")
    lines = [head]
    if batch.running:
        who = f"process {batch.pid}" if batch.pid else "a process"
        lines.append(f"still running ({who} holds it): the figures count what is final so far")
    elif batch.stopped is not None and batch.stopped[0] != "done":
        lines.append(f"stopped: {batch.stopped[0]}: {batch.stopped[1]}")
    elif batch.stopped is None and batch.invocations:
        lines.append("its last runner ended without saying so (it was killed)")
    if batch.budget_stop:
        lines.append(batch.budget_stop)
    if batch.outstanding:
        named = ", ".join(f"{o.arm} {o.probe} {o.session} ({o.why})"
                          for o in batch.outstanding[:OUTSTANDING_SHOWN])
        more = len(batch.outstanding) - OUTSTANDING_SHOWN
        lines.append(f"outstanding: {len(batch.outstanding)} session(s): {named}"
                     + (f" and {more} more" if more > 0 else ""))
        if not batch.running:
            lines.append(f"finish them with: headwater-campaign resume {batch.path}")
    else:
        lines.append("every planned session is finished")
    lines.append(batch.provider_note)
    return lines
