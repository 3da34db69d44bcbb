"""The commands behind the CLI: each takes the parsed arguments and returns an exit status.

Library code below this layer never prints; these functions are the edge
that turns errors into messages and statuses (DESIGN.md, exit statuses).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.resources
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import anyio
from rich.console import Console
from ruamel.yaml import YAML

from recorder._check import check_transcript_file
from recorder._initcheck import McpConfigError, declared_mcp_servers_of
from sandbox._config import Credentials, host_credentials, sweep_config_root
from sandbox._errors import CredentialsMissing, SessionUserUnusable
from sandbox._layout import measure_host_layout
from sandbox._network import network_preflight
from sandbox._privileges import ensure_session_user

from ._arms import arms_without_effect, harness_flags
from ._batch import LOCK_NAME, BatchDirRefused, prepare_batch_dir
from ._corpus import Corpus, load_corpus
from ._doctor import doctor_checks, exit_status, print_report, sandbox_checks
from ._errors import CampaignError
from ._ledger import Ledger, final_records
from ._plan import Plan, compose_plan, dump_plan, load_plan_file
from ._progress import Progress, arms_table
from ._render import render_arm, summary_counts
from ._seal import check_folds, explain, seal_workspace
from ._session import BatchContext, SessionSpec, run_session
from ._supervisor import run_batch, session_specs

PUBLIC_API_URL: Final = "https://api.anthropic.com"
"""The provider when neither --provider-url nor ANTHROPIC_BASE_URL is given."""
DEMO_API_KEY: Final = "sk-headwater-demo-scripted-provider"
"""The demo's key: the scripted provider on loopback accepts anything; not a secret."""
HARNESS_VERSION_TIMEOUT_S: Final = 30.0
"""Bound on ``harness --version`` on the host (config.yaml records it)."""
HARNESS_VERSION_CHARS: Final = 200
"""The most of ``harness --version``'s first line config.yaml keeps (2.1.197 prints 21)."""


DEFAULT_TIER: Final = "campaign"
"""The tier when neither --tier nor --plan names one (DESIGN.md, defaults)."""


class UsageError(Exception):
    """Bad input or usage: the CLI prints the message and exits 2."""


class PreflightStop(Exception):
    """A preflight check failed before any spend (credentials missing): the CLI exits 12."""


def _checkout() -> Path:
    return Path(__file__).resolve().parent.parent


def default_harness() -> Path:
    """The pinned CLI that `make` installs under ``.harness/`` of the checkout (or of the cwd)."""
    for base in (_checkout(), Path.cwd()):
        candidate = base / ".harness" / "node_modules" / ".bin" / "claude"
        if candidate.exists():
            return candidate
    return _checkout() / ".harness" / "node_modules" / ".bin" / "claude"


def _resolve_harness(path: Path | None) -> Path:
    harness = (path or default_harness()).expanduser()
    if not harness.exists():
        hint = "run `make harness`" if path is None else "check --harness"
        raise UsageError(f"harness {harness} does not exist ({hint})")
    resolved = harness.resolve()
    if not os.access(resolved, os.X_OK):
        raise UsageError(f"harness {resolved} is not executable")
    return resolved


def _load_corpus(root: Path) -> Corpus:
    try:
        return load_corpus(root.expanduser().resolve())
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc


def _compose(corpus: Corpus, args: argparse.Namespace) -> Plan:
    tier = getattr(args, "tier", None)
    try:
        declared_mcp_servers_of(corpus.root)  # a malformed .mcp.json is bad input, not a bug
    except McpConfigError as exc:
        raise UsageError(f"corpus {corpus.root}: {exc}") from exc
    try:
        if getattr(args, "plan", None):
            plan = load_plan_file(args.plan, corpus)
            if tier is not None and tier != plan.tier:
                raise UsageError(f"--tier {tier} differs from the tier of --plan {args.plan} "
                                 f"({plan.tier}); give one of them")
        else:
            plan = compose_plan(corpus, tier=tier or DEFAULT_TIER, seed=args.seed)
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc
    if getattr(args, "model", None):
        plan = plan.model_copy(update={"model": args.model})
    return plan


