"""How a batch looks while it runs and afterwards: a rich live view, or plain log lines.

On a terminal, `LiveView` redraws (on the event loop's thread, from
`LiveStatistics` snapshots) a table per arm: queued, running, interrupted,
recorded out of planned, refused, failed, retried and spend, with the budget; the sessions in
flight with their elapsed time; the last failures with state and reason; the
completion rate and an estimate of the time left. Off a terminal it prints one
line per attempt that ends and one per notice. Every denominator is the
planned count. ``status`` prints the same tables (`batch_tables`) once.
Everything goes to stderr: stdout keeps the command's result.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Final, TextIO

from rich import box
from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from campaign._terminal_text import block, cell, one_line

from ._console import StderrConsole

if TYPE_CHECKING:
    from rich.console import RenderableType

    from campaign.batch import ArmCounts, BatchStatistics, Failure, FinalRecord
    from campaign.supervisor import InFlight, LiveStatistics

IN_FLIGHT_SHOWN: Final = 8
"""Sessions in flight listed by name; the rest are counted."""
REASON_CHARS: Final = 100
"""Characters of a failure's reason shown in the live view (the ledger keeps it whole)."""


def usd(amount: Decimal, *, lower_bound: bool) -> str:
    """``$0.1234``; ``>= $0.1234`` when some attempt's cost is unknown or a provider request
    was priced as unknown (a lower bound)."""
    text = f"${amount:.4f}"
    return f">= {text}" if lower_bound else text


