"""What the ledger's records make, one record at a time: the fold and the arms' transcripts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._builder import ArmTranscript
from ._records import FinalRecord, RederivedRecord, RequestRecord, StartedRecord

if TYPE_CHECKING:
    from collections.abc import Iterable

    from campaign.plan import Plan

    from ._fold import BatchFold, SessionKey
    from ._records import LedgerRecord


class Projection:
    """What the ledger's records make, fed one at a time: the fold and the arms' transcripts.

    The one place a record reaches the fold and the per-arm builders, both when a batch is
    read (`campaign.batch._reader.read_batch`) and when a journal appends.

    Args:
        fold: The fold (its planned sessions given).
        arms: Per arm, its transcript builder; empty when only the fold is wanted.
    """

    def __init__(self, fold: BatchFold, arms: dict[str, ArmTranscript]) -> None:
        self.fold = fold
        self.arms = arms

    def apply(self, record: LedgerRecord, offset: int) -> list[tuple[SessionKey, int]]:
        """Fold the record written at byte ``offset`` and hand it to its arm's transcript.

        Returns:
            The (session, attempt) pairs it shows to be interrupted (`BatchFold.apply`).
        """
        gone = self.fold.apply(record)
        self._interrupted(gone)
        if isinstance(record, StartedRecord | FinalRecord | RederivedRecord | RequestRecord):
            arm = self.arms.get(record.arm)
            if arm is None:
                return gone
            if isinstance(record, StartedRecord):
                arm.started(record, self.fold.key_of(record))
            elif isinstance(record, RequestRecord):
                arm.request(record, self.fold.key_of(record))
            elif isinstance(record, FinalRecord):
                arm.final(record, offset, self.fold.key_of(record))
            else:
                arm.rederived(record, offset)
        return gone

    def runner_gone(self) -> list[tuple[SessionKey, int]]:
        """No runner holds the batch: `BatchFold.runner_gone`, told to the transcripts too."""
        gone = self.fold.runner_gone()
        self._interrupted(gone)
        return gone

    def _interrupted(self, gone: list[tuple[SessionKey, int]]) -> None:
        for key, attempt in gone:
            interrupted = self.arms.get(key.arm)
            if interrupted is not None:
                interrupted.interrupted(key, attempt, self.fold.interrupted_usd(key, attempt))


def arm_transcripts(plan: Plan, *, planned: Iterable[SessionKey], network: str,
                    provider_note: str,
                    workspace_note: str | None = None) -> dict[str, ArmTranscript]:
    """One empty `ArmTranscript` per arm of ``plan`` (`Journal`'s arguments)."""
    keys = list(planned)
    return {arm: ArmTranscript(plan, arm, network=network,
                               provider_note=provider_note, planned=keys,
                               workspace_note=workspace_note)
            for arm in plan.arms}