def cmd_plan(args: argparse.Namespace) -> int:
    """``plan``: print the plan before anything is spent (exit 0, or 2 on bad input)."""
    corpus = _load_corpus(args.corpus)
    plan = _compose(corpus, args)
    sys.stdout.write(dump_plan(plan, args.format))
    return 0


def _harness_version(harness: Path) -> str:
    """The first line of ``harness --version``, at most `HARNESS_VERSION_CHARS` characters.

    Bounded: a harness that prints more (a stand-in that ignores its
    arguments printed a 70 MB line here) must not bloat config.yaml, whose
    pure-Python YAML emitter then took 90 s for it.
    """
    try:
        out = subprocess.run([str(harness), "--version"], capture_output=True, text=True,
                             errors="replace", timeout=HARNESS_VERSION_TIMEOUT_S,
                             env={"PATH": "/usr/bin:/bin"}, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = out.stdout.strip().splitlines()
    if not lines:
        return f"unknown (exit {out.returncode})"
    first = lines[0].strip()
    cut = len(first) > HARNESS_VERSION_CHARS or len(lines) > 1
    return first[:HARNESS_VERSION_CHARS] + (" [cut]" if cut else "")


def _write_yaml(path: Path, data: Any) -> None:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    with path.open("w", encoding="utf-8") as fp:
        yaml.dump(data, fp)


def _network_mode(args: argparse.Namespace, err: Console) -> tuple[str, str] | None:
    """Resolve ``--network``: ``(mode, note)``, or None when confinement was asked and fails.

    ``host`` is taken as given. ``confined``, asked or by default, needs a
    verified `network_preflight`; asked, a failure stops the batch (exit 12,
    nothing spent); by default, the batch falls back to ``host`` with a
    warning, a note in config.yaml, and prose that says the channel was open.
    """
    asked = getattr(args, "network", None)
    if asked == "host":
        return "host", "asked: --network host"
    check = network_preflight(bwrap=args.bwrap)
    if check.verdict == "ok":
        return "confined", "verified by the network preflight"
    line = f"network: {check.verdict}: {check.detail}"
    line += f" (fix: {check.fix})" if check.fix else ""
    if asked == "confined":
        err.print("[bold red]--network confined: the network preflight failed; nothing was "
                  "started or spent:[/]")
        err.print(f"  {line}", markup=False, soft_wrap=True)
        return None
    err.print("warning: network confinement is not available here, so sessions share the "
              f"host's network (the transcripts say so): {line}", markup=False, soft_wrap=True)
    return "host", f"fell back from confined: {line}"


def _preflight_or_exit(bwrap: str, harness: Path, err: Console) -> bool:
    """Start-up of run, demo, record: sweep left-overs, make the session user, run the checks.

    The checks are `doctor`'s sandbox part plus its skills check (campaign._doctor);
    any that is not verified ok means exit 12 before any session, copy or spend.
    """
    _sweep(err)
    try:
        user, created = ensure_session_user()
        if created and user is not None:
            err.print(f"created the system user {user.name} (uid {user.uid}, gid {user.gid}): "
                      "a root runner's sessions run as it", markup=False, highlight=False,
                      soft_wrap=True)
    except SessionUserUnusable:
        pass  # the session-user check below says what is wrong and the fix
    report = sandbox_checks(bwrap=bwrap, harness=harness, host_skill_dirs=_host_skill_dirs())
    if report.ok:
        return True
    err.print("[bold red]confinement preflight failed; nothing was started or spent (RC-05):[/]")
    for check in report.checks:
        if check.verdict != "ok":
            err.print(f"  {check.name}: {check.verdict}: {check.detail}", markup=False,
                      soft_wrap=True)
            if check.fix:
                err.print(f"    fix: {check.fix}", markup=False, soft_wrap=True)
    return False


async def _with_signals(body: Any) -> int | None:
    """Run ``body()`` and stop it on SIGINT/SIGTERM; return the signal number or None."""
    stopped: list[int] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    stopped.append(int(signum))
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch)
        await body()
        tg.cancel_scope.cancel()
    return stopped[0] if stopped else None


