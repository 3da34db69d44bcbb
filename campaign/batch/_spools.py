"""The item spools of a batch's arms, one per arm, made on first use (RC-15, RC-16).

Each recorded event goes from its final record to its arm's `ItemSpool` once:
dumped, proved and kept on disk, so neither the ledger nor memory is asked
for it again. The journal's renders hand the pending events over as they
write (`write_streamed` spools what its spool lacks); a ledger replay hands
them over right after each record (`ArmSpools.take`), so a replay of a large
batch holds no events in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from recorder.transcript import ItemSpool

from ._dir import transcript_path

if TYPE_CHECKING:
    from pathlib import Path

    from ._builder import ArmTranscript


@final
class ArmSpools:
    """Per arm of one batch, the `ItemSpool` of its transcript's event items.

    Args:
        batch: The batch directory (each spool's unnamed file lives beside the arm's
            transcript, in ``transcripts/``, made when missing).

    Not thread-safe: one thread at a time (the journal's, or a render's worker).

    Raises:
        OSError: a spool's file cannot be made (`spool`, `take`) or written (`take`).
    """

    def __init__(self, batch: Path) -> None:
        self._batch = batch
        self._spools: dict[str, ItemSpool] = {}

    def spool(self, arm: str) -> ItemSpool:
        """The spool of ``arm``, made on first use."""
        spool = self._spools.get(arm)
        if spool is None:
            directory = transcript_path(self._batch, arm).parent
            directory.mkdir(parents=True, exist_ok=True)
            spool = self._spools[arm] = ItemSpool(directory)
        return spool

    def take(self, builder: ArmTranscript) -> None:
        """Spool every event ``builder`` holds pending, and tell it so.

        Raises:
            TranscriptUnproven: an item does not read back as its event (a bug).
            OSError: the host refused the write; the events not spooled stay pending.
        """
        if not builder.pending:
            return
        spool = self.spool(builder.arm)
        taken = []
        try:
            for ref, event in builder.pending.items():
                spool.add(ref, event)
                taken.append(ref)
        finally:
            builder.spooled(taken)

    def close(self) -> None:
        """Close every spool (their files go); idempotent."""
        for spool in self._spools.values():
            spool.close()
        self._spools.clear()
