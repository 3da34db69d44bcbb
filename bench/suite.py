"""``make bench``: the quick set of benches in one run, one table of their figures, RESULTS.md.

Runs, one after the other on this machine:

* bench/stream.py: 1 GB streams (UTF-8, ASCII, 3 MB lines), 100 MB, 40 MB lines: pipe,
  Agent SDK, product, product without the kept stream, interleaved rounds;
* bench/overhead.py: one scripted session of the real CLI, N times bare and as one batch;
* bench/gateway.py: requests to the scripted provider directly and through one session's
  provider gateway, interleaved rounds; the runner's peak RSS relaying large bodies
  (``--full``: more rounds, and a 32 MiB body);
* bench/batch.py: batches of 100 and 1,000 instant sessions (``--full``: and 10,000 at
  concurrency 8 and 32);
* bench/bigfile.py: the demo's batch on the example corpus, and again with a 300 MB text
  file in it (``--full``: one record with a 2 GB file): the runner's peak RSS;
* bench/seal.py: seal+verify of one workspace against ``cp -a`` and ``cp -a`` + grep;
* bench/render.py and bench/report.py, when they are in the checkout: their own output,
  kept with the run.

Then prints one table of every figure against its target and appends the run (date,
machine, commit, load, the table, each bench's own output) to bench/RESULTS.md, earlier
runs kept. Every ratio is taken within this one run (these machines are shared: absolute
figures move 2x between runs).

Usage::

    .venv/bin/python bench/suite.py [--full] [--rounds 3] [-N 20] [--no-results]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import _figures

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "RESULTS.md"
EXTRA_ARGS = {"render.py": ["10000"]}
"""Arguments for the benches that only print (render.py's default adds 100,000 events)."""


def machine() -> str:
    """One line on the machine: host, CPU model, cores, memory, kernel, load now."""
    model = "?"
    with open("/proc/cpuinfo") as fp:
        for line in fp:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as fp:
        mem_kib = int(fp.readline().split()[1])
    load = os.getloadavg()
    return (f"{platform.node()}: {model}, {os.cpu_count()} cores, {mem_kib / 2**20:.0f} GiB, "
            f"Linux {platform.release()}, Python {platform.python_version()}; load average "
            f"{load[0]:.2f} at the start")


def commit() -> str:
    done = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def run_bench(name: str, argv: list[str], out: Path) -> tuple[list[_figures.Figure], str, float]:
    """Run one bench with ``--json``; its figures, its printed text and its seconds."""
    started = time.monotonic()
    print(f"== {name}: {' '.join(argv)}", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, str(BENCH / argv[0]), *argv[1:], "--json", str(out)],
                          capture_output=True, text=True, cwd=REPO, check=False)
    seconds = time.monotonic() - started
    sys.stderr.write(done.stderr[-4000:])
    if done.returncode != 0 or not out.exists():
        failed = _figures.Figure(f"{name}: the bench ran", float("nan"), "", "exit 0", False)
        return [failed], done.stdout + done.stderr[-3000:], seconds
    return _figures.from_json(json.loads(out.read_text())["figures"]), done.stdout, seconds


def run_plain(argv: list[str]) -> tuple[str, float]:
    """Run a bench that prints only (its text is kept with the run)."""
    started = time.monotonic()
    print(f"== {' '.join(argv)}", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, str(BENCH / argv[0]), *argv[1:]],
                          capture_output=True, text=True, cwd=REPO, check=False)
    return done.stdout + (done.stderr[-2000:] if done.returncode else ""), \
        time.monotonic() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--full", action="store_true", help="add the 10,000-session batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-N", type=int, default=20, dest="n")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args(argv)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    where = machine()
    started = time.monotonic()
    figures: list[_figures.Figure] = []
    texts: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        sizes = "100,1000,10000" if args.full else "100,1000"
        for name, bench in (
            ("stream", ["stream.py", "--rounds", str(args.rounds)]),
            ("overhead", ["overhead.py", "-N", str(args.n)]),
            ("gateway", ["gateway.py", "--variant", "full" if args.full else "quick"]),
            ("batch", ["batch.py", "--sizes", sizes]),
            ("bigfile", ["bigfile.py", *(["--full"] if args.full else [])]),
        ):
            got, text, seconds = run_bench(name, bench, Path(tmp) / f"{name}.json")
            figures += got
            texts.append((name, text, seconds))
        seal_text, seal_s = run_plain(["seal.py", "--runs", "3"])
        texts.append(("seal", seal_text, seal_s))
        figures += seal_figures(seal_text)
        for extra in ("render.py", "report.py"):
            if (BENCH / extra).exists():
                text, seconds = run_plain([extra, *EXTRA_ARGS.get(extra, [])])
                texts.append((extra.removesuffix(".py"), text, seconds))
    total = time.monotonic() - started
    table = _figures.table(figures)
    print(f"\nmake bench{' FULL=1' if args.full else ''}: {when}; {where}; commit {commit()}; "
          f"{total / 60:.1f} min")
    print(table)
    if not args.no_results:
        append_results(when, where, args.full, total, table, texts)
        print(f"\nrecorded in {RESULTS.relative_to(REPO)}")
    return 0


def seal_figures(text: str) -> list[_figures.Figure]:
    """seal.py's ratio line as a figure (target: seal+verify at most 1.5x cp -a + grep)."""
    for line in text.splitlines():
        if "ratio seal/(cp+grep) = " in line and "CPU" not in line:
            value = float(line.split("ratio seal/(cp+grep) = ")[1].split("x")[0])
            return [_figures.at_most("seal: seal+verify / (cp -a + grep)", value, 1.5)]
    return [_figures.Figure("seal: the bench ran", float("nan"), "", "its ratio line", False)]


def append_results(when: str, where: str, full: bool, total: float, table: str,
                   texts: list[tuple[str, str, float]]) -> None:
    if not RESULTS.exists():
        RESULTS.write_text("# Bench results\n\nEach run of `make bench` (bench/suite.py) "
                           "appends a section here: the machine and the date, one table of "
                           "every figure against its target (every ratio taken within that "
                           "run), and each bench's own output. Earlier runs are kept.\n")
    parts = [f"\n## {when}: make bench{' FULL=1' if full else ''}\n",
             f"Machine: {where}. Commit {commit()}. {total / 60:.1f} minutes.\n", table, ""]
    for name, text, seconds in texts:
        parts += [f"<details><summary>{name} ({seconds:.0f} s)</summary>\n", "```",
                  text.strip(), "```", "</details>\n"]
    with RESULTS.open("a") as fp:
        fp.write("\n".join(parts))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
