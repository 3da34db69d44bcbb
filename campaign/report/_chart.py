"""The page's chart of one probe: its answer distribution per column, as SVG geometry. Pure.

`answer_chart` lays out grouped horizontal bars: one group per answer (each
declared answer, then null), one bar per column inside it, its length the
answer's share of the column's answered sessions, a whisker over its 95%
Wilson interval, and ``k/n share`` at the right; a share of exactly 0 draws
no bar but a thin line at 0 in the column's colour (a baseline). Columns keep one colour
(a colour-blind-safe palette, Okabe and Ito) across every chart and in the
legend. The template only draws what this returns; no script is involved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._text import answer_label, percent

if TYPE_CHECKING:
    from ._model import AnswerShare, ProbeFigures

PALETTE: Final = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000")
"""Okabe-Ito colours, one per column, in column order (cycled beyond seven)."""
LABEL_W: Final = 210
"""Width of the answer labels at the left, px."""
PLOT_W: Final = 420
"""Width of 0-100%, px."""
VALUE_W: Final = 120
"""Width of the ``k/n share`` labels at the right, px."""
BAR_H: Final = 18
GROUP_GAP: Final = 14
LEGEND_H: Final = 28
AXIS_H: Final = 24
LABEL_CHARS: Final = 30
"""An answer label longer than this is cut (the full text is the label's tooltip)."""


def colour(index: int) -> str:
    """The colour of the ``index``-th column."""
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True, slots=True)
class Bar:
    """One column's bar in one answer group; coordinates in px from the chart's top left."""

    x: float
    y: float
    width: float
    height: float
    colour: str
    whisker: tuple[float, float] | None
    """The interval's ends (x, px), drawn at the bar's middle; None without an interval."""
    value: str
    """``7/8 87.5%``, or ``-``."""
    title: str
    """The tooltip: column, answer, count, share and interval."""
    baseline: bool = False
    """A share of exactly 0: no bar but a thin upright line at 0 in the column's colour, so
    a zero reads as a zero (the whisker alone looked like an empty bar)."""


@dataclass(frozen=True, slots=True)
class Group:
    """One answer's label and where its bars start."""

    label: str
    title: str
    y: float
    height: float


@dataclass(frozen=True, slots=True)
class Chart:
    """Everything the template draws for one probe's chart."""

    id: str
    width: int
    height: int
    title: str
    legend: tuple[tuple[float, str, str], ...]
    """(x, colour, column label) per column, on one line at the top."""
    groups: tuple[Group, ...]
    bars: tuple[Bar, ...]
    ticks: tuple[tuple[float, str], ...]
    """(x, label) of the 0, 25, 50, 75 and 100% grid lines."""
    plot_top: float
    plot_bottom: float
    label_x: float
    """Where the answer labels end (they are right-aligned there)."""
    value_x: float
    """Where the ``k/n share`` labels start."""


def answer_chart(probe: ProbeFigures, labels: list[str], *, index: int) -> Chart:
    """The chart of ``probe``'s answers, one bar per column (``labels`` in column order).

    Args:
        probe: The probe's figures.
        labels: The columns' headings, in column order.
        index: The probe's place on the page (makes the chart's id unique).
    """
    answers = probe.cells[0].answers if probe.cells else ()
    columns = len(probe.cells)
    group_h = columns * BAR_H
    top = float(LEGEND_H)
    groups, bars = [], []
    for g, share in enumerate(answers):
        y0 = top + g * (group_h + GROUP_GAP)
        label = answer_label(share.answer)
        short = label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "\u2026"
        groups.append(Group(label=short, title=label, y=y0, height=group_h))
        for c, cell in enumerate(probe.cells):
            bars.append(_bar(cell.answers[g], cell.answered, y0 + c * BAR_H, colour(c),
                             f"{labels[c]}: {label}"))
    bottom = top + len(answers) * (group_h + GROUP_GAP) - GROUP_GAP
    legend, x = [], float(LABEL_W)
    for c, text in enumerate(labels):
        legend.append((x, colour(c), text))
        x += 24 + 8 * len(text)
    ticks = tuple((LABEL_W + PLOT_W * q / 4, f"{25 * q}%") for q in range(5))
    return Chart(id=f"chart-{index}", width=LABEL_W + PLOT_W + VALUE_W,
                 height=int(bottom + AXIS_H), title=f"{probe.id}: answers per arm",
                 legend=tuple(legend), groups=tuple(groups), bars=tuple(bars), ticks=ticks,
                 plot_top=top, plot_bottom=bottom, label_x=LABEL_W - 10,
                 value_x=LABEL_W + PLOT_W + 10)


def _bar(share: AnswerShare, of: int, y: float, fill: str, what: str) -> Bar:
    fraction = share.share or 0.0
    whisker = None
    if share.interval is not None:
        whisker = (LABEL_W + PLOT_W * share.interval.low, LABEL_W + PLOT_W * share.interval.high)
    value = "-" if share.share is None else f"{share.count}/{of} {percent(share.share)}"
    interval = ("" if share.interval is None else
                f", 95% interval {percent(share.interval.low)} to {percent(share.interval.high)}")
    return Bar(x=LABEL_W, y=y + 2, width=PLOT_W * fraction, height=BAR_H - 4, colour=fill,
               whisker=whisker, value=value, title=f"{what}: {value}{interval}",
               baseline=share.share == 0)