def _execute_batch(
    *, command: str, corpus: Corpus, plan: Plan, args: argparse.Namespace,
    credentials: Credentials, provider_url: str | None, harness: Path,
    extra_config: dict[str, Any] | None = None,
) -> int:
    err = Console(stderr=True)
    check_before_batch(corpus, plan, plan.arms, allow_identical=getattr(
        args, "allow_identical_arms", False), err=err)
    try:
        batch = prepare_batch_dir(args.batch_dir, command=command)
    except BatchDirRefused as exc:
        raise UsageError(str(exc)) from exc
    hold_batch_lock(batch)
    if not _preflight_or_exit(args.bwrap, harness, err):
        return 12
    network = _network_mode(args, err)
    if network is None:
        return 12
    for left in sweep_config_root():
        err.print(f"removed a credentials copy left by a killed runner: {left}", markup=False)
    _write_yaml(batch / "plan.yaml", _plan_data(plan))
    _write_yaml(batch / "config.yaml", {
        "command": command,
        "corpus": str(corpus.root),
        "tier": plan.tier,
        "seed": plan.seed,
        "model": plan.model,
        "arms": {a.arm: {**harness_flags(a.allowed_tools), "layer": a.layer, "flags": a.flags,
                         "identity": a.identity} for a in plan.arm_specs},
        "harness": {"path": str(harness), "version": _harness_version(harness)},
        "runner": plan.harness,
        "provider_url": provider_url or PUBLIC_API_URL,
        "network": network[0],
        "network_note": network[1],
        "concurrency": args.concurrency,
        "session_timeout_s": getattr(args, "session_timeout", 1800.0),
        "watchdog_s": getattr(args, "watchdog", 600.0),
        **(extra_config or {}),
    })
    ctx = BatchContext(
        batch=batch, corpus=corpus, plan=plan, harness=harness, bwrap=args.bwrap,
        credentials=credentials, provider_url=provider_url, layout=measure_host_layout(),
        session_timeout_s=getattr(args, "session_timeout", 1800.0),
        watchdog_s=getattr(args, "watchdog", 600.0),
        host_skill_dirs=_host_skill_dirs(),
        discard_workspaces=getattr(args, "discard_workspaces", False),
        network="confined" if network[0] == "confined" else "host",
    )
    planned: dict[str, int] = {arm: len(plan.probes) * plan.repetitions for arm in plan.arms}
    err.print(f"batch: {batch}\n{plan.session_count} sessions "
              f"({len(plan.probes)} probes x {len(plan.arms)} arms x {plan.repetitions} "
              f"repetitions), concurrency {args.concurrency}", markup=False, highlight=False)
    with Progress(planned) as progress:
        signum = anyio.run(
            _with_signals,
            lambda: run_batch(ctx, session_specs(plan), concurrency=args.concurrency,
                              progress=progress, network=ctx.network),
            backend="trio",
        )
    _print_summary(batch)
    print(f"batch: {batch}")
    if signum is not None:
        err.print(f"stopped by signal {signum}; every finished session is in the ledger "
                  "(a `resume` command is planned)", markup=False)
        return 128 + signum
    return 0


_HELD_LOCKS: list[int] = []


