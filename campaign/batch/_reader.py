"""`read_batch`: one batch read, the one way every command reads one.

A reading is the batch's ``config.yaml`` and ``plan.yaml`` (each read once,
`campaign.batch._config`), who holds its lock now (asked before the ledger is
read, so a runner that starts later is seen as holding it), and its ledger
folded in one streaming pass (`BatchFold`; one line in memory). ``status``,
``show``, ``resume``, ``retranscribe`` and the report read a batch through it;
a `Journal` opened on a reading goes on from it instead of reading the ledger
again, and one opened without replays the ledger through the same pass
(`replay_ledger`).

Reads only: a last line without its newline is still being appended (or a
crash cut it) and is skipped, never repaired; the next writer sets it aside.
When no runner holds the batch, the attempts still running were interrupted
(`BatchFold.runner_gone`), unless the caller asks for the ledger as it stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from campaign.plan import batch_order

from ._config import read_config, read_plan, workspace_note
from ._fold import BatchFold, SessionKey
from ._ledger import LEDGER_NAME, complete_bytes, read_ledger_spans
from ._lock import lock_holder
from ._projection import Projection, arm_transcripts
from ._records import FinalRecord, RederivedRecord
from ._spools import ArmSpools

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from campaign.plan import Plan

    from ._config import BatchConfig
    from ._fold import SessionKey
    from ._records import LedgerRecord


class LedgerWatcher(Protocol):
    """What a reader that keeps more than the fold sees of the pass (the report's outcomes)."""

    def record(self, record: LedgerRecord, fold: BatchFold) -> None:
        """One record, just folded (``fold`` holds it)."""

    def interrupted(self, gone: list[tuple[SessionKey, int]]) -> None:
        """The (session, attempt) pairs whose runner died mid-attempt (`BatchFold.apply`)."""


@dataclass(frozen=True, slots=True)
class BatchReading:
    """One batch as read by `read_batch`: its files, its lock's holder, its ledger folded."""

    path: Path
    config: BatchConfig
    plan: Plan
    holder: int | None
    """The pid holding the batch's lock when it was read (0: held, pid not written yet);
    None: no runner held it."""
    planned: tuple[tuple[SessionKey, int], ...]
    """The planned sessions with their repetitions (a ``record`` batch has none)."""
    projection: Projection
    """The fold, and (``transcripts=True``) the arms' transcripts, as the ledger left them."""
    ledger_bytes: int
    """The bytes of the ledger's complete lines the pass read."""
    spools: ArmSpools | None = None
    """(``transcripts=True``) the arms' recorded events, spooled as the pass met them; a
    `Journal` that goes on from the reading takes them over. `close` closes them."""

    @property
    def fold(self) -> BatchFold:
        """The ledger folded (`BatchFold`)."""
        return self.projection.fold

    @property
    def running(self) -> bool:
        """A process held the batch when it was read: it was still being written."""
        return self.holder is not None

    def unchanged(self) -> bool:
        """The ledger holds no complete line the pass did not read (asked under the lock:
        no invocation began since, so config.yaml and plan.yaml are as read too)."""
        return complete_bytes(self.path / LEDGER_NAME) == self.ledger_bytes

    def continues(self, ledger_bytes: int, plan: Plan,
                  planned: tuple[tuple[SessionKey, int], ...]) -> bool:
        """A journal opened on a ledger of ``ledger_bytes`` complete bytes, for ``plan`` and
        ``planned``, may go on from this reading's transcripts: they were made (the reading
        asked for them), from every line that ledger holds and for the same sessions."""
        return (bool(self.projection.arms) and ledger_bytes == self.ledger_bytes
                and plan == self.plan and planned == self.planned)

    def close(self) -> None:
        """Close the spools (a journal that took them over closes them too); idempotent."""
        if self.spools is not None:
            self.spools.close()

    def __enter__(self) -> BatchReading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_batch(path: Path, *, transcripts: bool = False, settle: bool = True,
               watch: Callable[[Plan], LedgerWatcher] | None = None) -> BatchReading:
    """Read the batch at ``path`` (resolved): config, plan, lock holder, the ledger folded.

    Args:
        path: The batch directory.
        transcripts: Also build each arm's transcript as the ledger stands, its recorded
            events spooled on disk (for a `Journal` to go on from: ``resume``,
            ``retranscribe``); close the reading (`BatchReading.close`) when done.
        settle: When no runner holds the batch, its attempts still running are taken as
            interrupted (`BatchFold.runner_gone`; a journal that appends an invocation does
            the same). False: the ledger as it stands (``retranscribe``, which appends no
            invocation).
        watch: Made with the plan before the pass; sees every record as it is folded.

    Raises:
        BatchFileError: config.yaml or plan.yaml is missing, not YAML, or not the shape
            this runner writes (naming the file and the rule).
        LedgerCorrupt: a complete ledger line is not a record this runner writes.
        OSError: (``transcripts=True``) a spool could not be made or written.
    """
    config = read_config(path)
    plan = read_plan(path)
    planned = () if config.options.command == "record" else tuple(
        (SessionKey(o.arm.arm, o.probe.id, o.session), o.repetition) for o in batch_order(plan))
    arms = arm_transcripts(plan, planned=(key for key, _ in planned),
                           network=config.facts.network,
                           provider_note=config.facts.provider_note,
                           workspace_note=workspace_note(config)) if transcripts else {}
    projection = Projection(BatchFold(planned), arms)
    holder = lock_holder(path)  # asked first: a runner that starts later is seen
    watcher = watch(plan) if watch is not None else None
    spools = ArmSpools(path) if transcripts else None
    try:
        read = replay_ledger(path / LEDGER_NAME, projection, watcher, spools=spools)
    except BaseException:
        if spools is not None:
            spools.close()
        raise
    if holder is None and settle:
        gone = projection.runner_gone()
        if watcher is not None:
            watcher.interrupted(gone)
    return BatchReading(path=path, config=config, plan=plan, holder=holder, planned=planned,
                        projection=projection, ledger_bytes=read, spools=spools)


def replay_ledger(ledger: Path, projection: Projection,
                  watcher: LedgerWatcher | None = None, *,
                  spools: ArmSpools | None = None) -> int:
    """Feed every complete record of ``ledger`` to ``projection`` (and ``watcher``), in order.

    Args:
        spools: Where each recorded event goes right after its record (so the replay
            holds none in memory); None leaves them pending in the arms' builders.

    Returns:
        The bytes of complete lines read.

    Raises:
        LedgerCorrupt: a complete line is not a record this runner writes.
        OSError: a spool could not be written.
    """
    read = 0
    for start, end, record in read_ledger_spans(ledger):
        read = end
        gone = projection.apply(record, start)
        if watcher is not None:
            watcher.interrupted(gone)
            watcher.record(record, projection.fold)
        if spools is not None and isinstance(record, FinalRecord | RederivedRecord):
            arm = projection.arms.get(record.arm)
            if arm is not None:
                spools.take(arm)
    return read
