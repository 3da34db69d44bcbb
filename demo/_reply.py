"""What one request of the scripted provider gets: a scripted turn with its served model, or
a fault (`demo._faults`); the server decides it, its HTTP side answers it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._scripts import Fault, Turn


class Reply:
    """What one request gets: a turn with its served model, or a fault."""

    __slots__ = ("fault", "model", "turn")

    def __init__(self, turn: Turn, model: str, fault: Fault | None = None) -> None:
        self.turn = turn
        self.model = model
        self.fault = fault

    @property
    def delay_s(self) -> float:
        """Seconds to wait before answering: the turn's ``delay_s``, none for a fault."""
        return 0.0 if self.fault is not None else self.turn.delay_s
