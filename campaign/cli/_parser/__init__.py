"""The command line's parser: ``--help`` is meant to teach (docs/cli.md has more).

One module per command group adds its commands (`_inspect`: plan, seal,
check-transcript, doctor; `_batch`: run, demo, resume; `_reading`: status,
show, retranscribe, report; `_grade`: grade; `_record`: record), from the argument groups they
share (`_common`). `parse_command` is the one place a namespace is read: it
builds the command's frozen arguments (`campaign.cli._args`) and checks the
corpus, required by plan, run, record and seal, once for all of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from campaign.corpus import PINNED_HARNESS_VERSION
from campaign.plan import runner_version

from ._base import EPILOG, Command, CommandParser, Parsed, Parser
from ._batch import add_batch_commands
from ._grade import add_grade_command
from ._inspect import add_check_commands, add_inspect_commands
from ._reading import add_reading_commands
from ._record import add_record_command

__all__ = ["Command", "Parsed", "build_parser", "parse_command"]


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every command, in the order ``--help`` lists them."""
    parser = Parser(
        prog="headwater-campaign",
        description="Run campaign batches of confined, headless Claude Code sessions over a "
                    "documentation corpus, and record contract transcripts from their stdout.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"{runner_version()} (pinned Claude Code {PINNED_HARNESS_VERSION})")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser,
                                metavar="COMMAND")
    add_inspect_commands(sub)
    add_batch_commands(sub)
    add_reading_commands(sub)
    add_grade_command(sub)
    add_record_command(sub)
    add_check_commands(sub)
    return parser


def parse_command(argv: Sequence[str] | None = None) -> Parsed:
    """Parse ``argv`` into its command's frozen arguments (`campaign.cli._args`).

    Every list argparse made becomes a tuple, and the corpus, given as CORPUS or
    ``--corpus DIR`` (once: both must name the same), becomes ``corpus``. A usage error
    (a bad value, a missing corpus) prints the command's usage and exits 2.
    """
    values = dict(vars(build_parser().parse_args(argv)))
    command: Command[Any] = values.pop("_command")
    values.pop("command", None)
    if command.corpus:
        pos, opt = values.pop("corpus_pos", None), values.pop("corpus_opt", None)
        if pos is not None and opt is not None and pos != opt:
            command.parser.error("give the corpus once, positionally or as --corpus")
        if pos is None and opt is None:
            command.parser.error("the corpus is required: give it as CORPUS or --corpus DIR")
        values["corpus"] = opt if opt is not None else pos
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return Parsed(command, command.args(**values))


