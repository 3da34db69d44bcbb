"""``open_batch``: prepare, lock, preflight and record a batch, the same way for every command.

run and demo make a new batch; resume continues one; record adds a session
to one. All four go through `open_batch`, which, in this order and before
anything is spent:

1. refuses what no session could fix (a fold that states an answer, an arm
   that would differ from present in nothing);
2. resolves and checks the batch directory (outside ``$HOME``, RC-06; new and
   empty for run/demo; a batch for resume/record) and takes its lock;
3. for an existing batch, compares it with what this invocation would run and
   refuses (exit 2) naming what moved (`compare_batch`);
4. sweeps credentials copies left by killed runners, makes the session user
   of a root runner, runs the confinement preflight (exit 12 when it fails)
   and settles the network mode;
5. starts the scripted provider when the batch uses it;
6. writes plan.yaml and config.yaml for a new batch, opens the journal
   (ledger, fold, transcripts) and appends this invocation's record; then, when this
   invocation sets the batch's cost budget (a new batch, ``resume --max-cost-cents``),
   records it and this invocation in config.yaml's ``budget`` (docs/batch.md, "Budgets");
7. on exit, however the invocation ends, takes back the search grants a root
   runner gave its session users on the batch's directories, then lets the
   lock go (`sandbox.grants_revoked`, docs/host.md).

Library code never prints: notices go to the ``notify`` callback.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from campaign._errors import CampaignError
from campaign.corpus import corpus_notes, large_file_notes
from campaign.plan import ORDER_ALGORITHM, Plan, arms_without_effect, runner_version
from campaign.seal import ResolvedSessions, resolve_sessions
from sandbox import (
    Check,
    Credentials,
    PreflightFailed,
    PreflightReport,
    SessionUserUnusable,
    ensure_session_pool,
    grants_revoked,
    network_preflight,
    raise_for,
    sweep_config_root,
    sweep_killed_runners,
)
from sandbox.storage import stores_kernel_bounded

from ._config import (
    CONFIG_FORMAT,
    ArmFacts,
    BatchConfig,
    BatchFacts,
    OrderFacts,
    budget_set_by,
    read_config,
    read_plan,
    workspace_note,
    write_config,
)
from ._config import write_plan as _write_plan
from ._dir import prepare_batch_dir
from ._harness import bounded_version
from ._journal import Journal
from ._lock import LOCK_NAME, BatchLock
from ._preflight import sandbox_checks
from ._provider import ProviderStart, ScriptedDouble
from ._records import InvocationRecord
from ._tree import files_moved, read_tree, write_tree

if TYPE_CHECKING:
    from campaign.corpus import Corpus

    from ._fold import SessionKey
    from ._options import BatchOptions
    from ._reader import BatchReading

Mode = Literal["new", "resume", "record"]
"""How a batch is opened: a new one (run, demo; its directory must be empty), an existing
one whose outstanding sessions run again (resume), or one a session is added to (record)."""
SCRIPTED_API_KEY: Final = "sk-headwater-scripted-provider"
"""The key the batch's provider gateway forwards with to the scripted provider, which accepts
anything; not a secret. Sessions never get it: each gets its gateway's placeholder
(docs/gateway.md names it, so a reader knows the demo billed nothing)."""

RUN_SETTINGS: Final = ("model", "tier")
"""Plan members a continued batch keeps besides the measurement's (`Plan.COMPARABLE`): the
model its sessions asked for and the tier that named its arms."""


class BatchRefused(CampaignError):
    """The batch cannot be opened as asked: bad input, not a batch, or it changed (exit 2)."""


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """What to open: the options, the corpus and plan they give, and how."""

    mode: Mode
    options: BatchOptions
    corpus: Corpus
    plan: Plan
    credentials: Credentials
    batch_dir: Path | None
    """As given (``--batch-dir`` or resume's BATCH); None = a new default directory."""
    planned: tuple[tuple[SessionKey, int], ...]
    """The planned sessions and their repetitions (``record``: none)."""
    arms_used: tuple[str, ...]
    """The arms this invocation may run (``record``: its one arm)."""
    probes_used: tuple[str, ...]
    provider: ProviderStart = field(kw_only=True)
    """Starts the batch's provider (the command line's `campaign.cli._provider`)."""
    sets_budget: bool = False
    """``resume --max-cost-cents N`` was given: this invocation sets the batch's cost budget
    (config.yaml's ``budget``; a new batch's first invocation always sets it)."""
    reading: BatchReading | None = field(default=None, kw_only=True)
    """``resume``: the batch as the caller read it (`read_batch`, with its transcripts). Once
    the lock is taken, when its ledger is still as read (no invocation began since), its
    config, plan and fold are used instead of reading the files again."""


@dataclass(frozen=True, slots=True)
class OpenBatch:
    """An opened batch: locked, preflighted, recorded; its journal open."""

    path: Path
    options: BatchOptions
    config: BatchConfig
    plan: Plan
    corpus: Corpus
    journal: Journal
    invocation: int
    provider_url: str
    network: Literal["confined", "host"]
    credentials: Credentials
    scripted: ScriptedDouble | None = None
    """The scripted provider this invocation started, when the batch uses one."""
    sessions: ResolvedSessions = field(kw_only=True)
    """The sessions this invocation may run, resolved once (`campaign.seal.resolve_sessions`)."""


def _refuse_unfixable(request: BatchRequest,
                      notify: Callable[[str], None]) -> ResolvedSessions:
    """The batch's sessions resolved once (each probe's folds checked: a bad one refuses),
    after refusing what no retry would fix; notes and warnings to ``notify``."""
    plan, used = request.plan, frozenset(request.probes_used)
    sessions = resolve_sessions(request.corpus, [p for p in plan.probes if p.id in used],
                                [plan.arm_spec(arm) for arm in request.arms_used])
    same = arms_without_effect(request.corpus, request.arms_used, plan.tools,
                               identities={a.arm: a.identity for a in plan.arm_specs})
    if same and not request.options.allow_identical_arms:
        raise BatchRefused("; ".join(same) + ". Its sessions would repeat that arm's; drop the "
                           "arm from the tier, or pass --allow-identical-arms to run it anyway")
    for line in same:
        notify(f"warning: {line} (run anyway: --allow-identical-arms)")
    for line in [*corpus_notes(request.corpus), *large_file_notes(request.corpus)]:
        notify(f"note: {line}")
    return sessions


def compare_batch(recorded: Plan, current: Plan, *, recorded_harness_version: str,
                  current_harness_version: str, recorded_tree: Mapping[str, str] | None = None,
                  current_tree: Mapping[str, str] | None = None) -> list[str]:
    """What moved between the batch as recorded and this invocation, in words; [] = nothing.

    The plan members that make two batches the same measurement (`Plan.COMPARABLE`: tree,
    lock, selection, read set, seed, the planner's version ``runner_version``, the arms and their
    identities); then what this invocation runs with besides (`RUN_SETTINGS`: the model,
    the tier) and the harness's (Claude Code's) version. The read set's files that moved are
    named from plan.yaml; the others from the batch's ``tree.json``
    (``recorded_tree``, against ``current_tree``, `Corpus.files`), when it has one.
    """
    moved = []
    members = [m for m in recorded.moved(current) if m != "arm_specs"]  # the arms: below
    for member in [*members, *(m for m in RUN_SETTINGS if
                              getattr(recorded, m) != getattr(current, m))]:
        moved.append(f"{Plan.key(member)} was {getattr(recorded, member)}, is now "
                     f"{getattr(current, member)}")
    files = files_moved({f.path: f.digest for f in recorded.read_set_files},
                        {f.path: f.digest for f in current.read_set_files},
                        where="in the read set")  # fmt: skip
    if files:
        moved.append(files)
        moved += _probe_files_moved(recorded, current)
    if recorded.tree != current.tree:
        outside = _outside_read_set(recorded, current, recorded_tree, current_tree)
        if outside is not None:
            moved.append(outside)
        elif not files:
            moved.append("a file outside the read set changed, was added or was removed (the "
                         "tree covers every file of the corpus; this batch keeps no listing "
                         "of them, so which one cannot be said)")
    if "arm_specs" in recorded.moved(current):
        was = ", ".join(f"{a.arm} {a.identity[:19]}" for a in recorded.arm_specs)
        now = ", ".join(f"{a.arm} {a.identity[:19]}" for a in current.arm_specs)
        moved.append(f"the arms (with their identities) were {was}, are now {now}")
    if recorded_harness_version != current_harness_version:
        moved.append(f"the harness version was {recorded_harness_version!r}, is now "
                     f"{current_harness_version!r}")
    return moved


def _probe_files_moved(recorded: Plan, current: Plan) -> list[str]:
    """For each probe whose own file changed between the two plans: that its ``expect:`` is
    part of the read set (so an edit of the expectations alone moves it), and that ``grade``
    still grades the batch as it stands (docs/expectations.md)."""
    now = {p.id: p.digest for p in current.probes}
    return [f"probe {p.id}'s document {p.path} changed: a probe's file, with the expectations "
            "of its `expect:`, is part of the read set, so editing only the expectations moves "
            "the read set too; `grade` still grades this batch as it stands, its verdicts "
            "marked \"graded over a moved read set\""
            for p in recorded.probes if p.id in now and now[p.id] != p.digest]


def _outside_read_set(recorded: Plan, current: Plan, before: Mapping[str, str] | None,
                      now: Mapping[str, str] | None) -> str | None:
    """The files outside both read sets that moved, named from the two listings; None when
    either listing is missing or nothing outside moved."""
    if before is None or now is None:
        return None
    read = {f.path for f in recorded.read_set_files} | {f.path for f in current.read_set_files}
    return files_moved({p: d for p, d in before.items() if p not in read},
                       {p: d for p, d in now.items() if p not in read},
                       where="outside the read set")  # fmt: skip


def _preflight(options: BatchOptions, notify: Callable[[str], None]) -> str:
    """Sweep, make the session users, run the checks; the harness's version from inside.

    The sweep comes first: what a killed runner left is ended before any session user is
    leased (`sandbox.lease_user`). A root runner then makes sure its pool holds a user for each
    session it runs at once (``--concurrency``; `sandbox.ensure_session_pool`).

    Raises:
        PreflightFailed: a check is not verified ok (a pool that cannot be made: the
            session-user check, with the fix).
    """
    for left in sweep_config_root():
        notify(f"removed a session config directory left by a killed runner: {left}")
    for left in sweep_killed_runners():
        notify(f"ended and removed what a killed runner left: {left}")
    try:
        _, created = ensure_session_pool(options.concurrency)
        for user in created:
            notify(f"created the system user {user.name} (uid {user.uid}, gid {user.gid}): a "
                   "root runner's sessions run each as a session user of its own")
    except SessionUserUnusable as exc:  # useradd's own words, or the bound: before any check
        raise PreflightFailed(PreflightReport((Check(
            "session-user", "broken", exc.detail, exc.fix),))) from exc
    report = sandbox_checks(bwrap=options.bwrap, harness=Path(options.harness_path),
                            host_skill_dirs=host_skill_dirs())
    raise_for(report)
    return bounded_version(report.harness_version or "unknown")


def _network(options: BatchOptions,
             notify: Callable[[str], None]) -> tuple[Literal["confined", "host"], str]:
    """Settle the network mode: host as asked; confined when verified; else a fallback or stop."""
    if options.network == "host":
        return "host", "asked: --network host"
    check = network_preflight(bwrap=options.bwrap)
    if check.verdict == "ok":
        return "confined", "verified by the network preflight"
    line = f"network: {check.verdict}: {check.detail}" + (f" (fix: {check.fix})"
                                                          if check.fix else "")
    if options.network == "confined":
        raise PreflightFailed(PreflightReport((check,)), "--network confined: the network "
                              "preflight failed; nothing was started or spent:")
    notify("warning: network confinement is not available here, so sessions share the host's "
           f"network (the transcripts say so): {line}")
    return "host", f"fell back from confined: {line}"


def host_skill_dirs() -> tuple[Path, ...]:
    """The runner's skill directories whose names RC-07 refuses in a session's init line."""
    dirs = [Path.home() / ".claude" / "skills"]
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        dirs.append(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "skills")
    return tuple(dirs)


def provider_note(options: BatchOptions, url: str) -> str:
    """The sentences every transcript, config.yaml and the console say about the provider;
    for the scripted provider, that no model ran and that nothing was billed (its usage is
    priced all the same, so a reader of the cost figures must be told)."""
    if options.provider == "scripted":
        return ("Provider: scripted. The sessions ran against a loopback test double that "
                f"plays fixed scripts ({options.scripts}); no model ran, so these events "
                "measure the runner and the corpus's plumbing, not a model. Nothing was "
                "billed: the cost figures price the token usage the scripts report with the "
                "shipped price table, as a real provider's usage would be priced.")
    return f"Provider: the Messages API at {url}."


def _existing(path: Path, request: BatchRequest, harness_version: str,
              reading: BatchReading | None) -> BatchConfig | None:
    """The config of the batch at ``path`` once checked against the request; None = no batch
    yet (an empty directory, which ``record`` may start). ``reading``: the batch as read
    (its files are not read again)."""
    if reading is None and not (path / "plan.yaml").exists():
        if any(p.name != LOCK_NAME for p in path.iterdir()):
            raise BatchRefused(f"{path} is not empty and holds no plan.yaml: it is not a batch; "
                               "pass an empty or new --batch-dir")
        if request.mode == "resume":
            raise BatchRefused(f"{path} holds no batch (no plan.yaml): nothing to resume")
        return None
    config = reading.config if reading is not None else read_config(path)
    what = "resume it" if request.mode == "resume" else "record into it"
    _refuse_other_format(path, config, what)
    moved = compare_batch(reading.plan if reading is not None else read_plan(path), request.plan,
                          recorded_harness_version=config.facts.harness_version,
                          current_harness_version=harness_version, recorded_tree=read_tree(path),
                          current_tree=request.corpus.files)
    if config.options.workspace_path != request.options.workspace_path:
        moved.append(f"the workspace path: the batch's sessions ran at "
                     f"{config.options.workspace_path}, this run's at "
                     f"{request.options.workspace_path} (--workspace-path)")
    if moved:
        raise BatchRefused(f"batch {path} was made with other inputs, so this run would not "
                           f"measure the same thing: {'; '.join(moved)}. Put those inputs back "
                           f"as the batch recorded them to {what}, or start a new batch")
    return config


def _refuse_other_format(path: Path, config: BatchConfig, what: str) -> None:
    """Refuse (exit 2) a batch of another config format than this runner writes: its
    sessions ran under another condition (format 1: at their host paths)."""
    if config.format != CONFIG_FORMAT:
        raise BatchRefused(
            f"batch {path} is in batch format {config.format} (written by "
            f"{config.facts.runner}); this runner writes format {CONFIG_FORMAT}, in which every "
            "session sees its workspace at one fixed path that names nothing of its arm, "
            "probe, session or batch, so its sessions would not run under the condition of "
            f"the ones recorded: this runner does not {what}. status, report, show and "
            "retranscribe still read it; start a new batch to run more")


def _new_config(request: BatchRequest, harness_version: str, network: Literal["confined", "host"],
                note: str, url: str = "") -> BatchConfig:
    plan = request.plan
    return BatchConfig(options=request.options, facts=BatchFacts(
        runner=runner_version(), harness_version=harness_version, network=network,
        network_note=note,
        provider_note=provider_note(request.options, url),
        arms={a.arm: ArmFacts.of(a) for a in plan.arm_specs},
        order=OrderFacts(algorithm=ORDER_ALGORITHM, seed=plan.seed),
        disk_bound="kernel" if stores_kernel_bounded() else "sampled"))


@contextlib.contextmanager
def open_batch(request: BatchRequest, *,
               notify: Callable[[str], None]) -> Iterator[OpenBatch]:
    """Open the batch ``request`` names (module docstring); closed and unlocked on exit.

    Raises:
        BatchRefused: bad input, the directory is not usable, or the batch changed (exit 2).
        BatchDirRefused: under ``$HOME`` (RC-06) or not empty for a new batch (exit 2).
        BatchBusy: another process holds the batch (exit 2).
        PreflightFailed: confinement cannot be set up (exit 12); nothing was spent.
        OSError: the host refused a write while the batch was being set up.
    """
    sessions = _refuse_unfixable(request, notify)
    path = prepare_batch_dir(request.batch_dir, command=request.options.command,
                             must_be_new=request.mode == "new")
    options = request.options
    with BatchLock(path), grants_revoked(path):  # taken back before the lock is let go
        # The harness's version as it runs inside the sandbox (the preflight measures it
        # there, bounded): the runner never runs a harness outside the sandbox.
        reading = request.reading
        if reading is not None and (reading.path != path or not reading.unchanged()):
            reading = None  # another invocation ran since it was read: read the batch again
        if request.mode != "new" and (reading is not None or (path / "plan.yaml").exists()):
            _refuse_other_format(path, reading.config if reading is not None else  # before
                                 read_config(path), "resume it" if request.mode ==  # any probe
                                 "resume" else "record into it")
        harness_version = _preflight(options, notify)
        existing = (None if request.mode == "new" else
                    _existing(path, request, harness_version, reading))
        network, note = ((existing.facts.network, existing.facts.network_note)
                         if existing is not None else _network(options, notify))
        with request.provider(options, notify) as (url, scripted):
            config = existing or _new_config(request, harness_version, network, note, url)
            if existing is None:  # plan.yaml last: it marks the batch as made (resume needs both)
                write_config(path, config)
                write_tree(path, request.corpus.files)
                _write_plan(path, request.plan)
            with Journal(path, request.plan, planned=request.planned, network=network,
                         provider_note=config.facts.provider_note,
                         workspace_note=workspace_note(config), reading=reading) as journal:
                if journal.ledger.torn is not None:
                    torn = journal.ledger.torn
                    notify(f"the ledger's last line was cut by a crash ({torn.size_bytes} "
                           f"bytes); it was set aside in {torn.set_aside}, and the ledger "
                           "goes on from the line before it")
                number = (journal.fold.invocation.number if journal.fold.invocation else 0) + 1
                command = "resume" if request.mode == "resume" else options.command
                invocation = InvocationRecord(
                    number=number, command=command, pid=os.getpid(), runner=runner_version(),
                    retries=options.retries, max_cost_cents=options.max_cost_cents,
                    est_session_cents=options.est_session_cents,
                    max_wall_s=options.max_wall_s, hard_wall=options.hard_wall)
                journal.record_now(invocation)
                if request.mode == "new" or request.sets_budget:
                    # After the invocation record: the setter config.yaml names is in the
                    # ledger (a crash between the two leaves the budget the ledger shows).
                    config = config.model_copy(update={"budget": budget_set_by(invocation)})
                    write_config(path, config)
                yield OpenBatch(path=path, options=options, config=config, plan=request.plan,
                                corpus=request.corpus, journal=journal, invocation=number,
                                provider_url=url, network=network,
                                credentials=request.credentials, scripted=scripted,
                                sessions=sessions)
