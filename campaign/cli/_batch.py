"""``run``, ``demo`` and ``resume``: open a batch, supervise its sessions, say how it ended.

Each builds its options once, then goes through the same path (`execute`):
`open_batch` (prepare, lock, preflight, record), the `Supervisor` under the
live view, a summary, and the exit status of docs/cli.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from campaign._errors import CampaignError
from campaign._terminal_text import block
from campaign.batch import (
    SCRIPTED_API_KEY,
    BatchReading,
    BatchRequest,
    OpenBatch,
    batch_budget,
    compare_batch,
    open_batch,
    read_tree,
)
from campaign.corpus import Corpus, load_corpus
from campaign.expect import checked_expectations
from campaign.plan import Plan, compose_plan, load_plan_file, recompose
from campaign.seal import plan_seal, resolve_session
from campaign.supervisor import (
    BatchContext,
    Budgets,
    RunLimits,
    SessionSpec,
    Supervisor,
    session_order,
)
from demo import example_paths
from recorder import McpConfigError
from sandbox import Credentials, CredentialsMissing, host_credentials
from sandbox.gateway import login_problem

from ._args import (
    DemoArgs,
    ResumeArgs,
    RunArgs,
    batch_options,
    resolve_harness_path,
    resume_overrides,
)
from ._console import StderrConsole
from ._context import provider_ca_file, supervise
from ._ending import print_ending, print_header
from ._errors import EXIT_OK, PreflightStop, UsageError, batch_exit_status
from ._provider import loaded_scripts, start_provider
from ._reading import batch_reading
from ._view import LiveView

if TYPE_CHECKING:
    from collections.abc import Sequence

    from campaign.batch import BatchOptions

DEFAULT_TIER = "campaign"
"""The tier when neither --tier nor --plan names one."""


def checkout() -> Path:
    """The source tree this package runs from."""
    return Path(__file__).resolve().parents[2]


def default_harness_path() -> Path:
    """The pinned CLI that `make` installs under ``.harness/`` of the checkout (or of the cwd)."""
    for base in (checkout(), Path.cwd()):
        candidate = base / ".harness" / "node_modules" / ".bin" / "claude"
        if candidate.exists():
            return candidate
    return checkout() / ".harness" / "node_modules" / ".bin" / "claude"


def load_corpus_or_usage(root: Path) -> Corpus:
    """`load_corpus`, with its errors as usage errors (exit 2)."""
    try:
        corpus = load_corpus(root.expanduser().resolve())  # reads and checks its .mcp.json
    except McpConfigError as exc:  # a malformed .mcp.json is bad input, not a bug
        raise UsageError(f"corpus {root}: {exc}") from exc
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc
    return corpus


def recorded_corpus(reading: BatchReading, corpus: Path | None) -> Corpus:
    """The corpus a batch ran over: at ``corpus`` or the path config.yaml records, loaded and
    held to the batch (the same probes, read set and tree), for the commands that derive the
    batch's events again (``retranscribe``, ``check-transcript --batch``).

    Raises:
        UsageError: no corpus loads there, or it is not the one the batch ran over (says what
            moved and that ``--corpus DIR`` gives the right one).
    """
    batch, recorded = reading.path, reading.plan
    loaded = load_corpus_or_usage(corpus or Path(reading.config.options.corpus))
    try:
        current = recompose(recorded, loaded).model_copy(update={
            "model": recorded.model, "runner_version": recorded.runner_version})
    except CampaignError as exc:
        raise UsageError(f"batch {batch}: {exc}") from exc
    moved = compare_batch(recorded, current, recorded_harness_version="",
                          current_harness_version="", recorded_tree=read_tree(batch),
                          current_tree=loaded.files)
    if moved:
        raise UsageError(f"batch {batch}: the corpus is not the one the batch ran over: "
                         f"{'; '.join(moved)}; give that corpus with --corpus DIR")
    return loaded


def compose(corpus: Corpus, *, tier: str | None, seed: int, plan_file: Path | None,
            model: str | None, probes: Sequence[str] = ()) -> Plan:
    """The plan of this invocation (``--plan FILE`` or composed), with ``--model`` applied;
    ``probes`` (``--probe ID``, repeatable) chooses a subset of the shelf (empty: all).

    Raises:
        UsageError: an unknown tier, a bad plan file, a tier that differs from the plan's,
            ``--probe`` with ``--plan``, an unknown probe id, an ``expect:`` that breaks a
            rule (docs/expectations.md).
    """
    if probes and plan_file is not None:
        raise UsageError(f"--probe and --plan {plan_file} both choose the probes; give one of "
                         "them (a plan file's probes are its selection)")
    try:
        if plan_file is not None:
            plan = load_plan_file(plan_file, corpus)
            if tier is not None and tier != plan.tier:
                raise UsageError(f"--tier {tier} differs from the tier of --plan {plan_file} "
                                 f"({plan.tier}); give one of them")
        else:
            plan = compose_plan(corpus, tier=tier or DEFAULT_TIER, seed=seed,
                                probes=probes or None)
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc
    return plan.model_copy(update={"model": model}) if model else plan


def check_sealed_paths(corpus: Corpus, plan: Plan) -> None:
    """Refuse an ``opened`` or ``not_opened`` path of a probe of ``plan`` that the seal removes
    from the probe's workspaces for what it holds or how it is named (its content or path
    names the probe): no session can open it. The path rules alone (the shelf,
    ``.headwater/``, the answer keys) are checked when the plan is composed; this takes the
    seal's plan of the probe's present arm (every file read), so only probes that declare
    paths are sealed (docs/expectations.md).

    Raises:
        UsageError: such a path, naming the probe file, the key, the path and the seal's reason.
    """
    try:
        declared = checked_expectations(corpus, [p.id for p in plan.probes])
        for probe_id, expect in declared.items():
            wanted = {"opened": set(expect.opened or ()),
                      "not_opened": set(expect.not_opened or ())}
            if not wanted["opened"] | wanted["not_opened"]:
                continue
            sealed = plan_seal(corpus, resolve_session(corpus, probe_id, "present"))
            for decision in sealed.decisions:
                key = next((k for k, paths in wanted.items() if decision.path in paths), None)
                if decision.action != "remove" or key is None:
                    continue
                reason = decision.removals[0].reason if decision.removals else "removed"
                raise UsageError(
                    f"corpus {corpus.root}: {corpus.probes[probe_id].path}: expect: {key}: "
                    f"{decision.path!r} is never in a session's workspace (the seal removes "
                    f"it: {reason}), so no session can open it; `headwater-campaign seal "
                    f"{corpus.root} --probe {probe_id} --out DIR --explain` lists each removal "
                    "and why (docs/sealing.md)")
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc


def credentials_for(options: BatchOptions) -> Credentials:
    """The credential the batch's gateway forwards with (never a session's: each gets its
    gateway's placeholder): a fixed key for the scripted provider, else the host's.

    Raises:
        PreflightStop: none are there, or the host's login has expired (exit 12, nothing
            spent), with the fix.
    """
    if options.provider == "scripted":
        return Credentials(credentials_file=None, api_key_env=None, api_key=SCRIPTED_API_KEY)
    try:
        found = host_credentials(api_key_env=options.api_key_env, environ=os.environ)
        problem = login_problem(found)
    except CredentialsMissing as exc:
        raise PreflightStop(f"{exc}; nothing was started or spent. Fix: log in with Claude "
                            "Code on the host, or pass --api-key-env NAME (for a dry run "
                            "without credentials: --provider scripted --scripts DIR)") from exc
    if problem is not None:  # the gateway never refreshes: every session would fail on it
        raise PreflightStop(f"{problem}; nothing was started or spent")
    return found


@dataclass(frozen=True, slots=True)
class _Invocation:
    mode: str
    options: BatchOptions
    corpus: Corpus
    plan: Plan
    batch_dir: Path | None
    sets_budget: bool = False
    reading: BatchReading | None = None
    """resume: the batch as read (`open_batch` goes on from it)."""
    provider_ca: Path | None = None
    """``--provider-ca FILE`` as given (checked by `execute`); None: the system's trust."""


