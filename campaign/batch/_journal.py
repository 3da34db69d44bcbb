"""The journal: every ledger append also folded and handed to the arms' transcripts.

One place writes the ledger during a batch: `Journal.record`. It appends the
record (fsync in a worker thread, shielded: a record asked for is written
whole even while the batch is being cancelled), then, on the event loop's
thread, folds it (`BatchFold`) and hands ``started``/``final`` records to their
arm's `ArmTranscript`. `Journal.render` writes the arms whose transcripts
changed, each built and written in a worker thread (`write_streamed` renders
a row at a time, proves by reading the file back, and replaces it atomically).
What stays in memory per session is the fold's and the builders' few facts;
a recorded event is handed from its final record to the arm's `ItemSpool`
(on disk) by the next render, and the ledger is never read back for it.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

import anyio

from recorder.transcript import write_streamed

from ._dir import transcript_path
from ._fold import BatchFold
from ._ledger import LEDGER_NAME, Ledger
from ._projection import Projection, arm_transcripts
from ._reader import replay_ledger
from ._spools import ArmSpools

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

    from pydantic import BaseModel

    from campaign.plan import Plan
    from recorder.transcript import ItemSpool

    from ._builder import ArmTranscript, FrozenArm
    from ._fold import SessionKey
    from ._reader import BatchReading
    from ._records import LedgerRecord


class Journal:
    """The ledger, its fold and the per-arm transcript builders of one open batch.

    Args:
        batch: The batch directory.
        plan: Its plan.
        planned: The planned sessions with their repetitions (``record`` passes none).
        network: The batch's network mode (for arms whose sessions carry none).
        provider_note: The sentence on the provider, for every transcript's prose.
        workspace_note: The sentence on where the sessions saw their workspace
            (`campaign.batch._config.workspace_note`), or None.
        reading: The batch as the caller read it with its transcripts (`read_batch`,
            ``transcripts=True``, with these arguments): when the ledger is still the one it
            read, the journal goes on from its fold and transcripts instead of reading the
            ledger again (the caller holds the batch's lock, so nothing is appended between),
            and takes over its spools (closing the journal closes them).

    Raises:
        OSError: the ledger cannot be opened or its torn tail set aside.
        LedgerCorrupt: the existing ledger holds a line the runner did not write.
    """

    def __init__(self, batch: Path, plan: Plan, *, planned: Iterable[tuple[SessionKey, int]],
                 network: str, provider_note: str, workspace_note: str | None = None,
                 reading: BatchReading | None = None) -> None:
        self.batch = batch
        planned = tuple(planned)
        self.ledger = Ledger(batch / LEDGER_NAME)
        self.last_render_s = 0.0
        """Seconds the last `render` took (the supervisor spaces renders by it)."""
        self.behind: set[str] = set()
        """Arms whose transcript file lags the ledger: its last write failed (disk full)."""
        if (reading is not None and reading.spools is not None
                and reading.continues(self.ledger.complete_bytes, plan, planned)):
            self._projection = reading.projection
            self._spools = reading.spools
        else:
            self._projection = Projection(BatchFold(planned), arm_transcripts(
                plan, planned=(key for key, _ in planned), network=network,
                provider_note=provider_note, workspace_note=workspace_note))
            self._spools = ArmSpools(batch)
            try:
                replay_ledger(self.ledger.path, self._projection, spools=self._spools)
            except BaseException:
                self._spools.close()
                self.ledger.close()
                raise
        """Per arm, the proved items of its recorded events by reference: a render proves
        only the events that arrived since the last."""
        self.fold: BatchFold = self._projection.fold
        self.arms: dict[str, ArmTranscript] = self._projection.arms

    def _apply(self, record: LedgerRecord, offset: int) -> None:
        self._projection.apply(record, offset)

    async def record(self, record: BaseModel) -> None:
        """Append ``record`` to the ledger (durable when this returns), then fold it.

        Raises:
            OSError: the host refused the write; the ledger is as before the call.
        """
        offset = await self.ledger.aappend(record)
        self._apply(record, offset)  # type: ignore[arg-type]

    def record_now(self, record: BaseModel) -> None:
        """`record` without leaving this thread (for code that may not await)."""
        offset = self.ledger.append(record)
        self._apply(record, offset)  # type: ignore[arg-type]

    def _frozen(self, arms: Iterable[str] | None) -> list[FrozenArm]:
        outstanding: dict[str, int] = dict.fromkeys(self.arms, 0)
        for log in self.fold.outstanding():
            arm = self.arms.get(log.key.arm)
            if arm is not None and log.planned:
                outstanding[log.key.arm] += 1
        chosen = list(self.arms) if arms is None else list(arms)
        frozen = []
        for name in chosen:
            builder = self.arms[name]
            builder.set_outstanding(outstanding[name])
            if builder.dirty or arms is not None:
                frozen.append(builder.freeze())
        return frozen

    async def render(self, arms: Iterable[str] | None = None) -> None:
        """Write the transcripts of the arms that changed (or of ``arms``), off the event loop.

        Shielded: a render that began finishes, so transcripts match the ledger
        even when the batch is being cancelled.

        Raises:
            OSError: the host refused the write (the old transcript stays).
        """
        frozen = self._frozen(arms)
        started = time.monotonic()
        with anyio.CancelScope(shield=True):
            for arm in frozen:
                with self._writing(arm):
                    spool = self._spools.spool(arm.arm)
                    await anyio.to_thread.run_sync(_write, self.batch, arm, spool)
        self.last_render_s = time.monotonic() - started

    @contextlib.contextmanager
    def _writing(self, arm: FrozenArm) -> Iterator[None]:
        """Keep `behind` true: an arm whose write failed is behind its ledger until one
        succeeds; one that succeeded spooled the events it was given."""
        try:
            yield
        except BaseException:
            self.behind.add(arm.arm)
            self.arms[arm.arm].dirty = True  # the next render tries it again
            raise
        self.behind.discard(arm.arm)
        self.arms[arm.arm].spooled(arm.pending)

    def close(self) -> None:
        """Close the ledger and the item spools; idempotent."""
        self.ledger.close()
        self._spools.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write(batch: Path, arm: FrozenArm, spool: ItemSpool) -> None:
    path = transcript_path(batch, arm.arm)
    prose, identity = arm.head()
    write_streamed(path, prose=prose, identity=identity, rows=arm.rows, load=arm.event_at,
                   spool=spool)
