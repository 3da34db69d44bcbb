"""Session specs, resolved, and the batch's sessions in its order.

A `SessionSpec` carries everything a session needs of its probe and its arm
(the task, the declared answers, the allowed tools), taken once from the
plan: nothing downstream looks a probe up by id again. The order itself is
the plan's (`campaign.plan.batch_order`, docs/batch.md "Order").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from campaign.batch import SessionKey
from campaign.plan import batch_order

if TYPE_CHECKING:
    from campaign.plan import Plan, PlanArm, PlanProbe

@dataclass(frozen=True, slots=True)
class SessionSpec:
    """One session to run: the probe and arm as the plan states them, and its name."""

    probe: PlanProbe
    """The probe: id, task (the whole first turn, RC-04), declared answers (RC-13)."""
    arm: PlanArm
    """The arm: name, allowed tools (RC-04), identity."""
    repetition: int
    """1-based repetition; 0 for a session named by ``record``."""
    session: str
    """``s<repetition>`` for a batch, ``r<N>`` for ``record``: distinct within probe and arm."""
    position: int | None = None
    """0-based place in the batch order; None for ``record``."""

    @property
    def key(self) -> SessionKey:
        """(arm, probe, session)."""
        return SessionKey(self.arm.arm, self.probe.id, self.session)

    def __repr__(self) -> str:
        return f"<SessionSpec {self.arm.arm} {self.probe.id} {self.session} #{self.position}>"


def session_order(plan: Plan) -> Iterator[SessionSpec]:
    """Every session of ``plan`` in the batch order, lazily (`campaign.plan.ORDER_ALGORITHM`)."""
    for o in batch_order(plan):
        yield SessionSpec(probe=o.probe, arm=o.arm, repetition=o.repetition,
                          session=o.session, position=o.position)


def planned_sessions(plan: Plan) -> Iterator[tuple[SessionKey, int]]:
    """Each planned session's key and repetition (for the fold and the transcripts)."""
    for spec in session_order(plan):
        yield spec.key, spec.repetition
