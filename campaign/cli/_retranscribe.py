"""``retranscribe BATCH [--corpus DIR]``: the batch's events derived again from its kept streams.

Runs no session and spends nothing: see campaign.supervisor._retranscribe.
Exit 0, or 2 when BATCH is not a batch, is in use, or its corpus changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from campaign._terminal_text import one_line
from campaign.batch import (
    BatchLock,
    BatchReading,
    Journal,
    transcript_path,
    workspace_note,
)
from campaign.supervisor import retranscribe

from ._args import RetranscribeArgs
from ._batch import recorded_corpus
from ._errors import EXIT_OK, plural
from ._reading import batch_reading


def cmd_retranscribe(args: RetranscribeArgs) -> int:
    """``retranscribe``: append a ``rederived`` record per session and render the transcripts."""
    batch = args.batch.expanduser().resolve()
    # The ledger as it stands (retranscribe appends no invocation, so a killed runner's
    # attempt stays as the ledger shows it); the journal goes on from this reading.
    with batch_reading(batch, transcripts=True, settle=False,
                       corrupt_is_usage=False) as reading:
        return _retranscribe(args, batch, reading)


def _retranscribe(args: RetranscribeArgs, batch: Path, reading: BatchReading) -> int:
    config, recorded = reading.config, reading.plan
    corpus = recorded_corpus(reading, args.corpus)
    with BatchLock(batch), Journal(batch, recorded, planned=reading.planned,
                                   network=config.facts.network,
                                   provider_note=config.facts.provider_note,
                                   workspace_note=workspace_note(config),
                                   reading=reading) as journal:
        counts = anyio.run(lambda: retranscribe(journal, batch=batch, plan=recorded,
                                                corpus=corpus), backend="trio")
    print(f"re-derived {plural(counts.rederived, 'session')} from their kept streams")
    for line in counts.changed:
        print(f"  changed: {one_line(line)}")
    for reason, n in sorted(counts.skipped.items()):
        print(f"  left as recorded ({n}): {one_line(reason)}", file=sys.stderr)
    for arm in recorded.arms:
        print(f"transcript: {one_line(transcript_path(batch, arm))}")
    return EXIT_OK
