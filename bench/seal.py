"""Benchmark (not a test): seal+verify of one workspace against ``cp -a`` and ``cp -a`` + grep.

The seal copies, so copying is the cost. This builds a
synthetic corpus (default 10,000 files, about 200 MB of Markdown with
identifiers, a probe shelf, a fold, an answer key, files that name the probe
in each way RC-09 knows, a few binary files), then times, warm (every tree
read once before the clock starts, each figure the median of ``--runs``):

* ``cp -a CORPUS DST``;
* ``cp -a CORPUS DST`` followed by one ``grep -rlF`` over DST for the probe's
  names (its id, path, file name and title: the least any sealer must do;
  case-sensitive and ``LC_ALL=C``, grep's fastest mode, so the baseline is
  the harder target);
* `seal_workspace` of one probe under arm ``present``: the plan of removals,
  the copy, the arm, the verification pass and the manifest.

The corpus is loaded ``QUIET_S`` + 0.5 s after it was written (as a checkout
is older than the batch that seals it), so the seal's prefilter applies;
``--fresh`` loads it at once, and the seal then searches every file itself.
It prints the three times and the ratios. Target: seal+verify at most 1.5x
the ``cp -a`` + grep figure.

`load_corpus` (reading and digesting every file and parsing every front
matter, once per batch, not per workspace) is timed separately: the median
of ``--runs`` loads, each in a fresh interpreter after one warm-up load.
``--compare-load CHECKOUT`` times another checkout's `load_corpus` (say the
main branch in a git worktree) the same way, interleaved with this one's, on
the same corpus, and prints both and the ratio (target: at least 5x faster
than before the fast YAML path). ``--load-only`` stops after that.
``--linearity`` also times `verify_workspace` alone on the workspace and on a
second corpus whose files are twice as long (the same file count): the ratio
should be about 2 (linear in corpus bytes).

Usage::

    .venv/bin/python bench/seal.py [--root DIR] [--files N] [--mb MB] [--runs R]
                                   [--linearity] [--keep] [--fresh]
                                   [--load-only] [--compare-load CHECKOUT]

The default root is ``/var/tmp/headwater-bench-seal`` (``/tmp`` may be a
small tmpfs); it is removed at the end unless ``--keep``.
"""


from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from campaign.corpus._corpus import QUIET_S, Corpus, load_corpus
from campaign.seal import resolve_session
from campaign.seal._seal import seal_workspace, verify_workspace

REPO = Path(__file__).resolve().parent.parent

MB = 1_000_000
PROBE = "HW-PRB-0001"
PROBE_PATH = "docs/probes/widget-cache.md"
TITLE = "Which record governs widget cache eviction"
ANSWER_KEY = "docs/runs/2026-10-01/answer-widget.md"
FOLD = "src/cache/eviction.py"
VOCABULARY = ("the cache record widget render index page provider retry budget decision "
              "specification note table scroll eviction policy section letter count summary "
              "model client server request response latency default length status current "
              "superseded history reason because therefore however each every one two three")
WORDS = tuple(VOCABULARY.split())


NEAR_MISSES = ("HW-PRB-00011", "HW-PRB-0001-2", "xHW-PRB-0001", "widget-cache.md.bak",
               "Which record governs widget cache evictions")
"""Texts that hold one of the probe's names without naming it (about 1 file in 50)."""


