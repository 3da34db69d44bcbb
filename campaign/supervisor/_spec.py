"""Session specs, resolved, and the order a batch runs them in.

A `SessionSpec` carries everything a session needs of its probe and its arm
(the task, the declared answers, the allowed tools), taken once from the
plan: nothing downstream looks a probe up by id again.

The order (docs/batch.md, "Order"), algorithm `ORDER_ALGORITHM`: repetition
by repetition; within a repetition the probes are shuffled, and each probe's
arms are shuffled and run one after the other. So both arms meet the same
provider conditions over a night (arms are interleaved, repetitions too), and
a batch stopped early holds comparable arms. The shuffles are Fisher-Yates
draws from SHA-256 of the seed, the repetition and what is shuffled, so the
order is the same on every machine and every Python for a given seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

from campaign.batch import SessionKey

if TYPE_CHECKING:
    from campaign._plan import Plan, PlanArm, PlanProbe

ORDER_ALGORITHM: Final = "repetitions-in-turn, probes and arms shuffled by sha256(seed), v1"
"""Named in config.yaml so a reader can tell how a batch was ordered."""

_T = TypeVar("_T")


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


def _shuffled(items: Sequence[_T], *, label: str) -> list[_T]:
    """Fisher-Yates over ``items``, each draw an integer from SHA-256 of ``label`` and the step."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        digest = hashlib.sha256(f"{label}:{i}".encode()).digest()
        j = int.from_bytes(digest, "big") % (i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def session_order(plan: Plan) -> Iterator[SessionSpec]:
    """Every session of ``plan`` in the batch order, lazily (`ORDER_ALGORITHM`)."""
    position = 0
    for rep in range(1, plan.repetitions + 1):
        probes = _shuffled(plan.probes, label=f"{plan.seed}:{rep}:probes")
        for probe in probes:
            arms = _shuffled(plan.arm_specs, label=f"{plan.seed}:{rep}:{probe.id}:arms")
            for arm in arms:
                yield SessionSpec(probe=probe, arm=arm, repetition=rep, session=f"s{rep}",
                                  position=position)
                position += 1


def planned_sessions(plan: Plan) -> Iterator[tuple[SessionKey, int]]:
    """Each planned session's key and repetition (for the fold and the transcripts)."""
    for spec in session_order(plan):
        yield spec.key, spec.repetition
