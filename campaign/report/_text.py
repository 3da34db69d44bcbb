"""The report's figures as text: one set of rows that the terminal and the page both show.

`probe_rows` and `arm_rows` lay a probe's cells (or the columns' summaries)
out as labelled rows of strings, one string per column; `standing_lines`
says how each batch stands. The terminal tables and the HTML tables are
both drawn from these rows, so the two show the same figures, written the
same way: a share is ``k/n 87.5% [52.9, 97.8]`` (the 95% Wilson interval in
percent), a difference ``+12.5 [-20.1, 40.3]`` in percentage points with
``*`` when its 95% interval excludes 0, calls ``median (q1-q3)``, costs in
cents, a verdict count ``5 satisfied, 2 unsatisfied, 1 not observed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Mapping

    from campaign.stats import Interval, Quartiles

    from ._model import (
        AnswerShare,
        BatchStanding,
        Cell,
        Cost,
        Count,
        Difference,
        Graded,
        ProbeFigures,
        Report,
        VerdictCounts,
    )

MARK: Final = "*"
"""Follows a difference whose 95% interval excludes 0."""
MARK_NOTE: Final = f"{MARK} the 95% interval of the difference excludes 0"
SHARES_NOTE: Final = (
    "In the tables per probe: the share of an answer is a count of the recorded sessions (those "
    "whose answer is null among them), the percent and "
    "[the 95% Wilson interval]; differences are in percentage points against the reference "
    "column, [95% Newcombe interval]; verdicts count the recorded sessions")
"""Said once, above the tables per probe (it held for every one of them)."""
NONE_RECORDED: Final = "none recorded"
"""A graded cell with no recorded session: no share (its sessions are apart, by state)."""
PRODUCED_SHOWN: Final = 10
"""Produced paths, cited ids and findings named per probe in the terminal and on the page."""
OUTSTANDING_SHOWN: Final = 20
"""Outstanding sessions named per batch in the terminal and on the page (JSON names all)."""
LAYOUTS: Final = {
    "single": "one batch",
    "merged": "{n} batches merged: their plan members and arms agree",
    "side-by-side": "{n} batches side by side: columns are numbered by batch (1:present is the "
                    "first batch's present), each compared within its own batch",
}
RowKind: TypeAlias = Literal["count", "answer", "difference", "calls", "read", "outside", "cost",
                             "summary", "graded", "ungraded", "verdict", "produced"]


@dataclass(frozen=True, slots=True)
class Row:
    """One labelled row of a table: a string per column, and which of them to set apart."""

    label: str
    values: tuple[str, ...]
    kind: RowKind
    marked: tuple[bool, ...] = ()
    """Per value: a difference whose interval excludes 0 (drawn bold)."""
    tones: tuple[str, ...] = ()
    """Per value: ``higher``, ``lower`` or empty (the summary's colours, `_summary`)."""


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
    """``>=12.4c (2 attempts of unknown cost)``, or ``12.4c`` (`cents_text`); requests priced
    as unknown are named with their models: ``>=3c (4 unpriced request(s): claude-x)``."""
    if not cost.lower_bound:
        return cents_text(cost.tenths)
    why = []
    if cost.unknown_attempts:
        why.append(f"{cost.unknown_attempts} attempt(s) of unknown cost")
    if cost.unpriced_requests:
        models = f": {', '.join(cost.unpriced_models)}" if cost.unpriced_models else ""
        why.append(f"{cost.unpriced_requests} unpriced request(s){models}")
    return f">={cents_text(cost.tenths)} ({'; '.join(why)})"


def prompts_text(digests: Mapping[str, int], sessions: int) -> str:
    """The system prompts a column's recorded sessions met (the gateway's digests, most met
    first): ``same for all 12`` when every one met the same; ``2 distinct over 12:
    sha256:0123456789ab (11), sha256:ba9876543210 (1)`` (each digest cut to its first
    `DIGEST_SHOWN` hex digits) otherwise; ``-`` when none went through the gateway."""
    if not sessions or not digests:
        return "-"
    if all(n == sessions for n in digests.values()):
        kinds = "" if len(digests) == 1 else f" ({len(digests)} prompts each)"
        return f"same for all {sessions}{kinds}"
    listed = ", ".join(f"{_short_digest(d)} ({n})" for d, n in digests.items())
    return f"{len(digests)} distinct over {sessions}: {listed}"


DIGEST_SHOWN: Final = 12
"""Hex digits of a system-prompt digest the report's tables show (the JSON has them whole)."""


def _short_digest(digest: str) -> str:
    algorithm, _, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:DIGEST_SHOWN]}" if hexdigits else digest[:DIGEST_SHOWN]


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
    rows += verdict_rows(probe)
    rows.append(Row("calls per session", tuple(calls_text(c.calls) for c in cells), "calls"))
    for i, path in enumerate(probe.examines):
        rows.append(Row(f"read {path}", tuple(
            f"{c.reads[i].sessions}/{c.reads[i].of} {percent(c.reads[i].share)}"
            if c.reads[i].of else "-" for c in cells), "read"))
    rows.append(Row("outside paths", tuple(
        f"{c.outside_paths} ({c.outside_path_sessions} of {c.final} sessions)" for c in cells),
        "outside"))
    rows += produced_rows(cells)
    rows.append(Row("cost per recorded", tuple(cost_text(c.cost) for c in cells), "cost"))
    return rows


