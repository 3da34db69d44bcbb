"""Benchmark (not a test): what a batch adds to a session, against the bare harness.

The same scripted session (the example corpus's HW-PRB-0003: a Skill, a Glob, two Reads, a
Write, an answer), with the real pinned CLI and the scripted provider on loopback, run:

* ``bare``: ``-N`` times, one after the other, the CLI started directly in a plain copy of
  the corpus (no seal, no bwrap, no runner), with the flags and environment a session gets
  (harness_command, session_environment), a fresh config directory each time; its wall
  time, and its CPU (the CLI and what it starts);
* ``batch``: one batch of the same N sessions through ``run`` (arm present, repetitions N,
  concurrency 1, network as asked, streams kept), one runner process; per session its wall
  time from the ledger (``started`` to ``final``: seal, confinement, drive, transform,
  event, records) and the batch's CPU per session (the runner's own, RUSAGE_SELF, and its
  children's: bwrap and the CLI), through the wrapper of bench/batch.py.

Prints the medians per session and the ratios batch/bare (target: wall at most 1.10).
``--profile`` runs the batch once more under pyinstrument and prints where the runner's
time goes.

Usage::

    .venv/bin/python bench/overhead.py [-N 20] [--network confined|host] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import _figures  # noqa: E402  (bench/, beside this script)

PROBE = "HW-PRB-0003"
HARNESS = REPO / ".harness" / "node_modules" / ".bin" / "claude"
DEFAULT_ROOT = Path("/var/tmp/headwater-bench-overhead")


def make_corpus(work: Path, repetitions: int) -> tuple[Path, Path]:
    """The example corpus with only PROBE; its tier ``regression``: arm present x
    ``repetitions``."""
    from demo import example_paths

    with example_paths() as (corpus, scripts):
        shutil.copytree(corpus, work / "corpus")
        (work / "scripts").mkdir()
        shutil.copy(scripts / f"{PROBE}.json", work / "scripts")
    for probe in (work / "corpus" / "docs" / "probes").glob("*.md"):
        if probe.stem != PROBE:
            probe.unlink()
    yml = work / "corpus" / ".headwater" / "probe.yml"
    text = yml.read_text()
    head = text[: text.index("tiers:")]
    tools = next(line for line in text.splitlines() if line.startswith("tools:"))
    model = next(line for line in text.splitlines() if line.startswith("model:"))
    yml.write_text(f"{head}tiers:\n  regression:\n    arms: [present]\n"
                   f"    repetitions: {repetitions}\n{tools}\n{model}\n")
    return work / "corpus", work / "scripts"


def bare(work: Path, corpus: Path, scripts: Path, n: int) -> list[dict[str, float]]:
    """N bare runs of the CLI in a plain copy of the corpus; wall and CPU of each."""
    from campaign.corpus._corpus import load_corpus
    from campaign.plan._plan import compose_plan
    from demo import ScriptedProvider, load_scripts
    from recorder._command import harness_command
    from sandbox._env import session_environment

    plan = compose_plan(load_corpus(corpus), tier="regression", seed=0)
    probe = next(p for p in plan.probes if p.id == PROBE)
    arm = plan.arm_spec("present")
    workspace = work / "bare-workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    shutil.copytree(corpus, workspace)
    shutil.rmtree(workspace / "docs" / "probes")
    shutil.rmtree(workspace / ".headwater")
    runs = []
    with ScriptedProvider(load_scripts(scripts)) as provider:
        for i in range(n):
            config = Path(tempfile.mkdtemp(prefix="cfg-", dir=work))
            log = Path(tempfile.mkdtemp(prefix="log-", dir=work))
            env = session_environment(
                config_dir=config, log_dir=log, provider_url=provider.url,
                provider_key=("ANTHROPIC_API_KEY", "sk-headwater-scripted-provider"))
            argv = harness_command(harness_mount=str(HARNESS), task=probe.task,
                                   model=plan.model, allowed_tools=arm.allowed_tools)
            (workspace / "notes" / "summary.md").unlink(missing_ok=True)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.monotonic()
            done = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, check=False)
            wall = time.monotonic() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0 or b'"is_error":false' not in done.stdout:
                raise RuntimeError(f"bare run {i} failed ({done.returncode}): "
                                   f"{done.stderr[-500:]!r}")
            runs.append({"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime)
                         + (after.ru_stime - before.ru_stime)})
            shutil.rmtree(config, ignore_errors=True)
            shutil.rmtree(log, ignore_errors=True)
    return runs


def batch(work: Path, corpus: Path, scripts: Path, n: int, network: str,
          profile: bool) -> dict[str, Any]:
    """One batch of the N sessions through ``run``; per-session walls from the ledger."""
    out = work / f"batch-{time.monotonic_ns()}"
    report = work / f"runner-{time.monotonic_ns()}.json"
    argv = ["run", str(corpus), "--tier", "regression", "--batch-dir", str(out), "--provider",
            "scripted", "--scripts", str(scripts), "--concurrency", "1", "--retries", "0",
            "--network", network]
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    wrapper = [sys.executable, str(REPO / "bench" / "batch.py"), "--runner", str(report),
               *(["--profile-runner"] if profile else []), "--"]
    started = time.monotonic()
    done = subprocess.run([*wrapper, *argv], capture_output=True, text=True, env=env,
                          cwd=REPO, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"the batch exited {done.returncode}: {done.stderr[-2000:]}")
    if profile:
        print(done.stderr[-60000:], file=sys.stderr)
    figures = json.loads(report.read_text())
    walls = []
    for line in (out / "ledger.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "final":
            assert record["state"] == "recorded", record["reason"]
            walls.append(_time(record["at"]) - _time(record["started_at"]))
    shutil.rmtree(out, ignore_errors=True)
    return {"walls": walls, "wall_s": wall, "runner_cpu_s": figures["cpu_s"],
            "children_cpu_s": figures["children_cpu_s"], "peak_mib": figures["peak_mib"],
            "phases": figures["phases"]}


def _time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-N", type=int, default=20, dest="n")
    parser.add_argument("--rounds", type=int, default=4,
                        help="blocks of N/rounds bare runs, then a batch of as many")
    parser.add_argument("--network", default="confined", choices=("confined", "host"))
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    per_round = max(1, args.n // args.rounds)
    work = Path(tempfile.mkdtemp(prefix="overhead-", dir=args.root))
    rounds = []
    try:
        corpus, scripts = make_corpus(work, per_round)
        for _ in range(args.rounds):
            bare_runs = bare(work, corpus, scripts, per_round)
            b = batch(work, corpus, scripts, per_round, args.network, profile=False)
            rounds.append({"bare": bare_runs, "batch": b})
        if args.profile:
            batch(work, corpus, scripts, per_round, args.network, profile=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bare_walls = [r["wall_s"] for rnd in rounds for r in rnd["bare"]]
    batch_walls = [w for rnd in rounds for w in rnd["batch"]["phases"]["attempt"]]
    ratios = [statistics.median(rnd["batch"]["phases"]["attempt"])
              / statistics.median(r["wall_s"] for r in rnd["bare"]) for rnd in rounds]
    n = per_round * args.rounds
    runner_cpu = sum(rnd["batch"]["runner_cpu_s"] for rnd in rounds) / n
    batch_wall_per = sum(rnd["batch"]["wall_s"] for rnd in rounds) / n
    print(f"\none scripted session ({PROBE}: Skill, Glob, 2 Reads, Write, answer), the real "
          f"CLI, {args.rounds} rounds of {per_round} bare runs then a batch of {per_round}, "
          f"batch network {args.network}")
    print(f"bare CLI, median wall per session: {statistics.median(bare_walls):.3f} s "
          f"(its CPU {statistics.median(r['cpu_s'] for rnd in rounds for r in rnd['bare']):.3f}"
          " s)")
    print(f"batch, median wall per attempt (run_attempt, start to final record): "
          f"{statistics.median(batch_walls):.3f} s; the batch's wall / N "
          f"{batch_wall_per:.3f} s (start-up and preflight included)")
    print(f"the runner's own CPU per session (RUSAGE_SELF; the scripted provider and the "
          f"egress proxy run in it): {runner_cpu * 1000:.0f} ms; peak RSS "
          f"{max(rnd['batch']['peak_mib'] for rnd in rounds):.1f} MiB")
    print("where an attempt's wall goes (median seconds per attempt, all rounds):")
    names = sorted({k for rnd in rounds for k in rnd["batch"]["phases"]})
    for name in names:
        values = [v for rnd in rounds for v in rnd["batch"]["phases"].get(name, [])]
        print(f"  {name:>24}: {statistics.median(values):.4f} s x {len(values) / n:.0f}")
    figures = [
        _figures.at_most("overhead: session wall, batch / bare CLI (median of rounds)",
                         statistics.median(ratios), 1.10),
        _figures.info("overhead: batch wall / N, over the bare CLI's",
                      batch_wall_per / statistics.median(bare_walls)),
        _figures.info("overhead: the runner's own CPU per session", runner_cpu * 1000, "ms"),
    ]
    print(_figures.table(figures))
    if args.json is not None:
        args.json.write_text(json.dumps({"figures": _figures.to_json(figures),
                                         "rounds": rounds}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
