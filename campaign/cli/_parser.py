"""The argparse tree of every command; ``--help`` is meant to teach (docs/cli.md has more)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, NoReturn, TypeVar

from campaign.batch import (
    CONCURRENCY,
    RETRIES,
    RETRY_BACKOFF_S,
    SESSION_TIMEOUT_S,
    WATCHDOG_S,
)
from campaign.plan import harness_version
from recorder import POST_RESULT_GRACE_S
from sandbox import (
    DEFAULT_CONNECTIONS,
    DEFAULT_MEMORY_BYTES,
    DEFAULT_OPEN_FILES,
    DEFAULT_PIDS,
    DEFAULT_STDOUT_BYTES,
    DEFAULT_TMP_BYTES,
    DEFAULT_WRITE_BYTES,
    MAX_POOL_USERS,
    MIN_STDOUT_BYTES,
    format_bytes,
)

from ._args import (
    CheckTranscriptArgs,
    CommandArgs,
    DemoArgs,
    DoctorArgs,
    PlanArgs,
    RecordArgs,
    ReportArgs,
    ResumeArgs,
    RetranscribeArgs,
    RunArgs,
    SealArgs,
    ShowArgs,
    StatusArgs,
)
from ._errors import EXIT_USAGE
from ._types import (
    COUNT_FLOORS,
    SIZE_FLOORS,
    concurrency,
    count_at_least,
    duration_s,
    nonnegative_int,
    positive_int,
    size_at_least,
    stdout_bound,
    workspace_path,
)

A = TypeVar("A", bound=CommandArgs)

PINNED_HARNESS: Final = "2.1.197"
"""The Claude Code version `make` installs (the Makefile's HARNESS_VERSION)."""

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
  headwater-campaign resume BATCH                # run what did not finish
  headwater-campaign plan CORPUS                 # what a batch would run, before spending
  headwater-campaign run CORPUS --provider scripted --scripts DIR   # a dry run, no spend
  headwater-campaign run CORPUS --tier campaign  # a real batch (host credentials)
"""

SEED_HELP: Final = ("seeds the order in which the batch runs its sessions (shuffled within "
                    "each repetition; docs/batch.md) and is the transcripts' identity seed "
                    "(default 0)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class _CommandParser(_Parser):
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
    """The command takes a required corpus, as CORPUS or ``--corpus DIR`` (`_corpus_args`)."""

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


def _add(sub: argparse._SubParsersAction[_CommandParser], name: str, args: type[A], module: str,
         function: str, *, corpus: bool = False, **kwargs: Any) -> argparse.ArgumentParser:
    """Add the parser of command ``name``; its arguments become an ``args`` (`parse_command`)."""
    p = sub.add_parser(name, **kwargs)
    if corpus:
        _corpus_args(p)
    p.set_defaults(_command=Command(args, module, function, p, corpus=corpus))
    return p


def _corpus_args(p: argparse.ArgumentParser) -> None:
    # default None: a positional left out would otherwise be given SUPPRESS, through type
    p.add_argument("corpus_pos", nargs="?", metavar="CORPUS", type=Path, default=None,
                   help="the corpus root (holds .headwater/probe.yml and docs/)")
    p.add_argument("--corpus", dest="corpus_opt", type=Path, metavar="DIR", default=None,
                   help="the corpus root, as an option")


def _harness_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--harness", type=Path, metavar="PATH",
                   help="the harness executable (default: the pinned Claude Code CLI under "
                        ".harness/, installed by `make`)")
    p.add_argument("--bwrap", metavar="PATH",
                   help="the bubblewrap binary (default: bwrap on PATH)")


def _network_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--network", choices=("confined", "host"),
                   help="confined: each session in its own network namespace whose only way "
                        "out is an egress proxy that allows the provider's host:port and "
                        "nothing else (default where the host supports it; docs/network.md); "
                        "host: the host's network, open (the transcripts say so)")


def _provider_args(p: argparse.ArgumentParser, *, scripted: bool) -> None:
    p.add_argument("--model", help="the model passed to the harness (default: probe.yml's)")
    if scripted:
        p.add_argument("--provider", choices=("anthropic", "scripted"),
                       help="anthropic: a real Messages API (default); scripted: a loopback "
                            "test double that plays --scripts, for a dry run that spends "
                            "nothing (docs/provider.md); the transcripts say which")
        p.add_argument("--scripts", type=Path, metavar="DIR",
                       help="the scripted provider's scripts (one JSON file per probe)")
    p.add_argument("--provider-url", metavar="URL",
                   help="the Messages API base URL (default $ANTHROPIC_BASE_URL, else the "
                        "public API)")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="take the API key from this variable instead of the host's "
                        ".credentials.json (the name is recorded, never the value)")


def _budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--retries", type=nonnegative_int, metavar="N",
                   help=f"at most N further attempts per session in this invocation, for "
                        f"states worth another attempt (default {RETRIES})")
    p.add_argument("--max-cost-cents", type=positive_int, metavar="N",
                   help="the batch's budget in cents, over every attempt of every invocation; "
                        "no session starts once the spend plus a projection for each session "
                        "in flight could pass it (exit 3, resumable)")
    p.add_argument("--est-session-cents", type=positive_int, metavar="N",
                   help="the projected cost of one session before any has a cost, in cents, "
                        "at least 1 (without it, nothing is projected until the first "
                        "attempt's cost is known)")
    p.add_argument("--max-wall", dest="max_wall_s", type=duration_s, metavar="D",
                   help="this invocation's wall-clock budget: seconds, or with s, m or h "
                        "(e.g. 8h); no session starts once it could be passed (exit 3), and "
                        "sessions already running finish, each within --session-timeout, "
                        "so the invocation may end past D (unless --hard-wall)")
    p.add_argument("--hard-wall", action=argparse.BooleanOptionalAction,
                   help="with --max-wall: at D, cancel the sessions still running (each is "
                        "written killed and rerun by resume; exit 3), so the invocation "
                        "ends at D plus the sessions' grace to stop")


def _limits_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--concurrency", type=concurrency, metavar="N",
                   help=f"sessions at once (default {CONCURRENCY}, at most {MAX_POOL_USERS})")
    p.add_argument("--session-timeout", dest="session_timeout_s", type=duration_s,
                   metavar="S", help=f"wall limit of one session (default {SESSION_TIMEOUT_S:g} "
                                     "s); passing it ends the session timed-out")
    p.add_argument("--watchdog", dest="watchdog_s", type=duration_s, metavar="S",
                   help=f"end a session whose stdout is silent this long (default "
                        f"{WATCHDOG_S:g} s)")
    p.add_argument("--post-result-grace", dest="post_result_grace_s", type=duration_s,
                   metavar="S", help="end a harness that neither prints nor exits this long "
                                     "after its result line, and decide the session from what "
                                     f"it printed (default {POST_RESULT_GRACE_S:g} s)")
    p.add_argument("--retry-backoff", dest="retry_backoff_s", type=duration_s, metavar="S",
                   help=f"wait before a session's first retry (default {RETRY_BACKOFF_S:g} s; "
                        "doubled per retry, jittered, at most 300 s)")
    p.add_argument("--discard-workspaces", action="store_true",
                   help="delete each workspace once its attempt is recorded (large batches)")
    p.add_argument("--no-keep-streams", dest="keep_streams", action="store_false",
                   help="do not keep each attempt's stdout (compressed, in attempt-<n>/ of the "
                        "session; `show` and `retranscribe` read it): for very large batches")

    p.add_argument("--allow-identical-arms", action="store_true",
                   help="run an arm whose component the corpus lacks (it would differ from "
                        "present in nothing); refused by default, before anything is spent")


def _session_limit_args(p: argparse.ArgumentParser) -> None:
    """Per-session limits: passing one ends that session limit-exceeded, never the batch."""
    g = p.add_argument_group("per-session limits (passing one ends that session "
                             "limit-exceeded, never the batch; docs/session-reach.md)")
    g.add_argument("--max-processes", type=count_at_least(COUNT_FLOORS["max_processes"]),
                   metavar="N",
                   help=f"processes and threads at once (default {DEFAULT_PIDS})")
    g.add_argument("--max-memory", dest="max_memory_bytes",
                   type=size_at_least(SIZE_FLOORS["max_memory_bytes"]), metavar="SIZE",
                   help="memory, its page cache and /tmp included, no swap (default "
                        f"{format_bytes(DEFAULT_MEMORY_BYTES)}; SIZE: bytes, or with K, M or G)")
    g.add_argument("--max-tmp", dest="max_tmp_bytes",
                   type=size_at_least(SIZE_FLOORS["max_tmp_bytes"]), metavar="SIZE",
                   help="the size of its private /tmp, and again of its private /dev/shm: "
                        "each a tmpfs of this size (default "
                        f"{format_bytes(DEFAULT_TMP_BYTES)})")
    g.add_argument("--max-writes", dest="max_write_bytes",
                   type=size_at_least(SIZE_FLOORS["max_write_bytes"]), metavar="SIZE",
                   help="bytes it may add to its workspace, log and config directories, "
                        "held by a file system of its own (a root runner) and checked while "
                        "it runs and after; past it only its workspace's listing is kept "
                        f"(default {format_bytes(DEFAULT_WRITE_BYTES)})")
    g.add_argument("--max-stdout", dest="max_stdout_bytes", type=stdout_bound, metavar="SIZE",
                   help="bytes it may print on stdout, counted as the runner reads them "
                        f"(default {format_bytes(DEFAULT_STDOUT_BYTES)}, at least "
                        f"{format_bytes(MIN_STDOUT_BYTES)})")
    g.add_argument("--max-open-files", type=count_at_least(COUNT_FLOORS["max_open_files"]),
                   metavar="N",
                   help=f"open files of each of its processes (default {DEFAULT_OPEN_FILES}; "
                        "past it a call fails, the session goes on)")
    g.add_argument("--max-connections", type=positive_int, metavar="N",
                   help="connections open at once through its egress proxy (default "
                        f"{DEFAULT_CONNECTIONS})")


def _workspace_path_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workspace-path", type=workspace_path, metavar="PATH",
                   help="where every session of the batch sees its workspace (its working "
                        "directory): one fixed path that names no arm, probe, session or "
                        "batch (default /workspace/<the corpus root's directory name>); "
                        "absolute, not in /tmp, /dev, /proc, /usr, /etc or another system "
                        "directory (docs/confinement.md, 'Blind sessions')")


def _batch_dir_arg(p: argparse.ArgumentParser, *, required: bool = False) -> None:
    p.add_argument("--batch-dir", type=Path, metavar="DIR", required=required,
                   help="the batch directory (must not exist or be empty; never under "
                        "$HOME). Default: batches/ of the checkout, else "
                        "/var/tmp/headwater-campaign/batches")


def _record_batch_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch-dir", type=Path, metavar="DIR", required=True,
                   help="the batch directory: a new or empty one, or an existing batch "
                        "(the session is added to its ledger and transcript, if the corpus "
                        "and options still match it); never under $HOME")


def _tier_args(p: argparse.ArgumentParser, *, plan_file: bool = False) -> None:
    p.add_argument("--tier",
                   help="a tier of probe.yml: its arms and repetitions (default campaign"
                        + ("; with --plan, the plan's)" if plan_file else ")"))
    p.add_argument("--seed", type=nonnegative_int, metavar="N", help=SEED_HELP)


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every command."""
    parser = _Parser(
        prog="headwater-campaign",
        description="Run campaign batches of confined, headless Claude Code sessions over a "
                    "documentation corpus, and record contract transcripts from their stdout.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"{harness_version()} (pinned Claude Code {PINNED_HARNESS})")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser,
                                metavar="COMMAND")

    p = _add(sub, "plan", PlanArgs, "_inspect", "cmd_plan", corpus=True,
             help="print the plan: identity, probes, read set, session count")
    _tier_args(p)
    p.add_argument("--format", choices=("text", "yaml", "json"),
                   help="text for people; yaml/json are exactly what `run --plan FILE` reads")

    p = _add(sub, "run", RunArgs, "_batch", "cmd_run", corpus=True,
             help="run a batch: probes x arms x repetitions sessions",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _tier_args(p, plan_file=True)
    p.add_argument("--plan", type=Path, metavar="FILE",
                   help="a plan from `plan --format yaml|json` (its selection and tier)")
    _provider_args(p, scripted=True)
    _harness_args(p)
    _network_args(p)
    _batch_dir_arg(p)
    _workspace_path_arg(p)
    _limits_args(p)
    _session_limit_args(p)
    _budget_args(p)

    p = _add(sub, "demo", DemoArgs, "_batch", "cmd_demo",
             help="the bundled example corpus (tier campaign: arms present "
                                    "and absent, 2 repetitions, 16 sessions), the scripted "
                                    "provider, the real pinned CLI under real bwrap; session "
                                    "timeout 300 s, watchdog 120 s (short scripted sessions)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _batch_dir_arg(p)
    _harness_args(p)
    _network_args(p)
    _workspace_path_arg(p)
    p.add_argument("--concurrency", type=concurrency, metavar="N",
                   help=f"sessions at once (default {CONCURRENCY}, at most {MAX_POOL_USERS})")
    _budget_args(p)

    p = _add(sub, "resume", ResumeArgs, "_batch", "cmd_resume",
             help="run what did not finish in a batch, with its recorded "
                                      "options (never started, interrupted, or retryable)",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("--corpus", type=Path, metavar="DIR",
                   help="where the corpus is now (default: the path config.yaml records); it "
                        "must still plan to the same tree, read set, selection and lock")
    _budget_args(p)

    p = _add(sub, "status", StatusArgs, "_status", "cmd_status",
             help="how a batch stands, running or finished")
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("--json", action="store_true", help="one JSON object (docs/batch.md)")

    p = _add(sub, "show", ShowArgs, "_show", "cmd_show",
             help="one session's attempts: state and reason, calls, final "
                                    "text")
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("arm", metavar="ARM", help="the session's arm")
    p.add_argument("probe", metavar="PROBE", help="the probe's id")
    p.add_argument("session", metavar="SESSION", help="the session's name (s1, r2, ...)")

    p = _add(sub, "retranscribe", RetranscribeArgs, "_retranscribe", "cmd_retranscribe",
             help="derive a batch's events again from the streams it "
                                            "kept, with this recorder (runs nothing)")
    p.add_argument("batch", type=Path, metavar="BATCH", help="the batch directory")
    p.add_argument("--corpus", type=Path, metavar="DIR",
                   help="where the batch's corpus is now (default: the path config.yaml "
                        "records); it must still plan to the same tree")
    p = _add(sub, "report", ReportArgs, "_report", "cmd_report",
             help="arms side by side per probe: states, answers with 95%% "
                                      "intervals, differences, calls, reads, cost; describes, "
                                      "grades nothing (docs/report.md)")
    p.add_argument("batches", type=Path, nargs="+", metavar="BATCH",
                   help="batch directories; several are merged when their plan members and "
                        "arms agree")
    p.add_argument("--json", action="store_true",
                   help="print one versioned JSON object instead (docs/report.md)")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="also write the report as one self-contained HTML page, a chart per "
                        "probe")
    p.add_argument("--side-by-side", action="store_true",
                   help="show each batch in columns of its own instead of merging (needed when "
                        "their plans or arms differ)")

    p = _add(sub, "record", RecordArgs, "_record", "cmd_record", corpus=True,
             help="record one session into a batch (named r<N>)")
    p.add_argument("--probe", required=True, metavar="ID", help="the probe's id")
    p.add_argument("--arm", required=True, metavar="ARM",
                   help="an arm of the tier (present, absent, no-hook, no-skills, "
                        "no-claude-md, mcp)")
    p.add_argument("--tier",
                   help="a tier of probe.yml (default campaign); the arm must be one of its")
    p.add_argument("--seed", type=nonnegative_int, metavar="N",
                   help="the transcripts' identity seed (default 0)")
    _provider_args(p, scripted=True)
    p.add_argument("--produced", action="append", metavar="PATH",
                   help="an artifact the log cannot name (relative to the workspace unless "
                        "absolute); repeatable")
    _record_batch_dir_arg(p)
    p.add_argument("--session-timeout", dest="session_timeout_s", type=duration_s,
                   metavar="S", help=f"wall limit of the session (default "
                                     f"{SESSION_TIMEOUT_S:g} s)")
    p.add_argument("--watchdog", dest="watchdog_s", type=duration_s, metavar="S",
                   help=f"end the session when stdout is silent this long (default "
                        f"{WATCHDOG_S:g} s)")
    p.add_argument("--post-result-grace", dest="post_result_grace_s", type=duration_s,
                   metavar="S", help=f"see run (default {POST_RESULT_GRACE_S:g} s)")
    p.add_argument("--allow-identical-arms", action="store_true",
                   help="record an arm that would differ from present in nothing")
    _harness_args(p)
    _network_args(p)
    _workspace_path_arg(p)
    _session_limit_args(p)

    p = _add(sub, "seal", SealArgs, "_inspect", "cmd_seal", corpus=True,
             help="write one sealed workspace (the seal's rules: "
                                    "docs/sealing.md)")
    p.add_argument("--probe", required=True, metavar="ID", help="the probe whose session it is")
    p.add_argument("--arm", metavar="ARM", help="the arm (default present)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="where to write it (must not exist, or be empty)")
    p.add_argument("--explain", action="store_true", help="list every removal and why")

    p = _add(sub, "check-transcript", CheckTranscriptArgs, "_inspect", "cmd_check_transcript",
                       help="the contract check: 0 clean, 1 refused, 4 could not verify")
    p.add_argument("files", type=Path, nargs="+", metavar="FILE",
                   help="a transcript (transcripts/<arm>.md); several give one line each. "
                        "Exit 0 every file verified clean, 1 any refused, else 4 any could "
                        "not be verified")

    p = _add(sub, "doctor", DoctorArgs, "_inspect", "cmd_doctor",
             help="host preflight: 0 all ok, 12 broken, 4 could not verify")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="take the API key from this variable instead of the host's "
                        ".credentials.json")
    _harness_args(p)
    return parser
