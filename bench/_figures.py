"""The benches' common output: named figures, each with its target, printed as one table.

Each bench script that ``make bench`` runs writes its figures with ``--json FILE`` (the key
``figures``); bench/suite.py gathers them into one table and bench/RESULTS.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    """One measured figure and its target."""

    name: str
    value: float
    unit: str
    """``x`` for a ratio, else the unit (``ms``, ``MiB``, ...)."""
    target: str
    """The target in words (``>= 2.5``), or ``""`` when the figure has none."""
    met: bool | None
    """Whether the target is met; None when there is no target or no figure."""

    def shown(self) -> str:
        if math.isnan(self.value):
            return "n/a"
        return f"{self.value:.2f}{'x' if self.unit == 'x' else ' ' + self.unit}"


def at_least(name: str, value: float, bound: float, unit: str = "x") -> Figure:
    return Figure(name, value, unit, f">= {bound:g}", None if math.isnan(value)
                  else value >= bound)


def at_most(name: str, value: float, bound: float, unit: str = "x") -> Figure:
    return Figure(name, value, unit, f"<= {bound:g}", None if math.isnan(value)
                  else value <= bound)


def info(name: str, value: float, unit: str = "x") -> Figure:
    return Figure(name, value, unit, "", None)


def table(figures: list[Figure]) -> str:
    """The figures as a Markdown table: figure, measured, target, met."""
    lines = ["| figure | measured | target | met |", "|---|---:|---|---|"]
    for f in figures:
        met = "" if f.met is None else ("yes" if f.met else "**no**")
        lines.append(f"| {f.name} | {f.shown()} | {f.target} | {met} |")
    return "\n".join(lines)


def to_json(figures: list[Figure]) -> list[dict[str, Any]]:
    return [asdict(f) for f in figures]


def from_json(items: list[dict[str, Any]]) -> list[Figure]:
    return [Figure(**item) for item in items]
