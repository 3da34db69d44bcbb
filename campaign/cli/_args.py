"""What each command was given: one frozen object per command, built once from the parse.

`campaign.cli._parser.parse_command` turns argparse's namespace into one of
these right after parsing (a dest the command's class does not name is a bug,
refused there); from then on no code reads a namespace. A field's default is
the command's default: where a flag was not given, argparse leaves its name
out (``argument_default=SUPPRESS``) and the class's default stands, so each
default is written once, here, with the constant ``--help`` quotes.

`batch_options` builds the frozen `BatchOptions` of a new batch directly from
`RunArgs`, `DemoArgs` or `RecordArgs`; `resume_overrides` builds `resume`'s
`ResumeOverrides` from `ResumeArgs`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import ValidationError

from campaign.batch import (
    CONCURRENCY,
    RETRIES,
    RETRY_BACKOFF_S,
    SESSION_TIMEOUT_S,
    WATCHDOG_S,
    BatchOptions,
    ResumeOverrides,
)
from recorder import POST_RESULT_GRACE_S
from sandbox import (
    DEFAULT_CONNECTIONS,
    DEFAULT_MEMORY_BYTES,
    DEFAULT_OPEN_FILES,
    DEFAULT_PIDS,
    DEFAULT_STDOUT_BYTES,
    DEFAULT_TMP_BYTES,
    DEFAULT_WRITE_BYTES,
    default_workspace_path,
)

from ._errors import UsageError

DEMO_SESSION_TIMEOUT_S = 300.0
"""The demo's sessions are short scripted ones: a hung one is ended after 5 minutes."""
DEMO_WATCHDOG_S = 120.0


@dataclass(frozen=True, kw_only=True)
class NewBatchArgs:
    """Every value a new batch takes from its command line (`batch_options`), with the
    defaults of ``run``; a command that does not offer a flag runs with its default."""

    COMMAND: ClassVar[Literal["run", "demo", "record"]] = "run"
    """The command whose batch these arguments make (``options.command`` in config.yaml)."""

    tier: str | None = None
    """``--tier``; None = the plan's, else ``campaign``."""
    seed: int = 0
    plan: Path | None = None
    """``--plan FILE`` as given."""
    model: str | None = None
    provider: Literal["anthropic", "scripted"] = "anthropic"
    scripts: Path | None = None
    provider_url: str | None = None
    api_key_env: str | None = None
    provider_ca: Path | None = None
    """``--provider-ca FILE``: the CA certificates the provider's TLS is checked against
    (None: the system's); per invocation, not recorded in the batch."""
    harness_path: Path | None = None
    """``--harness PATH``: the claude executable; None = the pinned CLI under ``.harness/``."""
    bwrap: str = "bwrap"
    network: Literal["confined", "host"] | None = None
    batch_dir: Path | None = None
    workspace_path: str | None = None
    """``--workspace-path`` (checked, normalised); None = under /workspace, by the corpus."""
    concurrency: int = CONCURRENCY
    session_timeout_s: float = SESSION_TIMEOUT_S
    watchdog_s: float = WATCHDOG_S
    post_result_grace_s: float = POST_RESULT_GRACE_S
    retry_backoff_s: float = RETRY_BACKOFF_S
    discard_workspaces: bool = False
    keep_streams: bool = True
    allow_identical_arms: bool = False
    retries: int = RETRIES
    max_cost_cents: int | None = None
    est_session_cents: int | None = None
    max_wall_s: float | None = None
    hard_wall: bool = False
    max_processes: int = DEFAULT_PIDS
    max_memory_bytes: int = DEFAULT_MEMORY_BYTES
    max_tmp_bytes: int = DEFAULT_TMP_BYTES
    max_write_bytes: int = DEFAULT_WRITE_BYTES
    max_open_files: int = DEFAULT_OPEN_FILES
    max_connections: int = DEFAULT_CONNECTIONS
    max_stdout_bytes: int = DEFAULT_STDOUT_BYTES


@dataclass(frozen=True, kw_only=True)
class RunArgs(NewBatchArgs):
    """``run``: a batch of probes x arms x repetitions sessions over ``corpus``."""

    corpus: Path
    probes: tuple[str, ...] = ()
    """``--probe ID`` (repeatable): the probes chosen; empty = every probe of the shelf."""