def duration(seconds: float | None) -> str:
    """``1h02m``, ``4m05s`` or ``12s``; ``-`` for unknown."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def arms_table(arms: dict[str, ArmCounts], *, title: str | None = None) -> Table:
    """One row per arm; every count out of the arm's planned sessions.

    ``interrupted``: sessions whose last attempt started and never got a final record of
    its own (its runner died or stopped it) and that have no earlier one; ``queued`` is the
    planned sessions never started (docs/batch.md, "status"); the planned count is the
    denominator of ``recorded`` (``k/planned``). Columns one space apart, no vertical rules,
    ``interrupted``'s header on two lines: nine columns of four-digit counts, a 12-character
    arm and a lower-bound spend fit an 80-column terminal (with rules rich cut every header
    short).
    """
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0), show_edge=False)
    columns = ("arm", "queued", "running", "inter-\nrupted", "recorded", "refused",
               "failed", "retried", "spend")
    for col in columns:
        table.add_column(col, justify="left" if col == "arm" else "right")
    for arm, c in sorted(arms.items()):
        table.add_row(cell(arm), str(c.queued), str(c.running), str(c.interrupted),
                      f"{c.recorded}/{c.planned}", str(c.refused), str(c.failed), str(c.retried),
                      usd(c.cost_usd, lower_bound=c.lower_bound))
    return table


def budget_line(stats: BatchStatistics, max_cost_cents: int | None, *,
                set_by: str | None = None) -> str:
    """The batch's spend (USD), and its budget when it has one: in USD beside the option
    that set it in cents (``--max-cost-cents N``), so the figure a user typed is on the
    line; ``set_by`` (e.g. ``set by resume, invocation 2``) follows it."""
    spend = usd(stats.spend_usd, lower_bound=stats.lower_bound)
    if max_cost_cents is None:
        return f"spend {spend} (no cost budget)"
    given = f"--max-cost-cents {max_cost_cents}" + (f"; {set_by}" if set_by else "")
    return f"spend {spend} of a ${Decimal(max_cost_cents) / 100:.2f} budget ({given})"


def failures_table(failures: tuple[Failure, ...]) -> Table | None:
    """The last failed or refused attempts with state and reason; None when there are none."""
    if not failures:
        return None
    table = Table(title="last failures", show_header=True)
    for col in ("arm", "probe", "session", "attempt", "state", "reason"):
        table.add_column(col)
    for f in failures:
        reason = f.reason if len(f.reason) <= REASON_CHARS else f.reason[:REASON_CHARS] + "..."
        table.add_row(cell(f.key.arm), cell(f.key.probe), cell(f.key.session),
                      str(f.attempt), cell(f.state), cell(reason))
    return table


def in_flight_table(flights: tuple[InFlight, ...], now_s: float) -> Table | None:
    """The sessions running now with their elapsed time; None when none runs."""
    if not flights:
        return None
    table = Table(title=f"in flight ({len(flights)})")
    for col in ("arm", "probe", "session", "attempt", "elapsed"):
        table.add_column(col)
    for f in sorted(flights, key=lambda f: f.started_s)[:IN_FLIGHT_SHOWN]:
        table.add_row(cell(f.key.arm), cell(f.key.probe), cell(f.key.session),
                      str(f.attempt), duration(now_s - f.started_s))
    if len(flights) > IN_FLIGHT_SHOWN:
        table.caption = f"and {len(flights) - IN_FLIGHT_SHOWN} more"
    return table


def progress_line(live: LiveStatistics) -> str:
    """Elapsed, completion rate, time left, retries; and on a line of its own why no session
    starts (if so)."""
    rate = (f"{live.finals_now / live.elapsed_s * 60:.1f}/min" if live.elapsed_s > 0
            else "-")
    parts = [f"elapsed {duration(live.elapsed_s)}", f"rate {rate}",
             f"outstanding {live.outstanding}", f"left ~{duration(live.eta_s)}",
             f"retries {live.retries_now}"]
    if live.max_wall_s is not None:
        parts.append(f"wall budget {duration(live.max_wall_s)}")
    line = " | ".join(parts)
    if live.stopping:  # a line of its own: it is what the user must read, and it is long
        line += f"\nstopping: {one_line(live.stopping)}"
    return line


def live_renderable(live: LiveStatistics, now_s: float) -> RenderableType:
    """Everything the live view shows, for one snapshot."""
    parts: list[RenderableType] = [
        arms_table(live.batch.arms),
        Text(budget_line(live.batch, live.max_cost_cents)),
        Text(progress_line(live)),
    ]
    for table in (in_flight_table(live.in_flight, now_s),
                  failures_table(live.batch.last_failures)):
        if table is not None:
            parts.append(table)
    return Group(*parts)


class LiveView:
    """The batch's view while it runs: rich live on a terminal, plain lines elsewhere.

    The supervisor calls `update`, `attempt_ended` and `note` on the event
    loop's thread; nothing here reaches into the supervisor.
    """

    def __init__(self, *, stream: TextIO | None = None, force_plain: bool = False) -> None:
        self._console = StderrConsole(file=stream)
        self._plain = force_plain or not self._console.is_terminal
        self._live: Live | None = None

    def __enter__(self) -> LiveView:
        if not self._plain:
            self._live = Live(console=self._console, auto_refresh=False, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def update(self, live: LiveStatistics, now_s: float) -> None:
        """Redraw from a snapshot (terminal only)."""
        if self._live is not None:
            self._live.update(live_renderable(live, now_s), refresh=True)

    def attempt_ended(self, record: FinalRecord, live: LiveStatistics) -> None:
        """An attempt ended: off a terminal, one line naming it, its state and why."""
        if self._live is not None:
            return
        final = sum(c.final for c in live.batch.arms.values())
        planned = sum(c.planned for c in live.batch.arms.values())
        why = "" if record.state == "recorded" else f" ({record.reason})"
        self._console.print(one_line(
            f"[{final}/{planned}] {record.arm} {record.probe} {record.session} "
            f"attempt {record.attempt}: {record.state}{why}"), markup=False, soft_wrap=True)

    def note(self, text: str) -> None:
        """A notice (a retry's wait, a budget, a signal): printed above the live view, its
        lines as `block` writes them (a notice may quote a reason)."""
        self._console.print(block(text), markup=False, soft_wrap=True)
