"""Benchmark (not a test): batches of 100, 1,000 and 10,000 sessions of an instant stand-in.

Each batch is the real command line (``run``, the scripted provider, real bwrap, network
``host``) in a runner process of its own, over a corpus of 50 probes, arms ``present`` and
``absent``, repetitions chosen to make the batch's size. The stand-in harness
(tests/standin.py) prints one recordable session and exits, so what is measured is what the
runner adds. The runner is started through a small wrapper (``--runner``) that, at its
exit, writes the runner's own figures: ``RUSAGE_SELF`` CPU (children excluded: bwrap and the
harness are not the runner's cost), ``RUSAGE_CHILDREN`` CPU (theirs), ``VmHWM`` (its peak
RSS), and every transcript write it made (each rendered, proved by reading back and
written atomically) with its CPU time and the arm's event count.

Printed per batch: sessions per second, runner CPU per session, the harness side's CPU per
session, peak RSS, ledger and transcript sizes, and the transcript writes (count, CPU, and
the last one's CPU per event, which stays flat if writing is linear in events). Then the
ratios against the targets: runner CPU per session under 20 ms, peak RSS at the largest batch
within 10 % of the peak at 100.

Usage::

    .venv/bin/python bench/batch.py [--sizes 100,1000] [--concurrency 8] [--root DIR]
                                    [--profile SIZE]

``--sizes`` default 100,1000 (``make bench``); 10000 runs with concurrency 32 as well as 8
when asked for (``make bench FULL=1``). ``--profile SIZE`` runs one batch under pyinstrument
and prints where the runner's time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import _figures  # noqa: E402  (bench/, beside this script)

DEFAULT_ROOT = Path("/var/tmp/headwater-bench-batch")
PROBES = 50
ARMS = ("present", "absent")
MODEL = "claude-standin-1"


def write_corpus(root: Path, repetitions: int) -> Path:
    """50 probes, arms present and absent, ``repetitions`` each; a CLAUDE.md for absent."""
    files = {
        ".headwater/probe.yml": (f"tiers:\n  campaign: {{arms: [present, absent], repetitions: "
                                 f"{repetitions}}}\ntools: [Read]\nmodel: {MODEL}\n"),
        "CLAUDE.md": "Answer briefly.\n",
        "docs/guide.md": "---\nid: HW-DOC-0001\n---\n\n# Guide\n\nWords.\n",
    }
    for n in range(1, PROBES + 1):
        files[f"docs/probes/p{n:03d}.md"] = (
            f"---\nid: HW-PRB-{n:04d}\ntitle: Probe number {n}\nanswers: [yes, no]\n"
            f"examines: [docs/guide.md]\n---\n\n## Task\n\nIs it {n}? End with yes or no.\n")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# --- the runner wrapper (--runner) -----------------------------------------------------------


def runner(report: Path, profile: bool, argv: list[str]) -> None:
    """Run ``python -m campaign ARGV`` in this process; at exit write its figures to ``report``."""
    import atexit
    import runpy
    import threading

    import campaign.batch._journal as journal

    writes: list[dict[str, float]] = []
    lock = threading.Lock()
    original = journal._write

    def timed(*args: Any) -> None:
        cpu, wall = time.thread_time(), time.monotonic()
        original(*args)
        with lock:
            writes.append({"cpu_s": time.thread_time() - cpu, "wall_s": time.monotonic() - wall})

    journal._write = timed  # type: ignore[assignment]
    phases = _time_phases()
    profiler = None
    if profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.002, async_mode="disabled")
        profiler.start()

    def done() -> None:
        if profiler is not None:
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False), file=sys.stderr)
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open("/proc/self/status") as fp:
            hwm = next(int(line.split()[1]) for line in fp if line.startswith("VmHWM:"))
        report.write_text(json.dumps({
            "cpu_s": me.ru_utime + me.ru_stime, "children_cpu_s": kids.ru_utime + kids.ru_stime,
            "peak_mib": hwm / 1024, "writes": writes, "phases": phases}))

    atexit.register(done)
    sys.argv = ["campaign", *argv]
    runpy.run_module("campaign", run_name="__main__")


def _time_phases() -> dict[str, list[float]]:
    """Wall seconds of each step of every attempt, by step (the runner's critical path)."""
    import contextlib
    import functools

    import campaign.supervisor._attempt as attempt
    import campaign.supervisor._session as session

    phases: dict[str, list[float]] = {}

    def note(name: str, started: float) -> None:
        phases.setdefault(name, []).append(time.monotonic() - started)

    def timed_sync(name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                note(name, started)
        return wrapper

    def timed_async(name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return await fn(*args, **kwargs)
            finally:
                note(name, started)
        return wrapper

    def timed_cm(name: str, fn: Any) -> Any:
        @contextlib.asynccontextmanager
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            async with fn(*args, **kwargs) as value:
                note(name + " (enter)", started)
                yield value
                exiting = time.monotonic()
            note(name + " (exit)", exiting)
        return wrapper

    last_result = [0.0]
    feed = attempt.StreamObserver.feed

    def timed_feed(self: Any, line: bytes) -> bool:
        first = time.monotonic()
        is_result = feed(self, line)
        if is_result:
            last_result[0] = time.monotonic()
        note("transform (feed)", first)
        return is_result

    attempt.StreamObserver.feed = timed_feed  # type: ignore[method-assign]
    drive = attempt.drive_child

    async def drive_after(*args: Any, **kwargs: Any) -> Any:
        result = await drive(*args, **kwargs)
        if last_result[0]:
            note("drive after the result line", last_result[0])
        return result

    attempt.drive_child = drive_after
    # The Supervisor binds its attempt runner when it is made: the attempt's body is timed.
    session._attempt = timed_async("attempt", session._attempt)
    session.seal_workspace = timed_sync("seal", session.seal_workspace)
    attempt.build_event = timed_sync("build_event", attempt.build_event)
    attempt.drive_child = timed_async("drive (harness runs)", attempt.drive_child)
    attempt.open_confined = timed_cm("open_confined", attempt.open_confined)
    session.open_session_egress = timed_cm("egress", session.open_session_egress)
    session.write_atomic = timed_sync("write_atomic", session.write_atomic)
    import campaign.batch._journal as journal

    journal.Journal.record = timed_async("ledger record", journal.Journal.record)
    return phases


# --- one batch ---------------------------------------------------------------------------------


def one_batch(root: Path, sessions: int, concurrency: int, *, profile: bool) -> dict[str, Any]:
    from tests.standin import write_session_standin

    repetitions = max(1, sessions // (PROBES * len(ARMS)))
    work = Path(tempfile.mkdtemp(prefix=f"b{sessions}-", dir=root))
    try:
        corpus = write_corpus(work / "corpus", repetitions)
        scripts = work / "scripts"
        scripts.mkdir()
        # The stand-in never calls the provider; the scripted one only has to start.
        (scripts / "unused.json").write_text(json.dumps(
            {"match": "no task says this", "model": MODEL,
             "turns": [{"blocks": [{"type": "text", "text": "done\nno"}]}]}))
        harness = write_session_standin(work / "harness", model=MODEL)
        batch = work / "batch"
        report = work / "runner.json"
        argv = ["run", str(corpus), "--batch-dir", str(batch), "--harness", str(harness),
                "--provider", "scripted", "--scripts", str(scripts), "--network", "host",
                "--concurrency", str(concurrency), "--retries", "0"]
        env = {k: v for k, v in os.environ.items()
               if k not in ("CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, __file__, "--runner", str(report), *(["--profile-runner"] if profile
                                                                    else []), "--", *argv],
            capture_output=True, text=True, env=env, cwd=REPO, check=False)
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise RuntimeError(f"the batch of {sessions} exited {done.returncode}: "
                               f"{done.stderr[-2000:]}")
        if profile:
            print(done.stderr[-60000:], file=sys.stderr)
        figures = json.loads(report.read_text())
        ledger = batch / "ledger.jsonl"
        finals = sum(1 for line in ledger.open("rb") if b'"kind":"final"' in line)
        transcripts = {p.stem: p.stat().st_size for p in (batch / "transcripts").glob("*.md")}
        writes = figures["writes"]
        last = writes[-len(transcripts):] if writes else []
        n = repetitions * PROBES * len(ARMS)
        return {
            "sessions": n, "concurrency": concurrency, "finals": finals, "wall_s": wall,
            "sessions_per_s": n / wall, "runner_cpu_ms": 1000 * figures["cpu_s"] / n,
            "harness_cpu_ms": 1000 * figures["children_cpu_s"] / n,
            "peak_mib": figures["peak_mib"], "ledger_mb": ledger.stat().st_size / 1e6,
            "transcript_mb": sum(transcripts.values()) / 1e6,
            "writes": len(writes), "writes_cpu_s": sum(w["cpu_s"] for w in writes),
            "last_write_ms_per_event": 1000 * sum(w["cpu_s"] for w in last)
            / max(1, n),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--runner"]:
        rest = argv[2:]
        profile = rest[:1] == ["--profile-runner"]
        if profile:
            rest = rest[1:]
        assert rest[:1] == ["--"]
        runner(Path(argv[1]), profile, rest[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--profile", type=int, metavar="SIZE")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    if args.profile:
        print(json.dumps(one_batch(args.root, args.profile, args.concurrency, profile=True)))
        return 0
    runs: list[tuple[int, int]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        runs.append((size, args.concurrency))
        if size >= 10_000:
            runs.append((size, 32))
    rows = []
    for size, concurrency in runs:
        row = one_batch(args.root, size, concurrency, profile=False)
        rows.append(row)
        print(f"batch {size} c{concurrency}: {row['sessions_per_s']:.1f} sessions/s, runner "
              f"{row['runner_cpu_ms']:.1f} ms/session, peak {row['peak_mib']:.1f} MiB",
              file=sys.stderr, flush=True)
    figures = report(rows)
    if args.json is not None:
        args.json.write_text(json.dumps({"figures": _figures.to_json(figures), "rows": rows},
                                        indent=1))
    return 0


def report(rows: list[dict[str, Any]]) -> list[_figures.Figure]:
    print("\nbatches of an instant stand-in (the real run command, bwrap, network host, "
          "streams kept)")
    print(f"{'sessions':>8} {'conc':>4} {'sess/s':>7} {'runner ms':>9} {'harness ms':>10} "
          f"{'peak MiB':>8} {'ledger MB':>9} {'transcr MB':>10} {'writes':>6} "
          f"{'write CPU s':>11} {'last write us/event':>19}")
    for r in rows:
        print(f"{r['sessions']:>8} {r['concurrency']:>4} {r['sessions_per_s']:>7.1f} "
              f"{r['runner_cpu_ms']:>9.1f} {r['harness_cpu_ms']:>10.1f} {r['peak_mib']:>8.1f} "
              f"{r['ledger_mb']:>9.2f} {r['transcript_mb']:>10.2f} {r['writes']:>6} "
              f"{r['writes_cpu_s']:>11.2f} {1000 * r['last_write_ms_per_event']:>19.1f}")
    figures = batch_figures(rows)
    print(_figures.table(figures))
    return figures


def batch_figures(rows: list[dict[str, Any]]) -> list[_figures.Figure]:
    out = []
    for r in rows:
        label = f"batch {r['sessions']:,} c{r['concurrency']}"
        out.append(_figures.info(f"{label}: sessions per second", r["sessions_per_s"], "/s"))
        out.append(_figures.at_most(f"{label}: runner CPU per session", r["runner_cpu_ms"], 20,
                                    "ms"))
    first = rows[0]
    last = max((r for r in rows if r["concurrency"] == first["concurrency"]),
               key=lambda r: r["sessions"])  # the same concurrency: the same sessions in flight
    out.append(_figures.at_most(f"batch: peak RSS at {last['sessions']:,} / at "
                                f"{first['sessions']:,} (c{first['concurrency']})",
                                last["peak_mib"] / first["peak_mib"], 1.10))
    sized = sorted({r["sessions"]: r for r in rows if r["concurrency"] == rows[0]["concurrency"]
                    }.values(), key=lambda r: r["sessions"])
    if len(sized) >= 2 and sized[-2]["sessions"] >= 1000:  # at 100 the fixed costs dominate
        a, b = sized[-2], sized[-1]
        out.append(_figures.at_most(
            f"batch: transcript write CPU per event, {b['sessions']:,} / {a['sessions']:,} "
            "(linear: about 1)", b["last_write_ms_per_event"] / a["last_write_ms_per_event"],
            1.5))
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
