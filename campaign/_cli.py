"""The command line: plan, run, demo, record, seal, check-transcript, doctor.

Exit statuses (DESIGN.md): 0 done; 1 a bug (traceback printed) or, for
``record``, a session that ended in a non-recorded, non-refused state; 2 usage
or bad input; 3 a budget stopped the batch; 4 could not verify
(check-transcript, doctor); 12 confinement preflight failed before any spend,
or ``record``'s one session was refused; 130/143 stopped by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from . import _commands

EXIT_OK = 0
EXIT_BUG = 1
EXIT_USAGE = 2
EXIT_UNVERIFIED = 4
EXIT_CONFINEMENT = 12

_EPILOG = """\
exit statuses: 0 done (every session reached a final state; non-recorded ones are
reported, not fatal), 1 unexpected error, 2 usage or bad input, 3 a budget stopped
the batch, 4 could not verify, 12 confinement preflight failed (nothing spent),
130/143 stopped by SIGINT/SIGTERM (every finished session is in the ledger).

quick start:
  headwater-campaign demo                       # the bundled corpus, scripted provider
  headwater-campaign plan CORPUS --format text  # what a batch would run, before spending
  headwater-campaign run CORPUS --tier campaign # a real batch (host credentials)
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _corpus_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("corpus_pos", nargs="?", metavar="CORPUS", type=Path,
                   help="the corpus root (holds .headwater/probe.yml and docs/)")
    p.add_argument("--corpus", dest="corpus_opt", type=Path, metavar="DIR",
                   help="the corpus root, as an option")
    p.set_defaults(_corpus_required=required)


def _harness_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--harness", type=Path, metavar="PATH",
                   help="the harness executable (default: the pinned Claude Code CLI under "
                        ".harness/, installed by `make`); any program that prints stream-json")
    p.add_argument("--bwrap", default="bwrap", metavar="PATH", help="the bubblewrap binary")


def _network_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--network", choices=("confined", "host"), default=None,
                   help="confined: each session in its own network namespace whose only way "
                        "out is an egress proxy that allows the provider's host:port and "
                        "nothing else (default where the host supports it; see docs/network.md); "
                        "host: the host's network, open (the transcript's prose says so)")


def _provider_args(p: argparse.ArgumentParser) -> None:
    """--model, --provider-url, --api-key-env: what run and record send to the provider."""
    p.add_argument("--model", help="the model passed to the harness (default: probe.yml's)")
    p.add_argument("--provider-url", metavar="URL",
                   help="the Messages API base URL (default $ANTHROPIC_BASE_URL, "
                        "else the public API)")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="take the API key from this variable instead of the host's "
                        ".credentials.json")


def _positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1 (e.g. --concurrency)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch-dir", type=Path, metavar="DIR",
                   help="the batch directory (must not exist or be empty; never under $HOME). "
                        "Default: batches/ of the checkout, else "
                        "/var/tmp/headwater-campaign/batches")
    p.add_argument("--concurrency", type=_positive_int, default=2, metavar="N",
                   help="sessions at once (default 2)")
    p.add_argument("--session-timeout", type=float, default=1800.0, metavar="S",
                   help="wall limit of one session in seconds (default 1800)")
    p.add_argument("--watchdog", type=float, default=600.0, metavar="S",
                   help="end a session whose stdout is silent this many seconds (default 600)")
    p.add_argument("--discard-workspaces", action="store_true",
                   help="delete each workspace once its event is recorded (large batches)")
    _identical_arms_arg(p)


