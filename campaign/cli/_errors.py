"""Exit statuses (docs/cli.md) and the errors the CLI turns into them.

| status | meaning |
|---|---|
| 0 | done; for run/demo/resume every session reached a final state |
| 1 | an unexpected error (a bug): a traceback is printed; ``record``: the session failed |
| 2 | usage or bad input |
| 3 | a budget stopped the batch (resumable) |
| 4 | could not verify (``check-transcript``, ``doctor``) |
| 5 | run/demo/resume: every session is final, but none was recorded |
| 6 | the host refused a write (disk full, quota): stopped cleanly, resumable |
| 12 | confinement preflight failed before any spend; ``record``: the session was refused |
| 130 / 143 | stopped by SIGINT / SIGTERM (resumable) |

When several apply: 130/143, then 3, then 6, then 5, then 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from campaign.supervisor import BatchOutcome

EXIT_OK: Final = 0
EXIT_BUG: Final = 1
EXIT_USAGE: Final = 2
EXIT_BUDGET: Final = 3
EXIT_UNVERIFIED: Final = 4
EXIT_NONE_RECORDED: Final = 5
EXIT_WRITE_REFUSED: Final = 6
EXIT_CONFINEMENT: Final = 12
SIGNAL_BASE: Final = 128


class UsageError(Exception):
    """Bad input or usage: the CLI prints the message and exits 2."""


class PreflightStop(Exception):
    """A check failed before any spend (credentials missing, confinement): the CLI exits 12."""


def plural(count: int, word: str) -> str:
    """``1 session``, ``2 sessions``: the count and the word as English has it (``-s`` added)."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def batch_exit_status(outcome: BatchOutcome) -> int:
    """run/demo/resume's status for ``outcome``: 130/143, then 3, then 6, then 5, then 0."""
    if outcome.signal is not None:
        return SIGNAL_BASE + outcome.signal
    if outcome.budget_stopped:
        return EXIT_BUDGET
    if outcome.write_refused:
        return EXIT_WRITE_REFUSED
    if outcome.recorded == 0:
        return EXIT_NONE_RECORDED
    return EXIT_OK
