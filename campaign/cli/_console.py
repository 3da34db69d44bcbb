"""Consoles for the CLI's own output: never cut off a pipe, never exit by themselves on one."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console

from campaign._terminal_text import PIPE_WIDTH


class StdoutConsole(Console):
    """stdout for tables: full width off a terminal; a closed pipe raises `BrokenPipeError`.

    rich would exit 1 by itself on a closed pipe (``status | head``); this hands
    it to the CLI, which ends quietly with the command's own status.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.is_terminal:
            self.width = PIPE_WIDTH

    def on_broken_pipe(self) -> None:
        """Called by rich when the reader went away: hand it to the CLI."""
        self.quiet = True
        raise BrokenPipeError("the reader of stdout went away")


class StderrConsole(Console):
    """stderr for progress and notices: a reader that goes away ends the printing only.

    An overnight batch whose ``2>&1 | tee log`` lost its tee, or whose
    ``less`` was quit, keeps running and records every session: rich would
    exit 1 by itself on the first refused write (docs/cli.md, "Pipes").
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("stderr", True)
        kwargs.setdefault("highlight", False)
        kwargs.setdefault("soft_wrap", True)
        super().__init__(**kwargs)

    def on_broken_pipe(self) -> None:
        """Called by rich when the reader went away: print nothing more, go on."""
        self.quiet = True
        if self.file is sys.stderr:
            stderr_gone()


def stderr_gone() -> None:
    """stderr's reader went away: later notices (anyone's ``print``) go nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stderr.fileno())
    os.close(devnull)


def stdout_gone() -> None:
    """stdout's reader went away: what would still be printed goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@contextlib.contextmanager
def quiet_pipe() -> Iterator[None]:
    """Print inside: a reader that goes away (``| head``) ends the printing, not the command,
    so the command still returns the status it decided before printing."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()
