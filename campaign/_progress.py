"""Progress of a batch: per-arm counters, shown live on a terminal, as plain lines elsewhere.

The supervisor hands each finished attempt to ``Progress.session_done``; the
display never reaches into the supervisor. Output goes to stderr so that
stdout keeps only the command's own result (the last line ``batch: PATH``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from recorder._vocab import is_refusal


@dataclass(slots=True)
class ArmCounts:
    """Counters of one arm: sessions planned, recorded, refused, failed, cost in USD."""

    planned: int = 0
    recorded: int = 0
    refused: int = 0
    failed: int = 0
    cost_usd: Decimal = Decimal(0)
    cost_unknown: int = 0

    @property
    def done(self) -> int:
        """Sessions that reached a final state."""
        return self.recorded + self.refused + self.failed


def arms_table(arms: dict[str, ArmCounts], *, title: str | None = None) -> Table:
    """The per-arm table (done/planned, recorded, refused, failed, cost in USD)."""
    table = Table(title=title)
    for col in ("arm", "done", "recorded", "refused", "failed", "cost (USD)"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for arm, c in arms.items():
        # An attempt of unknown cost makes the figure a lower bound: say so, never a bare 0.
        cost = f">= {c.cost_usd:.4f}" if c.cost_unknown else f"{c.cost_usd:.4f}"
        table.add_row(arm, f"{c.done}/{c.planned}", str(c.recorded), str(c.refused),
                      str(c.failed), cost)
    return table


class Progress:
    """Live per-arm progress; plain one-line-per-session output off a terminal."""

    def __init__(self, planned: Mapping[str, int], *, stream: TextIO | None = None) -> None:
        self.arms = {arm: ArmCounts(planned=n) for arm, n in planned.items()}
        self._console = Console(file=stream, stderr=stream is None)
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        if self._console.is_terminal:
            self._live = Live(arms_table(self.arms), console=self._console, refresh_per_second=4)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(arms_table(self.arms))
            self._live.__exit__(None, None, None)
            self._live = None

    def session_done(self, *, arm: str, probe: str, session: str, state: str, reason: str,
                     cost_usd: Decimal | None) -> None:
        """Count one finished attempt and show it."""
        c = self.arms.setdefault(arm, ArmCounts())
        if state == "recorded":
            c.recorded += 1
        elif is_refusal(state):
            c.refused += 1
        else:
            c.failed += 1
        if cost_usd is None:
            c.cost_unknown += 1
        else:
            c.cost_usd += cost_usd
        if self._live is not None:
            self._live.update(arms_table(self.arms))
        else:
            why = "" if state == "recorded" else f" ({reason})"
            done = sum(a.done for a in self.arms.values())
            planned = sum(a.planned for a in self.arms.values())
            self._console.print(
                f"[{done}/{planned}] {arm} {probe} {session}: {state}{why}",
                markup=False, highlight=False, soft_wrap=True,
            )