def _paragraphs(rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    for i in range(n):
        words: list[str] = []
        if i % 2000 == 0:
            words.append(NEAR_MISSES[(i // 2000) % len(NEAR_MISSES)])
        for _ in range(rng.randint(60, 110)):
            roll = rng.random()
            if roll < 0.04:
                words.append(f"HW-DOC-{rng.randint(0, 99999):05d}")
            elif roll < 0.05:
                words.append(f"HW-DR-{rng.randint(0, 9999):04d}")
            elif roll < 0.052:  # other probes
                words.append(rng.choice(["HW-PRB-0012", "HW-PRB-0007", "HW-PRB-0019"]))
            elif roll < 0.056:
                target = f"../area-{rng.randint(0, 99):02d}/doc-{rng.randint(0, 99999):05d}.md"
                words.append(f"[see]({target})")
            else:
                words.append(rng.choice(WORDS))
        out.append(" ".join(words) + ".\n\n")
    return out


def _front(doc_id: str, title: str) -> str:
    return f"---\nid: {doc_id}\ntitle: {title}\nstatus: current\n---\n\n# {title}\n\n"


def _probe(probe_id: str, title: str) -> str:
    return (f"---\nid: {probe_id}\ntitle: {title}\nanswers: [current HW-DR-0052]\nexamines: []\n"
            f"---\n\n# {title}\n\n## Task\n\nFind it; end with the answer alone on the last "
            "line.\n\n## Why\n\nCommentary.\n")


def build_corpus(root: Path, *, files: int, total_mb: float, seed: int = 4) -> int:
    """Write the synthetic corpus under ``root``; return its size in bytes."""
    rng = random.Random(seed)
    pool = _paragraphs(rng, 4000)
    special: dict[str, str] = {
        ".headwater/probe.yml": (
            "tiers: {campaign: {arms: [present, absent], repetitions: 2}}\n"
            "tools: [Read, Grep, Glob]\nmodel: claude-bench-1\n"
            f"folds: {{{PROBE}: [{FOLD}]}}\nanswer_keys: {{{PROBE}: [{ANSWER_KEY}]}}\n"),
        ".headwater/taxonomy.lock": "lock v1\n",
        PROBE_PATH: _probe(PROBE, TITLE),
        ANSWER_KEY: _front("HW-RUN-0001", "A run") + "Answer: current HW-DR-0052\n",
        FOLD: f"# exercised by {PROBE_PATH}\nEVICT_AFTER_S = 60\n",
        "CLAUDE.md": "House rules.\n",
        ".claude/settings.json": '{"hooks": {}}\n',
        ".claude/skills/style/SKILL.md": "---\nname: style\n---\nWrite plainly.\n",
        "notes/asked.txt": "We asked: which record\ngoverns WIDGET cache eviction?\n",
    }
    for i in range(2, 21):
        special[f"docs/probes/probe-{i:04d}.md"] = _probe(f"HW-PRB-{i:04d}", f"Question {i}")
    count = files - len(special) - 4
    body_bytes = int(total_mb * MB / max(count, 1))
    size = 0
    for n in range(count):
        rel = (f"src/mod{n % 50:02d}/file{n:05d}.py" if n % 20 == 0
               else f"docs/area-{n % 100:02d}/doc-{n:05d}.md")
        head = (_front(f"HW-DOC-{n:05d}", f"Document {n}") if rel.endswith(".md")
                else f'"""Module {n}."""\n')
        parts = [head]
        length = len(head)
        while length < body_bytes:
            para = pool[rng.randrange(len(pool))]
            parts.append(para)
            length += len(para)
        if n % 997 == 1:
            parts.insert(2, f"This note is about {PROBE}.\n\n")
        elif n % 997 == 2:
            parts.insert(2, f"Shelf file: {PROBE_PATH}\n\n")
        elif n % 997 == 3:
            parts.insert(2, "Worked once: [answer](../runs/2026-10-01/answer-widget.md)\n")
        special[rel] = "".join(parts)
    for i in range(4):
        special[f"assets/img{i}.png"] = ""
    for rel, text in special.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = (b"\x89PNG\r\n\x1a\n\x00" + bytes(range(256)) * 40) if rel.endswith(".png") \
            else text.encode("utf-8")
        path.write_bytes(data)
        size += len(data)
    return size


def _warm(tree: Path) -> None:
    """Read every file of ``tree`` (this VM evicts page cache it deems cold within seconds)."""
    for dirpath, _dirs, files in os.walk(tree):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fp:
                while fp.read(1 << 20):
                    pass


def _cpu_s() -> float:
    """User + system CPU seconds of this process (all threads) and its reaped children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _interleaved(jobs: dict[str, Callable[[Path], object]], outs: Path, warm: Path,
                 runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each job; the jobs take turns, after a warm-up round.

    Every run writes into a fresh directory and nothing is deleted until the
    end: on this ext4 (mounted with ``discard``) deleting 200 MB right before a
    run slowed the next run's file creation by up to 5x, for cp and the seal
    alike. Before each run the corpus is read once more (warm), and dirty
    pages are flushed (``sync``), outside the clock.
    """
    times: dict[str, list[float]] = {name: [] for name in jobs}
    cpu: dict[str, list[float]] = {name: [] for name in jobs}
    for round_ in range(runs + 1):
        for name, job in jobs.items():
            subprocess.run(["sync"], check=True)  # no job pays for another's writeback
            _warm(warm)
            start, cpu_start = time.perf_counter(), _cpu_s()
            job(outs / f"{name}-{round_}")
            if round_:  # round 0 warms the page cache, dentries and allocator
                times[name].append(time.perf_counter() - start)
                cpu[name].append(_cpu_s() - cpu_start)
        if round_ == 0:
            shutil.rmtree(outs)
            outs.mkdir()
    return {name: (statistics.median(times[name]), statistics.median(cpu[name]))
            for name in jobs}


_LOAD_ONCE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import campaign.corpus._corpus
corpus_dir = Path(sys.argv[2])
campaign.corpus._corpus.load_corpus(corpus_dir)  # warm: imports, page cache, allocator
start = time.perf_counter()
campaign.corpus._corpus.load_corpus(corpus_dir)
print(time.perf_counter() - start, campaign.corpus._corpus.__file__)
"""
"""One timed `load_corpus` of the checkout argv[1] over the corpus argv[2], in a fresh process."""


def _load_s(checkout: Path, corpus_dir: Path) -> float:
    out = subprocess.run([sys.executable, "-c", _LOAD_ONCE, str(checkout), str(corpus_dir)],
                         capture_output=True, text=True, check=True).stdout.split()
    if not out[1].startswith(str(checkout.resolve())):  # the other checkout's code, not ours
        raise RuntimeError(f"loaded {out[1]}, not a module of {checkout}")
    return float(out[0])


def _load_times(checkouts: dict[str, Path], corpus_dir: Path, runs: int) -> dict[str, float]:
    """Median `load_corpus` seconds of each checkout; they take turns, run by run."""
    times: dict[str, list[float]] = {name: [] for name in checkouts}
    for _ in range(runs):
        for name, checkout in checkouts.items():
            times[name].append(_load_s(checkout, corpus_dir))
    return {name: statistics.median(ts) for name, ts in times.items()}


def _cp(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


def _grep(dst: Path) -> None:
    names = [PROBE, PROBE_PATH, Path(PROBE_PATH).name, TITLE]
    argv = ["grep", "-rlF", *(a for n in names for a in ("-e", n)), str(dst)]
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}  # byte-wise: grep's fastest mode
    if subprocess.run(argv, stdout=subprocess.DEVNULL, env=env, check=False).returncode > 1:
        raise RuntimeError("grep failed")


def _cp_grep(src: Path, dst: Path) -> None:
    _cp(src, dst)
    _grep(dst)


def _seal(corpus: Corpus, out: Path) -> object:
    return seal_workspace(corpus, resolve_session(corpus, PROBE, "present"), out=out)


def _verify_time(corpus: Corpus, out: Path, runs: int) -> float:
    shutil.rmtree(out, ignore_errors=True)
    _seal(corpus, out)
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        verify_workspace(corpus, resolve_session(corpus, PROBE, "present"), out)
        times.append(time.perf_counter() - start)
    shutil.rmtree(out)
    return statistics.median(times[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/var/tmp/headwater-bench-seal"))
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--linearity", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--fresh", action="store_true",
                        help="load the corpus right after writing it: no file is quiet, so the "
                             "seal searches every file itself (campaign/seal/_prefilter.py)")
    parser.add_argument("--load-only", action="store_true",
                        help="time load_corpus only (no seal, cp or grep)")
    parser.add_argument("--compare-load", type=Path, metavar="CHECKOUT",
                        help="also time load_corpus of another checkout of this repository")
    args = parser.parse_args()
    root: Path = args.root
    shutil.rmtree(root, ignore_errors=True)
    corpus_dir, out = root / "corpus", root / "out"
    size = build_corpus(corpus_dir, files=args.files, total_mb=args.mb)
    if not args.fresh:  # a corpus is a checkout: its files are older than the batch
        time.sleep(QUIET_S + 0.5)
    subprocess.run(["grep", "-rqF", "warm-the-cache", str(corpus_dir)], check=False)
    corpus = load_corpus(corpus_dir)
    print(f"corpus: {len(corpus.files)} files, {size / MB:.1f} MB at {corpus_dir}; "
          f"{len(corpus.signatures)} files quiet (unchanged {QUIET_S:.0f} s before loading)")
    checkouts = {"this checkout": REPO}
    if args.compare_load is not None:
        checkouts[str(args.compare_load)] = args.compare_load
    loads = _load_times(checkouts, corpus_dir, args.runs)
    print(f"load_corpus (once per batch, not per workspace), median of {args.runs} runs, "
          "each in a fresh interpreter after a warm-up load:")
    for name, seconds in loads.items():
        print(f"  {name}: {seconds:.3f} s")
    if args.compare_load is not None:
        print(f"  ratio {args.compare_load} / this checkout = "
              f"{loads[str(args.compare_load)] / loads['this checkout']:.1f}x")
    if args.load_only:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        return 0
    out.mkdir()
    figures = _interleaved({"cp": lambda dst: _cp(corpus_dir, dst),
                            "cp+grep": lambda dst: _cp_grep(corpus_dir, dst),
                            "seal": lambda dst: _seal(corpus, dst)}, out, corpus_dir, args.runs)
    shutil.rmtree(out)
    (cp_s, cp_cpu), (cpg_s, cpg_cpu), (seal_s, seal_cpu) = (
        figures["cp"], figures["cp+grep"], figures["seal"])
    print(f"medians of {args.runs} interleaved warm runs (wall; CPU = user+sys, all threads)")
    print(f"cp -a:                 {cp_s:.3f} s   CPU {cp_cpu:.3f} s")
    print(f"cp -a + grep -rlF:     {cpg_s:.3f} s   CPU {cpg_cpu:.3f} s")
    print(f"seal+verify (present): {seal_s:.3f} s   CPU {seal_cpu:.3f} s")
    print(f"ratio seal/cp = {seal_s / cp_s:.2f}x   ratio seal/(cp+grep) = {seal_s / cpg_s:.2f}x"
          f"   (target <= 1.5x: {'met' if seal_s <= 1.5 * cpg_s else 'NOT met'})")
    print(f"CPU ratio seal/(cp+grep) = {seal_cpu / cpg_cpu:.2f}x")
    if args.linearity:
        v1 = _verify_time(corpus, out, args.runs)
        double = root / "corpus2x"
        size2 = build_corpus(double, files=args.files, total_mb=2 * args.mb)
        v2 = _verify_time(load_corpus(double), out, args.runs)
        print(f"verify alone: {v1:.3f} s for {size / MB:.0f} MB, {v2:.3f} s for "
              f"{size2 / MB:.0f} MB (same file count): x{v2 / v1:.2f} for "
              f"x{size2 / size:.2f} bytes")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