def cmd_run(args: RunArgs) -> int:
    """``run``: a batch of probes x arms x repetitions sessions."""
    corpus = load_corpus_or_usage(args.corpus)
    plan = compose(corpus, tier=args.tier, seed=args.seed,
                   plan_file=args.plan, model=args.model, probes=args.probes)
    check_sealed_paths(corpus, plan)
    harness_path = resolve_harness_path(args.harness_path, default_harness_path())
    options = batch_options(args, corpus=corpus.root, tier=plan.tier, harness_path=harness_path,
                            model=plan.model)
    return execute(_Invocation("new", options, corpus, plan, args.batch_dir,
                               provider_ca=args.provider_ca))


def cmd_demo(args: DemoArgs) -> int:
    """``demo``: the bundled example corpus, tier campaign, the scripted provider, the real
    pinned CLI under real bwrap."""
    harness_path = resolve_harness_path(args.harness_path, default_harness_path())
    with example_paths() as (corpus_root, scripts_dir):  # the demo double's own corpus
        corpus = load_corpus_or_usage(corpus_root)
        plan = compose(corpus, tier=args.tier, seed=args.seed, plan_file=None, model=None)
        options = batch_options(replace(args, scripts=scripts_dir), corpus=corpus.root,
                                tier=plan.tier, harness_path=harness_path, model=plan.model)
        return execute(_Invocation("new", options, corpus, plan, args.batch_dir,
                                   provider_ca=args.provider_ca))


