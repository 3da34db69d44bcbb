"""Consoles for the CLI's own output: never cut off a pipe, never exit by themselves on one."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, Final

from rich.console import Console

PIPE_WIDTH: Final = 10_000
"""Off a terminal, tables take the width they need: a log or a file gets every column whole."""


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
