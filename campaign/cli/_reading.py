"""A batch read for a command, its refusals said as usage errors (exit 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from campaign.batch import BatchFileError, LedgerCorrupt, read_batch

from ._errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from campaign.batch import BatchReading

NOT_A_BATCH_HINT = "give a batch directory made by run, demo or record"


def batch_reading(batch: Path, *, hint: str = NOT_A_BATCH_HINT, is_dir_first: bool = False,
                  transcripts: bool = False, settle: bool = True,
                  corrupt_is_usage: bool = True) -> BatchReading:
    """`read_batch` of ``batch``, for a command.

    Args:
        batch: The batch directory, resolved.
        hint: What the command takes, said after a file's refusal.
        is_dir_first: Refuse a path that is not a directory before reading anything.
        transcripts: See `read_batch`.
        settle: See `read_batch`.
        corrupt_is_usage: A ledger line the runner did not write is a usage error (exit 2);
            False lets `LedgerCorrupt` through.

    Raises:
        UsageError: not a directory (``is_dir_first``), not a batch (`BatchFileError`, with
            ``hint``), or a corrupt ledger (``corrupt_is_usage``).
    """
    if is_dir_first and not batch.is_dir():
        raise UsageError(f"{batch} {'is not a directory' if batch.exists() else 'does not exist'}"
                         f"; {hint}")
    try:
        return read_batch(batch, transcripts=transcripts, settle=settle)
    except BatchFileError as exc:
        raise UsageError(f"{exc}; {hint}") from exc
    except LedgerCorrupt as exc:
        if not corrupt_is_usage:
            raise
        raise UsageError(str(exc)) from exc