def hold_batch_lock(batch: Path) -> None:
    """Lock ``<batch>/.lock`` exclusively until this process exits.

    Two runners writing one ledger would both name a session ``r1`` and delete
    each other's running workspace; the lock makes the second one stop (exit 2)
    before it writes anything. A CLI process runs one command, so the lock is
    held for the process's life; flock dies with the process, so a killed
    runner leaves nothing to clean.

    Raises:
        UsageError: another process holds the batch.
    """
    fd = os.open(batch / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise UsageError(f"batch {batch} is in use by another headwater-campaign process; "
                         "wait for it, or use another --batch-dir") from exc
    _HELD_LOCKS.append(fd)


def _host_skill_dirs() -> tuple[Path, ...]:
    dirs = [Path.home() / ".claude" / "skills"]
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        dirs.append(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "skills")
    return tuple(dirs)


def _plan_data(plan: Plan) -> Any:
    yaml = YAML(typ="safe", pure=True)
    return yaml.load(dump_plan(plan, "yaml"))


def _print_summary(batch: Path) -> None:
    from ._progress import ArmCounts

    arms: dict[str, ArmCounts] = {}
    for arm, row in summary_counts(batch / "ledger.jsonl").items():
        arms[arm] = ArmCounts(planned=row["sessions"], recorded=row["recorded"],
                              refused=row["refused"], failed=row["failed"],
                              cost_usd=row["cost_usd"])
    Console(highlight=False).print(arms_table(arms, title="sessions per arm"))
    for arm in sorted(arms):
        print(f"transcript: {batch / 'transcripts' / (arm + '.md')}")


def _provider_url(args: argparse.Namespace) -> str:
    return args.provider_url or os.environ.get("ANTHROPIC_BASE_URL") or PUBLIC_API_URL


def _credentials(args: argparse.Namespace) -> Credentials:
    try:
        return host_credentials(api_key_env=args.api_key_env, environ=os.environ)
    except CredentialsMissing as exc:
        # doctor calls this check verified broken; before a batch it stops with 12 as well.
        raise PreflightStop(f"{exc}; nothing was started or spent. Fix: log in with Claude "
                            "Code on the host, or pass --api-key-env NAME") from exc


def cmd_run(args: argparse.Namespace) -> int:
    """``run``: a batch against a real provider with the host's credentials."""
    corpus = _load_corpus(args.corpus)
    plan = _compose(corpus, args)
    harness = _resolve_harness(args.harness)
    credentials = _credentials(args)
    return _execute_batch(command="run", corpus=corpus, plan=plan, args=args,
                          credentials=credentials, provider_url=_provider_url(args),
                          harness=harness)


@contextlib.contextmanager
def example_paths() -> Iterator[tuple[Path, Path]]:
    """The bundled example corpus and the demo's provider scripts, as real paths."""
    root = importlib.resources.files("campaign") / "example"
    with importlib.resources.as_file(root) as path:
        yield Path(path) / "corpus", Path(path) / "scripts"


def cmd_demo(args: argparse.Namespace) -> int:
    """``demo``: the example corpus, tier campaign, scripted provider, real CLI, real bwrap."""
    from ._provider import ScriptedProvider, load_scripts

    harness = _resolve_harness(args.harness)
    args.session_timeout = 300.0
    args.watchdog = 120.0
    args.discard_workspaces = False
    with example_paths() as (corpus_root, scripts_dir):
        corpus = _load_corpus(corpus_root)
        plan = _compose(corpus, argparse.Namespace(tier="campaign", seed=0, plan=None, model=None))
        credentials = Credentials(credentials_file=None, api_key_env=None, api_key=DEMO_API_KEY)
        with ScriptedProvider(load_scripts(scripts_dir)) as provider:
            return _execute_batch(
                command="demo", corpus=corpus, plan=plan, args=args, credentials=credentials,
                provider_url=provider.url, harness=harness,
                extra_config={"provider": "scripted (loopback), campaign/example/scripts"},
            )


def _next_record_name(batch: Path, *, arm: str, probe: str) -> str:
    highest = 0
    for key in final_records(batch / "ledger.jsonl", arm=arm):
        if key.probe == probe and key.session.startswith("r") and key.session[1:].isdigit():
            highest = max(highest, int(key.session[1:]))
    return f"r{highest + 1}"


_MEMBERS: Final = ("tree", "lock", "selection", "read_set", "seed", "harness", "tier", "model")


def cmd_record(args: argparse.Namespace) -> int:
    """``record``: one session, added to the batch's transcript of its arm.

    Exit: 0 recorded; 12 refused (RC-07, RC-09); 1 any other final state; 2
    bad input or a batch whose plan members, tier, model or harness differ.
    """
    corpus = _load_corpus(args.corpus)
    plan = _compose(corpus, args)
    if args.probe not in corpus.probes:
        raise UsageError(f"probe {args.probe!r} is not on the shelf docs/probes/ of {corpus.root}")
    if args.arm not in plan.arms:
        raise UsageError(f"arm {args.arm!r} is not an arm of tier {plan.tier} "
                         f"({', '.join(plan.arms)}); pass the --tier that runs it")
    check_before_batch(corpus, plan, [args.arm], probes=[args.probe], allow_identical=getattr(
        args, "allow_identical_arms", False), err=Console(stderr=True))
    harness = _resolve_harness(args.harness)
    credentials = _credentials(args)
    try:
        batch = prepare_batch_dir(args.batch_dir, command="record", must_be_new=False)
    except BatchDirRefused as exc:
        raise UsageError(str(exc)) from exc
    hold_batch_lock(batch)
    plan_file = batch / "plan.yaml"
    config_file = batch / "config.yaml"
    harness_facts = {"path": str(harness), "version": _harness_version(harness)}
    if plan_file.exists():
        existing = YAML(typ="safe", pure=True).load(plan_file.read_text(encoding="utf-8"))
        mine = _plan_data(plan)
        differ = [m for m in _MEMBERS if existing.get(m) != mine.get(m)]
        if config_file.exists():
            config = YAML(typ="safe", pure=True).load(config_file.read_text(encoding="utf-8"))
            if (config or {}).get("harness", {}).get("version") != harness_facts["version"]:
                differ.append("harness (Claude Code version)")
        if differ:
            raise UsageError(f"batch {batch} was planned with other {', '.join(differ)}; "
                             "record into a new --batch-dir")
    elif any(p.name != LOCK_NAME for p in batch.iterdir()):
        raise UsageError(f"{batch} is not empty and holds no plan.yaml: it is not a batch; "
                         "pass an empty or new --batch-dir")
    err = Console(stderr=True)
    if not _preflight_or_exit(args.bwrap, harness, err):
        return 12
    network = _network_mode(args, err)
    if network is None:
        return 12
    if not plan_file.exists():  # a new batch: written only once the preflight passed
        _write_yaml(plan_file, _plan_data(plan))
        _write_yaml(config_file, {
            "command": "record", "corpus": str(corpus.root), "tier": plan.tier,
            "seed": plan.seed, "model": plan.model, "harness": harness_facts,
            "runner": plan.harness, "provider_url": _provider_url(args),
            "network": network[0], "network_note": network[1],
            "session_timeout_s": args.session_timeout, "watchdog_s": args.watchdog,
        })
    sweep_config_root()
    session = _next_record_name(batch, arm=args.arm, probe=args.probe)
    ctx = BatchContext(
        batch=batch, corpus=corpus, plan=plan, harness=harness, bwrap=args.bwrap,
        credentials=credentials, provider_url=_provider_url(args), layout=measure_host_layout(),
        session_timeout_s=args.session_timeout, watchdog_s=args.watchdog,
        host_skill_dirs=_host_skill_dirs(), produced_extra=tuple(args.produced),
        network="confined" if network[0] == "confined" else "host",
    )
    spec = SessionSpec(probe=args.probe, arm=args.arm, repetition=0, session=session)

    outcomes: list[Any] = []

    async def one() -> None:
        with Ledger(batch / "ledger.jsonl") as ledger:
            try:
                outcomes.append(await run_session(spec, ctx, ledger))
            finally:
                # synchronous: runs whole when cancelled
                render_arm(batch, plan, arm=args.arm, network=ctx.network)

    signum = anyio.run(_with_signals, one, backend="trio")
    if signum is not None:
        err.print(f"stopped by signal {signum}; the session is in the ledger as killed",
                  markup=False)
        print(f"batch: {batch}")
        return 128 + signum
    outcome = outcomes[0]
    print(f"{args.probe} {session}: {outcome.state}"
          + ("" if outcome.state == "recorded" else f" ({outcome.reason})"))
    for warning in _record_warnings(outcome.record):
        err.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    print(f"transcript: {batch / 'transcripts' / (args.arm + '.md')}")
    print(f"batch: {batch}")
    if outcome.state == "recorded":
        return 0
    if outcome.state in ("refused-init", "refused-seal", "refused-confinement"):
        return 12
    return 1


def _record_warnings(record: dict[str, Any]) -> list[str]:
    """What a user of ``record`` must see besides the state (RC-07 anomalies, RC-11 checker)."""
    warnings = []
    if record.get("anomalies"):
        first = (record.get("anomaly_lines") or [{}])[0]
        warnings.append(f"{record['anomalies']} stdout line(s) were not JSON (anomalies, kept "
                        f"aside in the ledger); first at line {first.get('line')}: "
                        f"{first.get('excerpt')!r}")
    if record.get("findings_note"):
        warnings.append(f"{record['findings_note']} (no findings key was written)")
    if record.get("orphan_results"):
        warnings.append(f"{len(record['orphan_results'])} tool_result(s) answered no tool_use")
    return warnings


def cmd_seal(args: argparse.Namespace) -> int:
    """``seal``: one sealed workspace; ``--explain`` lists every removal and why."""
    corpus = _load_corpus(args.corpus)
    if args.probe not in corpus.probes:
        raise UsageError(f"probe {args.probe!r} is not on the shelf docs/probes/ of {corpus.root}")
    try:
        result = seal_workspace(corpus, probe_id=args.probe, arm=args.arm, out=args.out)
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc
    if args.explain:
        sys.stdout.write(explain(result))
    for line in arms_without_effect(corpus, [args.arm], corpus.config.tools):
        print(f"warning: {line} (run and record refuse it)", file=sys.stderr)
    print(f"sealed {len(result.manifest)} files into {args.out.resolve()} "
          f"({len(result.removals)} removals)")
    return 0


def check_before_batch(corpus: Corpus, plan: Plan, arms: Any, *, probes: Any = None,
                       allow_identical: bool, err: Console) -> None:
    """Refuse, before anything is written or spent, what no session of the batch could fix.

    A fold of a selected probe that states a declared answer (RC-09; exit 2),
    and an arm that would differ from present in nothing (issue 4: reported
    before the batch, not silently run; ``--allow-identical-arms`` runs it
    anyway, with the report printed).

    Raises:
        UsageError: either problem (the CLI exits 2).
    """
    try:
        for probe in probes if probes is not None else [p.id for p in plan.probes]:
            check_folds(corpus, probe)
        same = arms_without_effect(corpus, arms, plan.tools)
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc
    if same and not allow_identical:
        raise UsageError("; ".join(same) + ". Its sessions would repeat present's; drop the arm "
                         "from the tier, or pass --allow-identical-arms to run it anyway")
    for line in same:
        err.print(f"warning: {line} (run anyway: --allow-identical-arms)", markup=False)


def cmd_check_transcript(args: argparse.Namespace) -> int:
    """``check-transcript``: 0 clean, 1 refused, 4 could not verify (never a pass for the third)."""
    result = check_transcript_file(args.file)
    label = {"clean": "verified clean", "refused": "verified broken (refused)",
             "unverified": "could not verify"}[result.verdict]
    print(f"{args.file}: {label}")
    for reason in result.reasons:
        print(f"  {reason}")
    return {"clean": 0, "refused": 1, "unverified": 4}[result.verdict]


def _sweep(err: Console) -> None:
    """Remove credentials copies a killed runner left, and say so (RC-03, faults target)."""
    for left in sweep_config_root():
        err.print(f"removed a credentials copy left by a killed runner: {left}", markup=False,
                  highlight=False, soft_wrap=True)


def cmd_doctor(args: argparse.Namespace) -> int:
    """``doctor``: every host check, three answers each; 0 all ok, 12 any broken, else 4.

    Reads and probes only: it removes left-over credentials copies (and says
    so) but creates no user; see campaign._doctor for the checks.
    """
    _sweep(Console(stderr=True))
    harness: Path | None
    try:
        harness = _resolve_harness(args.harness)
    except UsageError:
        harness = None
    report = doctor_checks(bwrap=args.bwrap, harness=harness, host_skill_dirs=_host_skill_dirs(),
                           api_key_env=args.api_key_env)
    print_report(report)
    return exit_status(report)


