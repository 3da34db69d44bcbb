"""``retranscribe BATCH [--corpus DIR]``: the batch's events derived again from its kept streams.

Runs no session and spends nothing: see campaign.supervisor._retranscribe.
Exit 0, or 2 when BATCH is not a batch, is in use, or its corpus changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from campaign._errors import CampaignError
from campaign._terminal_text import one_line
from campaign.batch import (
    BatchLock,
    BatchReading,
    Journal,
    compare_batch,
    read_tree,
    transcript_path,
    workspace_note,
)
from campaign.plan import recompose
from campaign.supervisor import retranscribe

from ._args import RetranscribeArgs
from ._batch import load_corpus_or_usage
from ._errors import EXIT_OK, UsageError, plural
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
    root = args.corpus or Path(config.options.corpus)
    corpus = load_corpus_or_usage(root)
    try:
        current = recompose(recorded, corpus).model_copy(update={
            "model": recorded.model, "runner_version": recorded.runner_version})
    except CampaignError as exc:
        raise UsageError(f"batch {batch}: {exc}") from exc
    moved = compare_batch(recorded, current, recorded_harness_version="",
                          current_harness_version="", recorded_tree=read_tree(batch),
                          current_tree=corpus.files)
    if moved:
        raise UsageError(f"batch {batch}: the corpus is not the one the batch ran over: "
                         f"{'; '.join(moved)}; give that corpus with --corpus DIR")
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