@dataclass(frozen=True, kw_only=True)
class DemoArgs(NewBatchArgs):
    """``demo``: the bundled corpus and scripts (``scripts`` is set by the command, from
    the demo's own files), seed 0, short session bounds."""

    COMMAND: ClassVar[Literal["run", "demo", "record"]] = "demo"
    provider: Literal["anthropic", "scripted"] = "scripted"
    session_timeout_s: float = DEMO_SESSION_TIMEOUT_S
    watchdog_s: float = DEMO_WATCHDOG_S


@dataclass(frozen=True, kw_only=True)
class RecordArgs(NewBatchArgs):
    """``record``: one session of ``probe`` x ``arm`` into ``batch_dir``, never retried."""

    COMMAND: ClassVar[Literal["run", "demo", "record"]] = "record"
    corpus: Path
    probe: str
    arm: str
    batch_dir: Path
    """Required: a batch to add to, or a new or empty directory to start one in."""
    produced: tuple[str, ...] = ()
    retries: int = 0


@dataclass(frozen=True, kw_only=True)
class ResumeArgs:
    """``resume BATCH``: what this invocation replaces of the recorded options (None: as
    recorded; the budget's rule is docs/batch.md, "Budgets")."""

    batch: Path
    corpus: Path | None = None
    provider_ca: Path | None = None
    """``--provider-ca FILE`` for this invocation (a batch records no CA file)."""
    retries: int | None = None
    max_cost_cents: int | None = None
    est_session_cents: int | None = None
    max_wall_s: float | None = None
    hard_wall: bool | None = None


@dataclass(frozen=True, kw_only=True)
class PlanArgs:
    """``plan``: the plan of ``tier`` over ``corpus``, printed as ``format``."""

    corpus: Path
    tier: str | None = None
    seed: int = 0
    format: Literal["text", "yaml", "json"] = "text"
    probes: tuple[str, ...] = ()
    """``--probe ID`` (repeatable): the probes chosen; empty = every probe of the shelf."""
    base_rate: float = 0.5
    """``--base-rate P``: the satisfied share the sizing assumes for the reference arm."""
    from_batch: Path | None = None
    """``--from BATCH``: a batch whose per-session cost and wall time project this plan's."""
    concurrency: int = CONCURRENCY
    """``--concurrency N``: sessions at once, as ``run`` would run them (the wall projection)."""


@dataclass(frozen=True, kw_only=True)
class SealArgs:
    """``seal``: one sealed workspace of ``probe`` x ``arm`` written to ``out``."""

    corpus: Path
    probe: str
    arm: str = "present"
    out: Path
    explain: bool = False


@dataclass(frozen=True, kw_only=True)
class CheckTranscriptArgs:
    """``check-transcript``: the contract check of each file; with ``batch``, each file held
    to that batch's evidence too (``corpus``: where the batch's corpus is now)."""

    files: tuple[Path, ...]
    batch: Path | None = None
    corpus: Path | None = None


@dataclass(frozen=True, kw_only=True)
class DoctorArgs:
    """``doctor``: the host preflight, with the harness and bwrap a batch would use."""

    api_key_env: str | None = None
    harness_path: Path | None = None
    bwrap: str = "bwrap"


@dataclass(frozen=True, kw_only=True)
class StatusArgs:
    """``status``: how ``batch`` stands."""

    batch: Path
    json: bool = False


@dataclass(frozen=True, kw_only=True)
class ShowArgs:
    """``show``: one session's attempts."""

    batch: Path
    arm: str
    probe: str
    session: str


@dataclass(frozen=True, kw_only=True)
class RetranscribeArgs:
    """``retranscribe``: ``batch``'s events derived again; ``corpus`` where it is now."""

    batch: Path
    corpus: Path | None = None


@dataclass(frozen=True, kw_only=True)
class ReportArgs:
    """``report``: the arms of ``batches`` side by side per probe."""

    batches: tuple[Path, ...]
    json: bool = False
    html: Path | None = None
    side_by_side: bool = False