def cmd_resume(args: ResumeArgs) -> int:
    """``resume BATCH``: run what did not finish, with the batch's recorded options."""
    batch = args.batch.expanduser().resolve()
    # Read once: config.yaml, plan.yaml and the ledger (with the transcripts, which the
    # journal goes on from when nothing was appended before the lock is taken).
    with batch_reading(batch, hint="`resume` takes a batch directory made by run or demo",
                       transcripts=True) as reading:
        return _resume(args, batch, reading)


def _resume(args: ResumeArgs, batch: Path, reading: BatchReading) -> int:
    config, recorded, fold = reading.config, reading.plan, reading.fold
    if config.options.command == "record":
        raise UsageError(f"batch {batch} was made by `record`, one session at a time; "
                         "record the next session with `record`")
    # A flag is checked as a run checks it whether or not anything is left to run: a bad
    # --provider-ca is bad input (exit 2) even on a finished batch.
    provider_ca_file(args.provider_ca)
    overrides = resume_overrides(args)
    _check_wall(overrides.apply(config.options))
    if not fold.outstanding():
        print(f"nothing to resume: every session of {batch} is finished "
              f"(`headwater-campaign status {batch}`)")
        print(f"batch: {batch}")
        return EXIT_OK
    # The last budget given stays the batch's until another is given (docs/batch.md).
    budget = batch_budget(config, fold.last_run).max_cost_cents
    options = overrides.apply(config.options.model_copy(update={"max_cost_cents": budget}))
    corpus = load_corpus_or_usage(Path(options.corpus))
    try:
        plan = recompose(recorded, corpus)
    except CampaignError as exc:
        raise UsageError(f"batch {batch}: {exc}; the corpus changed since the batch was "
                         "made, so it cannot be resumed") from exc
    plan = plan.model_copy(update={"model": recorded.model})
    return execute(_Invocation("resume", options, corpus, plan, batch,
                               sets_budget=overrides.max_cost_cents is not None,
                               reading=reading, provider_ca=args.provider_ca))


def execute(inv: _Invocation) -> int:
    """Open the batch, run its outstanding sessions under the view, report; the exit status."""
    err = StderrConsole()
    options = inv.options
    _check_wall(options)
    provider_ca = provider_ca_file(inv.provider_ca)  # before the batch is opened: exit 2
    if options.provider == "scripted" and inv.mode == "new":
        loaded_scripts(options)  # a script that does not load leaves no batch directory made
    order = tuple(session_order(inv.plan))  # the batch order, once: planned, counted, run
    request = BatchRequest(
        provider=start_provider,
        mode="resume" if inv.mode == "resume" else "new", options=options, corpus=inv.corpus,
        plan=inv.plan, credentials=credentials_for(options), batch_dir=inv.batch_dir,
        planned=tuple((spec.key, spec.repetition) for spec in order), arms_used=inv.plan.arms,
        probes_used=tuple(p.id for p in inv.plan.probes), sets_budget=inv.sets_budget,
        reading=inv.reading)
    with open_batch(request, notify=lambda text: err.print(block(text), markup=False,
                                                           soft_wrap=True)) as opened:
        specs = _outstanding(opened, order)
        print_header(err, opened, len(specs), inv.mode)
        with LiveView() as view:
            def build(ctx: BatchContext) -> Supervisor:
                return _supervisor(opened, ctx, view)

            outcome = anyio.run(partial(supervise, opened, build, specs,
                                        provider_ca=provider_ca), backend="trio")
        print_ending(opened, outcome, err)
    return batch_exit_status(outcome)


def _check_wall(options: BatchOptions) -> None:
    """Refuse ``--hard-wall`` with no wall-clock budget to be hard at (given or recorded).

    Raises:
        UsageError: ``hard_wall`` without ``max_wall_s``.
    """
    if options.hard_wall and options.max_wall_s is None:
        raise UsageError("--hard-wall needs --max-wall D: it cancels the sessions still "
                         "running when that wall-clock budget is reached (docs/batch.md, "
                         "\"Budgets\")")


def _outstanding(opened: OpenBatch, order: Sequence[SessionSpec]) -> list[SessionSpec]:
    """The sessions of ``order`` (the batch's, `session_order`) still outstanding once the
    batch is open: new to the ledger, or left in a state worth another attempt."""
    fold = opened.journal.fold
    return [spec for spec in order
            if spec.key not in fold.sessions or fold.sessions[spec.key].outstanding]


def _supervisor(opened: OpenBatch, ctx: BatchContext, view: LiveView) -> Supervisor:
    options = opened.options
    limits = RunLimits(concurrency=options.concurrency, retries=options.retries,
                       backoff_s=options.retry_backoff_s,
                       budgets=Budgets(max_cost_cents=options.max_cost_cents,
                                       est_session_cents=options.est_session_cents,
                                       max_wall_s=options.max_wall_s,
                                       hard_wall=options.hard_wall))
    return Supervisor(ctx, opened.journal, limits, view)
