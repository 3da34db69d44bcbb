"""The order a batch runs its sessions in (docs/batch.md, "Order").

Algorithm `ORDER_ALGORITHM`: repetition by repetition; within a repetition
the probes are shuffled, and each probe's arms are shuffled and run one
after the other. So both arms meet the same provider conditions over a night
(arms are interleaved, repetitions too), and a batch stopped early holds
comparable arms. The shuffles are Fisher-Yates draws from SHA-256 of the
seed, the repetition and what is shuffled, so the order is the same on every
machine and every Python for a given seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple, TypeVar

if TYPE_CHECKING:
    from ._plan import Plan, PlanArm, PlanProbe

ORDER_ALGORITHM: Final = "repetitions-in-turn, probes and arms shuffled by sha256(seed), v1"
"""Named in config.yaml so a reader can tell how a batch was ordered."""

_T = TypeVar("_T")


class Ordered(NamedTuple):
    """One planned session in the batch order: the plan's own probe and arm objects."""

    probe: PlanProbe
    arm: PlanArm
    repetition: int
    """1-based."""
    position: int
    """0-based place in the batch order."""

    @property
    def session(self) -> str:
        """The session's name within its probe and arm: ``s<repetition>`` (docs/batch.md)."""
        return f"s{self.repetition}"


def _shuffled(items: Sequence[_T], *, label: str) -> list[_T]:
    """Fisher-Yates over ``items``, each draw an integer from SHA-256 of ``label`` and the step."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        digest = hashlib.sha256(f"{label}:{i}".encode()).digest()
        j = int.from_bytes(digest, "big") % (i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def batch_order(plan: Plan) -> Iterator[Ordered]:
    """Every session of ``plan`` in the batch order, lazily (`ORDER_ALGORITHM`)."""
    position = 0
    for rep in range(1, plan.repetitions + 1):
        probes = _shuffled(plan.probes, label=f"{plan.seed}:{rep}:probes")
        for probe in probes:
            arms = _shuffled(plan.arm_specs, label=f"{plan.seed}:{rep}:{probe.id}:arms")
            for arm in arms:
                yield Ordered(probe, arm, rep, position)
                position += 1
