"""The console entry point: parse, dispatch, and map errors to exit statuses (docs/cli.md)."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, NoReturn

from campaign._errors import CampaignError
from campaign.batch._lock import BatchBusy
from campaign.supervisor._session import refused_write
from sandbox._errors import PreflightFailed

from ._errors import (
    EXIT_BUG,
    EXIT_CONFINEMENT,
    EXIT_USAGE,
    EXIT_WRITE_REFUSED,
    SIGNAL_BASE,
    PreflightStop,
    UsageError,
)
from ._parser import build_parser

if TYPE_CHECKING:
    import argparse

READ_ONLY: Final = frozenset({"plan", "seal", "check-transcript", "doctor", "status", "show",
                               "report"})
"""Commands whose whole result is their stdout: piped into ``head``, they stop quietly."""


def _say(text: str) -> None:
    print(f"headwater-campaign: {text}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Parse ``argv``, run the command, exit with its status."""
    args = build_parser().parse_args(argv)
    needs = getattr(args, "_needs_corpus", None)
    if needs is not None and args.corpus_pos is None and args.corpus_opt is None:
        needs.error("the corpus is required: give it as CORPUS or --corpus DIR")
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        code = func(args)
    except (UsageError, CampaignError, BatchBusy) as exc:
        _say(str(exc))
        code = EXIT_USAGE
    except (PreflightStop, PreflightFailed) as exc:
        _say(str(exc))
        code = EXIT_CONFINEMENT
    except KeyboardInterrupt:
        code = SIGNAL_BASE + signal.SIGINT
    except BrokenPipeError:
        code = _broken_pipe(args.command)
    except OSError as exc:
        if not refused_write(exc):
            code = _bug()
        else:
            _say(f"the host refused a write: {exc}; nothing was lost. Free space, then run "
                 "the command again (a batch that started: `headwater-campaign resume BATCH`)")
            code = EXIT_WRITE_REFUSED
    except Exception:
        code = _bug()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _broken_pipe(args.command, code)
    sys.exit(code)


def _bug() -> int:
    traceback.print_exc()
    _say("unexpected error (a bug); the traceback is above")
    return EXIT_BUG


def _broken_pipe(command: str, code: int = 0) -> int:
    """stdout's reader went away (``| head``): stop writing there, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
    os.close(devnull)
    return code if command not in READ_ONLY else 0
