"""Benchmark (not a test): ``report`` over a synthetic 10,000-session batch, time and peak RSS.

Builds a batch with the runner's own writers: a corpus of ``--probes``
probes (two declared answers, two examined documents each), the plan
composed from it (`compose_plan`, arms present and absent, repetitions to
make ``--sessions``), ``plan.yaml`` and ``config.yaml`` (`write_plan`,
`write_config`) and ``ledger.jsonl`` through `Ledger.append` in the
batch's order: per session a ``started`` and a ``final`` record whose
event holds 3 to 40 calls (Reads of examined and other documents, Greps,
Bash), about 3% of sessions first ending ``harness-error`` and then
recorded on a retry, 1% timing out. Then it runs the real command in a
child process, once per form (terminal text into a pipe, ``--json``,
``--html FILE``), and prints each one's wall time and peak RSS (the
child's own ``ru_maxrss``, from ``wait4``).

A second, smaller batch (``--small``, default 1,000 sessions) is measured
the same way, so the figures show whether memory grows with the batch:
"flat" means the RSS of the two differ by a few MB (a few hundred bytes
per session of folded facts), not by the ledger's size. Target: under
5 s for 10,000 sessions.

Usage::

    .venv/bin/python bench/report.py [--sessions N] [--small N] [--probes P]
                                     [--root DIR] [--keep] [--seed S]

The default root is ``/var/tmp/headwater-bench-report``; it is removed at
the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from campaign.batch._config import (
    BatchConfig,
    BatchFacts,
    OrderFacts,
    write_config,
    write_plan,
)
from campaign.batch._ledger import Ledger
from campaign.batch._options import BatchOptions
from campaign.batch._records import (
    FinalRecord,
    InvocationRecord,
    StartedRecord,
    StoppedRecord,
)
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from campaign.supervisor._spec import session_order

ARMS = ("present", "absent")


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _corpus(root: Path, probes: int, repetitions: int) -> Path:
    files: dict[str, str] = {
        ".headwater/probe.yml": (
            '{"tiers": {"campaign": {"arms": ["present", "absent"], "repetitions": '
            f'{repetitions}}}}}, "tools": ["Read", "Grep", "Glob", "Bash"], '
            '"model": "claude-bench-1"}\n'),
    }
    for p in range(probes):
        examines = [f"docs/topic{p:03d}/a.md", f"docs/topic{p:03d}/b.md"]
        files[f"docs/probes/p{p:03d}.md"] = (
            f'---\n{{"id": "HW-PRB-{p:04d}", "title": "Probe {p}", '
            f'"answers": ["answer {p}", "other {p}"], "examines": ["{examines[0]}", '
            f'"{examines[1]}"]}}\n---\n\n# Probe {p}\n\n## Task\n\nFind it. End with the answer '
            "alone on the last line.\n")
        for i, path in enumerate(examines):
            files[path] = f"---\nid: HW-DOC-{p:04d}{i}\n---\n\nText of topic {p}.\n"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _calls(rng: random.Random, probe: Any) -> list[dict[str, str]]:
    calls = []
    for n in range(rng.randint(3, 40)):
        kind = rng.random()
        if kind < 0.3:
            path = rng.choice([e.path for e in probe.examines] + ["docs/other.md"])
            calls.append({"tool": "Read", "argument": path, "result": _digest(path)})
        elif kind < 0.7:
            calls.append({"tool": "Grep", "argument": f"pattern{n} in docs",
                          "result": _digest(f"g{n}")})
        else:
            command = f"ls docs/topic{n:03d} && wc -l docs/*.md | sort -n | head -{n}"
            calls.append({"tool": "Bash", "argument": command, "result": _digest(command)})
    return calls


def _attempt(ledger: Ledger, spec: Any, *, attempt: int, at: str, state: str,
             event: dict[str, Any] | None, cost: str | None) -> None:
    ref = {"arm": spec.arm.arm, "probe": spec.probe.id, "session": spec.session,
           "repetition": spec.repetition, "attempt": attempt, "invocation": 1}
    ledger.append(StartedRecord(**ref, position=spec.position, at=at))
    ledger.append(FinalRecord(
        **ref, started_at=at, at=at, state=state, reason=f"{state}: bench",
        retryable=state != "recorded", cost_usd=cost, cost_known=cost is not None,
        outside_paths=1 if event and len(event["calls"]) > 35 else 0,
        served_model="claude-bench-1-20261201" if state == "recorded" else None,
        claude_code_version="2.1.197", duration_s=12.5, lines=200, network="confined",
        event=event))


def build_batch(root: Path, sessions: int, probes: int, seed: int) -> Path:
    """Write the synthetic batch under ``root`` (module docstring); its path."""
    repetitions = max(1, sessions // (probes * len(ARMS)))
    corpus = load_corpus(_corpus(root / "corpus", probes, repetitions))
    plan: Plan = compose_plan(corpus, tier="campaign")
    batch = root / "batch"
    batch.mkdir()
    options = BatchOptions(command="run", corpus=str(corpus.root), tier="campaign", seed=0,
                           harness="/opt/claude")
    write_config(batch, BatchConfig(options=options, facts=BatchFacts(
        runner="headwater-campaign bench", harness_version="2.1.197 (Claude Code)",
        network="confined", network_note="bench", provider_note="Provider: none (a bench).",
        arms={}, order=OrderFacts(algorithm="bench", seed=0))))
    write_plan(batch, plan)
    rng = random.Random(seed)
    with Ledger(batch / "ledger.jsonl") as ledger:
        ledger.append(InvocationRecord(number=1, command="run", pid=os.getpid(), runner="bench",
                                       retries=2, max_cost_cents=None, est_session_cents=None,
                                       max_wall_s=None))
        for n, spec in enumerate(session_order(plan)):
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_796_000_000 + 6 * n))
            roll = rng.random()
            attempt = 1
            if roll < 0.03:
                _attempt(ledger, spec, attempt=1, at=at, state="harness-error", event=None,
                         cost="0.0021")
                attempt = 2
            elif roll < 0.04:
                _attempt(ledger, spec, attempt=1, at=at, state="timed-out", event=None,
                         cost=None)
                continue
            answer = rng.choice([*spec.probe.answers, None])
            event = {"probe": spec.probe.id, "session": spec.session,
                     "calls": _calls(rng, spec.probe), "produced": [], "answer": answer}
            _attempt(ledger, spec, attempt=attempt, at=at, state="recorded", event=event,
                     cost=f"0.{rng.randint(10000, 99999):05d}")
        ledger.append(StoppedRecord(invocation=1, reason="done", detail="bench",
                                    outstanding=0))
    return batch


def measure(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of the child running ``argv``."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    while child.stdout.read(1 << 16):
        pass
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}")
    return elapsed, usage.ru_maxrss / 1024


def main() -> None:
    """Build the batches, run the report over each, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--probes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", type=Path, default=Path("/var/tmp/headwater-bench-report"))
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(args.root, ignore_errors=True)
    cli = [sys.executable, "-m", "campaign", "report"]
    try:
        baseline = measure([sys.executable, "-c", "import campaign.cli._report"])
        print(f"interpreter with the report's modules imported: peak RSS {baseline[1]:.1f} MiB")
        for sessions in (args.small, args.sessions):
            root = args.root / str(sessions)
            started = time.perf_counter()
            batch = build_batch(root, sessions, args.probes, args.seed)
            ledger = batch / "ledger.jsonl"
            lines = sum(1 for _ in ledger.open("rb"))
            print(f"\n{sessions} sessions: batch built in {time.perf_counter() - started:.1f} s; "
                  f"ledger {ledger.stat().st_size / 2**20:.1f} MiB, {lines} lines")
            for label, extra in (("terminal (pipe)", []), ("--json", ["--json"]),
                                 ("--html", ["--html", str(root / "report.html")])):
                seconds, rss = measure([*cli, str(batch), *extra])
                print(f"  report {label:16s} {seconds:6.2f} s   peak RSS {rss:6.1f} MiB")
    finally:
        if not args.keep:
            shutil.rmtree(args.root, ignore_errors=True)


if __name__ == "__main__":
    main()
