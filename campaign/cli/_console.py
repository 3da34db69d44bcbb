"""A rich console for stdout that leaves a closed pipe to the CLI (rich would exit 1 itself)."""

from __future__ import annotations

from rich.console import Console


class StdoutConsole(Console):
    """``status | head`` ends quietly: a closed pipe raises `BrokenPipeError` for `main`."""

    def on_broken_pipe(self) -> None:
        """Called by rich when the reader went away: hand it to the CLI."""
        self.quiet = True
        raise BrokenPipeError("the reader of stdout went away")