def _identical_arms_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-identical-arms", action="store_true",
                   help="run an arm whose component the corpus lacks (it would differ from "
                        "present in nothing); refused by default, before anything is spent")


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every command (``--help`` teaches; see docs/cli.md)."""
    parser = _Parser(
        prog="headwater-campaign",
        description="Run campaign batches of confined, headless Claude Code sessions over a "
                    "documentation corpus, and record contract transcripts from their stdout.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("plan", help="print the plan (identity, probes, read set, session count)")
    _corpus_args(p)
    p.add_argument("--tier", default=None,
                   help="tier from probe.yml: its arms and repetitions (default campaign; "
                        "with --plan, the plan's tier)")
    p.add_argument("--seed", type=int, default=0, help="the rotation seed (default 0)")
    p.add_argument("--format", choices=("text", "yaml", "json"), default="text",
                   help="text for people; yaml/json are exactly what `run --plan FILE` reads")
    p.set_defaults(func=_commands.cmd_plan)

    p = sub.add_parser("run", help="run a batch against a real provider")
    _corpus_args(p)
    p.add_argument("--tier", default=None,
                   help="tier from probe.yml: its arms and repetitions (default campaign; "
                        "with --plan, the plan's tier)")
    p.add_argument("--plan", type=Path, metavar="FILE",
                   help="a plan from `plan --format yaml|json`")
    p.add_argument("--seed", type=int, default=0, help="the rotation seed (default 0)")
    _provider_args(p)
    _harness_args(p)
    _network_args(p)
    _run_args(p)
    p.set_defaults(func=_commands.cmd_run)

    p = sub.add_parser("demo", help="the bundled example corpus, tier campaign, scripted provider, "
                                    "real CLI under real bwrap")
    p.add_argument("--batch-dir", type=Path, metavar="DIR", help="the batch directory")
    p.add_argument("--concurrency", type=_positive_int, default=2, metavar="N",
                   help="sessions at once")
    _harness_args(p)
    _network_args(p)
    p.set_defaults(func=_commands.cmd_demo)

    p = sub.add_parser("record", help="record one session into a batch (names it r<N>)")
    _corpus_args(p)
    p.add_argument("--probe", required=True, metavar="ID")
    p.add_argument("--arm", required=True, metavar="ARM")
    _identical_arms_arg(p)
    p.add_argument("--tier", default=None,
                   help="tier from probe.yml (default campaign); the arm must be one of its arms")
    p.add_argument("--seed", type=int, default=0)
    _provider_args(p)
    p.add_argument("--produced", action="append", default=[], metavar="PATH",
                   help="an artifact the log cannot name (relative to the workspace unless "
                        "absolute); repeatable")
    p.add_argument("--batch-dir", type=Path, required=True, metavar="DIR")
    p.add_argument("--session-timeout", type=float, default=1800.0, metavar="S")
    p.add_argument("--watchdog", type=float, default=600.0, metavar="S")
    _harness_args(p)
    _network_args(p)
    p.set_defaults(func=_commands.cmd_record)

    p = sub.add_parser("seal", help="write one sealed workspace (RC-09)")
    _corpus_args(p)
    p.add_argument("--probe", required=True, metavar="ID")
    p.add_argument("--arm", default="present", metavar="ARM")
    p.add_argument("--out", type=Path, required=True, metavar="DIR")
    p.add_argument("--explain", action="store_true", help="list every removal and why")
    p.set_defaults(func=_commands.cmd_seal)

    p = sub.add_parser("check-transcript",
                       help="the contract check: 0 clean, 1 refused, 4 could not verify")
    p.add_argument("file", type=Path, metavar="FILE")
    p.set_defaults(func=_commands.cmd_check_transcript)

    p = sub.add_parser("doctor", help="host preflight: 0 all ok, 12 broken, 4 could not verify")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="take the API key from this variable instead of the host's "
                        ".credentials.json")
    _harness_args(p)
    p.set_defaults(func=_commands.cmd_doctor)
    return parser


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console entry point: parse, dispatch, map errors to exit statuses."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "_corpus_required"):
        corpus = args.corpus_opt or args.corpus_pos
        if args.corpus_opt and args.corpus_pos and args.corpus_opt != args.corpus_pos:
            parser.error("give the corpus once, positionally or as --corpus")
        if corpus is None and args._corpus_required:
            parser.error(f"{args.command}: the corpus is required (CORPUS or --corpus DIR)")
        args.corpus = corpus
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        code = func(args)
    except _commands.UsageError as exc:
        print(f"headwater-campaign: {exc}", file=sys.stderr)
        code = EXIT_USAGE
    except _commands.PreflightStop as exc:
        print(f"headwater-campaign: {exc}", file=sys.stderr)
        code = EXIT_CONFINEMENT
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    except Exception:
        traceback.print_exc()
        print("headwater-campaign: unexpected error (a bug); the traceback is above",
              file=sys.stderr)
        code = EXIT_BUG
    sys.stdout.flush()
    sys.exit(code)