@dataclass(frozen=True, kw_only=True)
class GradeArgs:
    """``grade``: the verdicts of ``batches`` against the expectations of ``corpus`` (None: the
    path the first batch's config.yaml records)."""

    batches: tuple[Path, ...]
    corpus: Path | None = None
    json: bool = False


CommandArgs = (NewBatchArgs | ResumeArgs | PlanArgs | SealArgs | CheckTranscriptArgs
               | DoctorArgs | StatusArgs | ShowArgs | RetranscribeArgs | ReportArgs
               | GradeArgs)
"""What any command was given."""


def resolve_harness_path(path: Path | None, default: Path) -> Path:
    """The harness executable, resolved.

    Raises:
        UsageError: it does not exist or is not executable (says how to install the pinned one).
    """
    harness = (path or default).expanduser()
    if not harness.exists():
        hint = "run `make harness` to install the pinned Claude Code CLI" if path is None \
            else "check --harness"
        raise UsageError(f"harness {harness} does not exist ({hint})")
    resolved = harness.resolve()
    if not os.access(resolved, os.X_OK):
        raise UsageError(f"harness {resolved} is not executable")
    return resolved


def batch_options(args: NewBatchArgs, *, corpus: Path, tier: str, harness_path: Path,
                  model: str) -> BatchOptions:
    """The options of a new batch (``args.COMMAND``) over the resolved ``corpus``, with the
    plan's ``tier`` and ``model`` and the resolved ``harness_path``.

    Raises:
        UsageError: a combination the options refuse (the message names the flags and says
            the rule).
    """
    if args.provider == "scripted" and args.scripts is None:
        raise UsageError("--provider scripted needs --scripts DIR: the directory of the "
                         "provider's scripts (docs/provider.md)")
    if args.provider != "scripted" and args.scripts is not None:
        raise UsageError("--scripts DIR is for --provider scripted")
    try:
        return BatchOptions(
            command=args.COMMAND, corpus=str(corpus), tier=tier, seed=args.seed,
            plan_file=str(args.plan.resolve()) if args.plan is not None else None,
            model=model, harness_path=str(harness_path), bwrap=args.bwrap, provider=args.provider,
            provider_url=_provider_url(args),
            scripts=str(args.scripts.resolve()) if args.scripts is not None else None,
            api_key_env=args.api_key_env, network=args.network,
            workspace_path=args.workspace_path or default_workspace_path(corpus.name),
            concurrency=args.concurrency, session_timeout_s=args.session_timeout_s,
            watchdog_s=args.watchdog_s, post_result_grace_s=args.post_result_grace_s,
            retries=args.retries, retry_backoff_s=args.retry_backoff_s,
            max_cost_cents=args.max_cost_cents, est_session_cents=args.est_session_cents,
            max_wall_s=args.max_wall_s, hard_wall=args.hard_wall,
            discard_workspaces=args.discard_workspaces, keep_streams=args.keep_streams,
            allow_identical_arms=args.allow_identical_arms,
            max_processes=args.max_processes, max_memory_bytes=args.max_memory_bytes,
            max_tmp_bytes=args.max_tmp_bytes, max_write_bytes=args.max_write_bytes,
            max_open_files=args.max_open_files, max_connections=args.max_connections,
            max_stdout_bytes=args.max_stdout_bytes)
    except ValidationError as exc:
        raise UsageError(f"{args.COMMAND}: {exc}") from exc


def _provider_url(args: NewBatchArgs) -> str | None:
    if args.provider == "scripted":
        if args.provider_url:
            raise UsageError("--provider-url is for a real provider; the scripted provider "
                             "starts on loopback by itself")
        return None
    return args.provider_url or os.environ.get("ANTHROPIC_BASE_URL") or None


def resume_overrides(args: ResumeArgs) -> ResumeOverrides:
    """What ``resume``'s flags replace of the recorded options."""
    return ResumeOverrides(
        corpus=str(args.corpus.expanduser().resolve()) if args.corpus else None,
        retries=args.retries, max_cost_cents=args.max_cost_cents,
        est_session_cents=args.est_session_cents, max_wall_s=args.max_wall_s,
        hard_wall=args.hard_wall)
