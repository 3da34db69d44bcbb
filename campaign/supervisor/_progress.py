"""What a running batch shows and how an invocation ended: the supervisor's values.

`LiveStatistics` is the snapshot a display (`View`, the CLI's live view) redraws
from, `InFlight` one attempt running now, and `BatchOutcome` how one invocation of
a batch ended (the CLI's exit status comes from it, docs/cli.md). Values only: the
supervisor (`campaign.supervisor._fanout`) makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from campaign.batch import BatchStatistics, FinalRecord, SessionKey, StopReason


@dataclass(frozen=True, slots=True)
class InFlight:
    """A session whose attempt is running now."""

    key: SessionKey
    attempt: int
    started_s: float
    """``time.monotonic()`` at its start."""


@dataclass(frozen=True, slots=True)
class LiveStatistics:
    """What the live view shows: the ledger's counts plus this invocation's running state."""

    batch: BatchStatistics
    in_flight: tuple[InFlight, ...]
    elapsed_s: float
    finals_now: int
    """Attempts that ended in this invocation."""
    retries_now: int
    """Retries started in this invocation."""
    outstanding: int
    stopping: str | None
    """Why no session starts any more (a signal, a budget), or None."""
    max_cost_cents: int | None
    max_wall_s: float | None

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this invocation's completion rate; None before any final."""
        if not self.finals_now or self.elapsed_s <= 0:
            return None
        return self.outstanding / (self.finals_now / self.elapsed_s)


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """How one invocation of a batch ended."""

    stop: StopReason
    detail: str
    signal: int | None
    """The signal that stopped it (SIGINT 2, SIGTERM 15), or None."""
    outstanding: int
    """Planned sessions not finished (``resume`` runs them)."""
    recorded: int
    """Sessions of the whole batch whose last attempt is recorded."""
    budget_stopped: bool = False
    """A budget stopped this invocation from starting sessions."""
    write_refused: bool = False
    """The host refused a write (disk full, quota, read-only)."""
    remedy: str = ""
    """For a refused write, what to do before ``resume`` (e.g. ``free space on ...``)."""
    login_failures: int = 0
    """Attempts of this invocation whose provider gateway could not use the host's login
    (each ended ``harness-error``, not retried)."""
    login_failure: str | None = None
    """The first of them's reason, as the gateway gave it (how to log in again)."""


class View(Protocol):
    """What the supervisor tells a display (the CLI's `LiveView`); called on the loop thread."""

    def update(self, live: LiveStatistics, now_s: float) -> None:
        """Redraw from a snapshot."""

    def attempt_ended(self, record: FinalRecord, live: LiveStatistics) -> None:
        """An attempt ended in ``record.state``."""

    def note(self, text: str) -> None:
        """A notice: a retry's wait, a budget, a signal."""


class NoView:
    """A `View` that shows nothing (a supervisor given no view)."""

    def update(self, live: LiveStatistics, now_s: float) -> None:
        pass

    def attempt_ended(self, record: FinalRecord, live: LiveStatistics) -> None:
        pass

    def note(self, text: str) -> None:
        pass
