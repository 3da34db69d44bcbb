"""What every command's parser is made of: the parser class, the command record, the corpus
arguments and the top-level epilog."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, NoReturn, TypeAlias, TypeVar

from .._args import CommandArgs
from .._errors import EXIT_USAGE

A = TypeVar("A", bound=CommandArgs)


EPILOG: Final = """\
exit statuses:
  0    done; for run/demo/resume every session reached a final state (sessions that
       were not recorded are reported, not fatal; one out of retries in a state worth
       another attempt stays outstanding: see status)
  1    an unexpected error (a bug; a traceback is printed); record: the session failed
  2    usage or bad input (a bad corpus, plan or flag; a batch directory under $HOME or
       not empty; a batch whose inputs changed, on resume or record)
  3    a budget (--max-cost-cents, --max-wall) stopped the batch; it stays resumable
  4    could not verify (check-transcript, doctor): never reported as a pass
  5    run/demo/resume: every session reached a final state, but none was recorded
  6    the host refused a write (disk full, quota, read-only): stopped cleanly,
       resumable
  12   confinement preflight failed before anything was spent; record: the session
       was refused
  130  stopped by SIGINT (Ctrl-C); 143 by SIGTERM; resumable
  When several apply: 130/143, then 3, then 6, then 5, then 0.

quick start:
  headwater-campaign demo                        # the bundled corpus, scripted provider
  headwater-campaign status BATCH                # how a batch stands, running or not
  headwater-campaign report BATCH                # the arms side by side per probe
  headwater-campaign grade BATCH                 # verdicts against the probes' expect:
  headwater-campaign resume BATCH                # run what did not finish
  headwater-campaign plan CORPUS                 # what a batch would run, before spending
  headwater-campaign run CORPUS --provider scripted --scripts DIR   # a dry run, no spend
  headwater-campaign run CORPUS --tier campaign  # a real batch (host credentials)
"""

class Parser(argparse.ArgumentParser):
    """A parser whose usage error exits 2 (`EXIT_USAGE`) with the command's usage."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class CommandParser(Parser):
    """A command's parser: a flag not given is left out of the namespace, so the command's
    argument class (`campaign.cli._args`) holds every default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("argument_default", argparse.SUPPRESS)
        super().__init__(*args, **kwargs)


@dataclass(frozen=True)
class Command(Generic[A]):
    """One command: the class of its arguments and its function, imported when it runs (a
    batch does not load the report's templates and charts, nor ``--help`` the supervisor)."""

    args: type[A]
    module: str
    """The module under ``campaign.cli`` that holds the function."""
    function: str
    parser: argparse.ArgumentParser = field(compare=False, repr=False)
    corpus: bool = False
    """The command takes a required corpus, as CORPUS or ``--corpus DIR`` (`corpus_args`)."""

    def run(self, args: A) -> int:
        """Import the command's module and run its function on ``args``; its exit status."""
        function: Callable[[A], int] = getattr(
            importlib.import_module(f"campaign.cli.{self.module}"), self.function)
        return function(args)


@dataclass(frozen=True)
class Parsed:
    """A parsed command line: the command and its arguments, built once."""

    command: Command[Any]
    args: CommandArgs

    def run(self) -> int:
        """Run the command; its exit status."""
        return self.command.run(self.args)


Subparsers: TypeAlias = "argparse._SubParsersAction[CommandParser]"
"""The top-level parser's commands, to which each group module adds its own."""


def add_command(sub: Subparsers, name: str, args: type[A], module: str, function: str, *,
                corpus: bool = False, **kwargs: Any) -> argparse.ArgumentParser:
    """Add the parser of command ``name``; its arguments become an ``args`` (`parse_command`)."""
    p = sub.add_parser(name, **kwargs)
    if corpus:
        corpus_args(p)
    p.set_defaults(_command=Command(args, module, function, p, corpus=corpus))
    return p


def corpus_args(p: argparse.ArgumentParser) -> None:
    """CORPUS or ``--corpus DIR``, merged into ``corpus`` by `parse_command`."""
    # default None: a positional left out would otherwise be given SUPPRESS, through type
    p.add_argument("corpus_pos", nargs="?", metavar="CORPUS", type=Path, default=None,
                   help="the corpus root (holds .headwater/probe.yml and docs/)")
    p.add_argument("--corpus", dest="corpus_opt", type=Path, metavar="DIR", default=None,
                   help="the corpus root, as an option")
