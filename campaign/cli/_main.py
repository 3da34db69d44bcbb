"""The console entry point: parse, dispatch, and map errors to exit statuses (docs/cli.md)."""

from __future__ import annotations

import signal
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from campaign._errors import CampaignError
from campaign._terminal_text import block
from campaign.batch import BatchBusy
from campaign.supervisor import refused_write, write_remedy
from sandbox import PreflightFailed

from ._console import stdout_gone
from ._errors import (
    EXIT_BUG,
    EXIT_CONFINEMENT,
    EXIT_USAGE,
    EXIT_WRITE_REFUSED,
    SIGNAL_BASE,
    PreflightStop,
    UsageError,
)
from ._parser import parse_command


def _say(text: str) -> None:
    # A message may quote what a session sent (a reason, a path): its controls escaped.
    print(f"headwater-campaign: {block(text)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Parse ``argv``, run the command, exit with its status."""
    parsed = parse_command(argv)
    try:
        code = parsed.run()
    except (UsageError, CampaignError, BatchBusy) as exc:
        _say(str(exc))
        code = EXIT_USAGE
    except (PreflightStop, PreflightFailed) as exc:
        _say(str(exc))
        code = EXIT_CONFINEMENT
    except KeyboardInterrupt:
        code = SIGNAL_BASE + signal.SIGINT
    except BrokenPipeError:
        code = _broken_pipe()
    except OSError as exc:
        if not refused_write(exc):
            code = _bug()
        else:
            _say(f"the host refused a write: {exc}; nothing already written was lost. "
                 f"{_sentence(write_remedy(exc))}, then run the command again (a batch that "
                 "started: `headwater-campaign resume BATCH`)")
            code = EXIT_WRITE_REFUSED
    except Exception:
        code = _bug()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _broken_pipe(code)
    sys.exit(code)


def _sentence(text: str) -> str:
    """``text`` with its first letter upper-case (the rest, paths included, kept)."""
    return text[:1].upper() + text[1:]


def _bug() -> int:
    traceback.print_exc()
    _say("unexpected error (a bug); the traceback is above")
    return EXIT_BUG


def _broken_pipe(code: int = 0) -> int:
    """stdout's reader went away (``| head``): stop writing there, quietly, with ``code``.

    A command whose status depends on what it found decides it before it
    prints (`quiet_pipe`); one that reaches here printed what it had.
    """
    stdout_gone()  # the interpreter's final flush must not fail again
    return code