def graded_text(graded: Graded | None) -> str:
    """A graded cell: ``5/8 62.5% [30.6, 86.3]``, then against the reference ``+37.5 [3.1,
    63.4] higher`` (the word when the difference's 95% interval excludes 0: ``higher`` or
    ``lower``), then ``, 1 not observed`` when some are; ``none recorded`` with no recorded
    session; ``-`` for no grade."""
    if graded is None:
        return "-"
    if graded.share is None:
        return NONE_RECORDED
    text = (f"{graded.satisfied}/{graded.recorded} {percent(graded.share)} "
            f"{interval_text(graded.interval)}")
    if graded.difference is not None:
        text += (f" {graded.difference * 100:+.1f} "
                 f"{interval_text(graded.difference_interval, signed=True)}")
        if graded.direction != "unclear":
            text += f" {graded.direction}"
        if graded.unconfirmed and graded.fisher_p is not None:
            text += f" (Fisher p {graded.fisher_p:.2g}: unconfirmed)"
    if graded.not_observed:
        text += f", {graded.not_observed} not observed"
    return text


def expectation_label(key: str, target: str | None) -> str:
    """``expect answered "alpha"``, ``expect opened docs/a.md``, ``expect clean``."""
    if target is None:
        return f"expect {key}"
    return f"expect {key} {answer_label(target) if key == 'answered' else target}"


def expectations_line(probe: ProbeFigures) -> str:
    """``expects: answered "alpha"; opened docs/a.md``, or that it declares none."""
    if not probe.graded:
        return "expects: nothing declared (ungraded: the summary shows its most frequent answer)"
    return "expects: " + "; ".join(expectation_label(key, target).removeprefix("expect ")
                                   for key, target in probe.expectations)


def verdicts_text(counts: VerdictCounts) -> str:
    """``5 satisfied, 2 unsatisfied, 1 not observed`` (every part, zeros too)."""
    return (f"{counts.satisfied} satisfied, {counts.unsatisfied} unsatisfied, "
            f"{counts.not_observed} not observed")


def verdict_rows(probe: ProbeFigures) -> list[Row]:
    """A graded probe's verdict rows: the satisfied share (`graded_text`), the sessions
    outside the denominator when some column has one, one row per expectation."""
    if not probe.graded:
        return []
    cells = probe.cells
    rows = [Row("satisfied", tuple(graded_text(c.graded) for c in cells), "verdict")]
    if any(c.graded is not None and c.graded.apart for c in cells):
        rows.append(Row("not in the denominator", tuple(
            counts_text(c.graded.apart) if c.graded is not None else "-" for c in cells),
            "verdict"))
    for row in probe.verdicts:
        rows.append(Row(expectation_label(row.key, row.target),
                        tuple(verdicts_text(v) for v in row.counts), "verdict"))
    return rows


def produced_rows(cells: tuple[Cell, ...]) -> list[Row]:
    """What the sessions produced: the watched sessions, then per path, cited id and rule the
    sessions of each column (the `PRODUCED_SHOWN` most frequent of each, then how many
    others), and how many were checked clean or not checked."""
    watched = [c.produced.watched for c in cells]
    rows = [Row("produced: sessions watched", tuple(str(w) for w in watched), "produced")]
    for what, counts in (("produced", [c.produced.paths for c in cells]),
                         ("cites", [c.produced.cites for c in cells]),
                         ("finding", [c.produced.findings for c in cells])):
        per_column = [{n.value: n.sessions for n in column} for column in counts]
        rows += _count_rows(what, counts, per_column, watched)
    if any(c.produced.clean or c.produced.findings for c in cells):
        rows.append(Row("checked clean", tuple(_of(c.produced.clean, w)
                                               for c, w in zip(cells, watched, strict=True)),
                        "produced"))
    if any(c.produced.unchecked for c in cells):
        rows.append(Row("not checked", tuple(_of(c.produced.unchecked, w)
                                             for c, w in zip(cells, watched, strict=True)),
                        "produced"))
    return rows


def _count_rows(what: str, counts: list[tuple[Count, ...]], per_column: list[dict[str, int]],
                watched: list[int]) -> list[Row]:
    totals: dict[str, int] = {}
    for column in counts:
        for count in column:
            totals[count.value] = totals.get(count.value, 0) + count.sessions
    ranked = sorted(totals, key=lambda v: (-totals[v], v))
    rows = [Row(f"{what} {value}", tuple(_of(col.get(value, 0), w)
                                         for col, w in zip(per_column, watched, strict=True)),
                "produced") for value in ranked[:PRODUCED_SHOWN]]
    rest = ranked[PRODUCED_SHOWN:]
    if rest:
        rows.append(Row(f"{what}: {len(rest)} more", tuple(
            str(sum(1 for v in rest if v in col)) for col in per_column), "produced"))
    return rows


def _of(count: int, watched: int) -> str:
    return f"{count}/{watched}" if watched else "-"


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
    rows = [
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
    if any(a.system_prompt_sessions for a in arms):  # a batch written before the gateway: none
        rows.append(Row("system prompts", tuple(
            prompts_text(a.system_prompts, a.system_prompt_sessions) for a in arms), "summary"))
    return rows


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
            lines.append(f"finish them with: {batch.resume}")
    else:
        lines.append("every planned session is finished")
    lines.append(batch.provider_note)
    return lines
