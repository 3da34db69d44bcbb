"""Benchmark (not a test): one long stream-json stream through a pipe, the Agent SDK, the product.

The stream is what the real CLI prints for a session that reads large files:
an init line, then ``--pairs`` pairs of an assistant ``Read`` tool_use line and
its user tool_result line (a ``--result-kib`` file, its text twice per line:
numbered in ``message.content``, raw in ``tool_use_result.file.content``, as
Claude Code 2.1.197 prints it), a final message and a result line. Variants:

* ``utf8``: prose with some non-ASCII characters, printed raw (2,500 pairs of
  200 KiB: 1,076 MB);
* ``ascii``: the same with ASCII only;
* ``3mb``: results of 1.5 MiB, so 3 MB lines (the same total size);
* ``utf8-100mb``: the first tenth of ``utf8`` (peak RSS flat in stream length);
* ``40mb``: five results of 20 MiB, 40 MB lines (lines of tens of MB are handled).

Each stream (bench/_stream_data.py) is the tail of a stand-in harness (``/bin/sh``; the stream is
appended to the script, which ``tail``s itself: one self-contained file, as
RC-02 wants of stand-ins), so every contender reads exactly the same bytes
from the same producer:

* ``pipe``: the stand-in piped into ``cat >/dev/null`` (the floor);
* ``sdk``: the Claude Agent SDK's ``query()`` with ``cli_path`` at the stand-in,
  which answers the SDK's ``initialize`` control request first; every message
  is taken (the SDK's default ``max_buffer_size`` of 1 MiB refuses longer
  lines: those variants run with 64 MiB, and the table says so);
* ``product``: the runner's own path: `open_confined` (bwrap, the session's
  cgroup, seccomp, the session user for a root runner), `drive_child`,
  `StreamObserver.feed` for each line and the kept stream (`StreamKeeper`,
  zstd) for each chunk, flushed whenever the pipe is empty (as a session's
  is), then `StreamObserver.finish`.

Each contender runs in an interpreter of its own (``--one``): its peak RSS is
``ru_maxrss`` of that process (children excluded); its baseline is the same
figure just after its imports (the product imports the whole runner,
``campaign.cli``). Rounds are interleaved (every contender once per round) and
each ratio is taken within a round, then the median over rounds is printed
(these machines are shared: absolute figures move 2x between runs; ratios
from one round do not).

Usage::

    .venv/bin/python bench/stream.py [--rounds N] [--variants utf8,ascii,...]
        [--contenders pipe,sdk,product] [--root DIR] [--profile VARIANT]

``--profile VARIANT`` runs the product once under pyinstrument and prints
where the time goes. The default root is ``/var/tmp/headwater-bench-stream``
(it holds about 3.5 GB of stand-ins; ``--clean`` removes it at the end).
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
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import _figures  # noqa: E402  (bench/, beside this script)
from _stream_data import (  # noqa: E402  (bench/, beside this script)
    MIB,
    QUICK_VARIANTS,
    VARIANTS,
    Variant,
    build_standin,
    workspace_of,
)

MB = 1_000_000
DEFAULT_ROOT = Path("/var/tmp/headwater-bench-stream")
SDK_DEFAULT_BUFFER = 1 * MIB
"""claude-agent-sdk's default ``max_buffer_size``: a longer line is an error."""
SDK_LARGE_BUFFER = 64 * MIB
CONTENDERS = ("pipe", "sdk", "product", "no-keep")
"""``no-keep``: the product with ``--no-keep-streams`` (what the kept stream's zstd costs)."""


# --- one contender in this process (--one) ------------------------------------------------


def _maxrss_mib() -> float:
    """This process's peak RSS, MiB: ``VmHWM`` (ru_maxrss would carry the peak of the process
    that forked this one across exec(2), and the parent here has built the streams)."""
    with open("/proc/self/status") as fp:
        for line in fp:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one_pipe(standin: Path, size: int) -> dict[str, Any]:
    baseline = _maxrss_mib()
    start = time.monotonic()
    done = subprocess.run(["/bin/sh", "-c", 'exec "$0" | cat >/dev/null', str(standin)],
                          check=True)
    seconds = time.monotonic() - start
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"seconds": seconds, "bytes": size, "baseline_mib": baseline,
            "peak_mib": float("nan"), "cpu_s": child.ru_utime + child.ru_stime,
            "ok": done.returncode == 0, "note": "sh, tail and cat"}


def one_sdk(standin: Path, size: int, buffer: int) -> dict[str, Any]:
    import anyio
    from claude_agent_sdk import ClaudeAgentOptions, query

    baseline = _maxrss_mib()
    counted = {"messages": 0}
    error: list[str] = []

    async def go() -> None:
        options = ClaudeAgentOptions(cli_path=str(standin), max_buffer_size=buffer)
        try:
            async for _message in query(prompt="Read them.", options=options):
                counted["messages"] += 1
        except Exception as exc:  # the SDK's refusal of a long line is a figure here
            error.append(f"{type(exc).__name__}: {str(exc)[:120]}")

    cpu = _cpu_s()
    start = time.monotonic()
    anyio.run(go)
    seconds = time.monotonic() - start
    return {"seconds": seconds, "bytes": size, "baseline_mib": baseline,
            "peak_mib": _maxrss_mib(), "cpu_s": _cpu_s() - cpu, "messages": counted["messages"],
            "ok": not error, "note": error[0] if error else f"max_buffer_size {buffer // MIB} MiB"}


def one_product(standin: Path, size: int, root: Path, *, profile: bool = False,
                keep: bool = True) -> dict[str, Any]:
    import anyio

    import campaign.cli  # the runner's whole import baseline
    from campaign.supervisor._streams import StreamKeeper
    from recorder._command import PERMISSION_MODE
    from recorder._driver import drive_child
    from recorder._initcheck import InitPolicy
    from recorder._transform import StreamObserver
    from sandbox import ConfinedSpec, open_confined
    from sandbox.users import session_pool

    del campaign.cli
    baseline = _maxrss_mib()
    workspace = workspace_of(root)
    workspace.mkdir(parents=True, exist_ok=True)
    kept = root / "kept" / f"{os.getpid()}.jsonl.zst"
    kept.parent.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}

    async def go() -> None:
        policy = InitPolicy(permission_mode=PERMISSION_MODE, declared_mcp_servers=frozenset(),
                            host_skill_names=frozenset(), config_dir="/nonexistent")
        observer = StreamObserver(policy=policy, workspace=workspace)
        keeper = StreamKeeper(kept) if keep else None
        spec = ConfinedSpec(command=["/opt/harness/claude"], executable=standin,
                            network="none", user=session_pool(), workspace=workspace,
                            name="bench")
        cpu = _cpu_s()
        start = time.monotonic()
        async with open_confined(spec) as sandbox:
            result = await drive_child(sandbox.child, on_line=observer.feed, stderr_tail=None,
                                       wall_limit_s=3600, watchdog_s=600,
                                       on_chunk=keeper.write if keeper else None,
                                       on_idle=keeper.flush if keeper else None)
        kept_bytes = keeper.close() if keeper else 0
        obs = observer.finish(end=result.end, exit_status=result.exit_status, tail=result.tail)
        out.update(seconds=time.monotonic() - start, cpu_s=_cpu_s() - cpu,
                   bytes=result.stdout_bytes, state=obs.state, calls=len(obs.calls),
                   kept_mb=kept_bytes / MB, ok=obs.state == "recorded"
                   and result.stdout_bytes == size,
                   note=f"{obs.state}, {len(obs.calls)} calls, kept {kept_bytes / MB:.0f} MB"
                   if keep else f"{obs.state}, {len(obs.calls)} calls, nothing kept")

    if profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
        anyio.run(go, backend="trio")
        profiler.stop()
        print(profiler.output_text(unicode=False, color=False, show_all=False),
              file=sys.stderr)
    else:
        anyio.run(go, backend="trio")
    kept.unlink(missing_ok=True)
    out.update(baseline_mib=baseline, peak_mib=_maxrss_mib())
    return out


def import_baseline_mib() -> float:
    """Peak RSS of an interpreter that imported anyio, trio, pydantic, ruamel.yaml and rich."""
    code = ("import anyio, trio, pydantic, ruamel.yaml, rich.console, sys;"
            f"sys.path.insert(0, {str(Path(__file__).parent)!r}); import stream;"
            "print(stream._maxrss_mib())")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout)


# --- the driver of rounds ------------------------------------------------------------------


def run_one(contender: str, standin: Path, size: int, root: Path, buffer: int) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--one", contender, str(standin), str(size),
            "--root", str(root), "--buffer", str(buffer)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"ok": False, "note": (done.stderr.strip().splitlines() or ["?"])[-1][:120]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--one", nargs=3, metavar=("CONTENDER", "STANDIN", "SIZE"))
    parser.add_argument("--buffer", type=int, default=SDK_DEFAULT_BUFFER)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(QUICK_VARIANTS))
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--profile", metavar="VARIANT")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--clean", action="store_true")
    args = parser.parse_args(argv)

    if args.one:
        contender, standin, size = args.one[0], Path(args.one[1]), int(args.one[2])
        if contender == "pipe":
            result = one_pipe(standin, size)
        elif contender == "sdk":
            result = one_sdk(standin, size, args.buffer)
        else:
            result = one_product(standin, size, args.root, keep=contender == "product")
        print(json.dumps(result))
        return 0

    if args.profile:
        standin, size = build_standin(args.root, VARIANTS[args.profile])
        result = one_product(standin, size, args.root, profile=True)
        print(json.dumps(result))
        return 0

    variants = [VARIANTS[name] for name in args.variants.split(",")]
    contenders = args.contenders.split(",")
    built = {}
    for variant in variants:
        started = time.monotonic()
        built[variant.name] = build_standin(args.root, variant)
        print(f"stream {variant.name}: {built[variant.name][1] / MB:,.0f} MB "
              f"({time.monotonic() - started:.1f} s to build or find)", file=sys.stderr)
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for n in range(args.rounds):
        for variant in variants:
            standin, size = built[variant.name]
            for contender in contenders:
                buffer = SDK_DEFAULT_BUFFER
                if contender == "sdk" and variant.result_bytes * 2 > SDK_DEFAULT_BUFFER:
                    buffer = SDK_LARGE_BUFFER
                r = run_one(contender, standin, size, args.root, buffer)
                r["round"] = n
                rows.setdefault((variant.name, contender), []).append(r)
                mbps = size / MB / r["seconds"] if r.get("ok") else float("nan")
                print(f"round {n + 1} {variant.name:>10} {contender:>8}: {mbps:7.0f} MB/s "
                      f"cpu {r.get('cpu_s', float('nan')):5.2f} s "
                      f"peak {r.get('peak_mib', float('nan')):6.1f} MiB  {r.get('note', '')}",
                      file=sys.stderr, flush=True)
    report(variants, contenders, rows, built, args)
    if args.clean:
        shutil.rmtree(args.root, ignore_errors=True)
    return 0


def _median(values: list[float]) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def report(variants: list[Variant], contenders: list[str],
           rows: dict[tuple[str, str], list[dict[str, Any]]],
           built: dict[str, tuple[Path, int]], args: argparse.Namespace) -> None:
    base = import_baseline_mib()

    def mbps(r: dict[str, Any], size: int) -> float:
        return size / MB / r["seconds"] if r.get("ok") else float("nan")

    def ratio(variant: str, a: str, b: str, what: str) -> float:
        size = built[variant][1]
        pairs = zip(rows.get((variant, a), []), rows.get((variant, b), []), strict=False)
        if what == "speed":
            return _median([mbps(x, size) / mbps(y, size) for x, y in pairs])
        return _median([x["peak_mib"] / y["peak_mib"] if x.get("ok") and y.get("ok")
                        else float("nan") for x, y in pairs])

    print(f"\nstream-json through a pipe, the Agent SDK and the product "
          f"(medians of {args.rounds} interleaved rounds)")
    print(f"{'variant':>10} {'MB':>6} | " + " | ".join(
        f"{c + ' MB/s':>12} {'peak MiB':>8}" for c in contenders))
    for variant in variants:
        size = built[variant.name][1]
        cells = []
        for c in contenders:
            rs = rows.get((variant.name, c), [])
            ok = [r for r in rs if r.get("ok")]
            if not ok:
                cells.append(f"{'fails':>12} {'-':>8}")
                continue
            cells.append(f"{_median([mbps(r, size) for r in ok]):>12.0f} "
                         f"{_median([r['peak_mib'] for r in ok]):>8.1f}")
        print(f"{variant.name:>10} {size / MB:>6,.0f} | " + " | ".join(cells))
    for variant in variants:
        for c in contenders:
            notes = {r.get("note", "") for r in rows.get((variant.name, c), [])}
            print(f"  {variant.name} {c}: {'; '.join(sorted(notes))}")
    figures = stream_figures(variants, contenders, rows, built, base, ratio, mbps)
    product_base = _median([r.get("baseline_mib", float("nan"))
                            for (_, c), rs in rows.items() for r in rs if c == "product"])
    print(f"\nimport baseline (anyio, trio, pydantic, ruamel.yaml, rich): {base:.1f} MiB; "
          f"the runner's own (campaign.cli): {product_base:.1f} MiB")
    print("ratios: the median over rounds of each round's ratio")
    print(_figures.table(figures))
    if args.json is not None:
        args.json.write_text(json.dumps({
            "figures": _figures.to_json(figures), "import_baseline_mib": base,
            "runner_baseline_mib": product_base,
            "rows": {f"{v}/{c}": rs for (v, c), rs in rows.items()}}, indent=1))


def stream_figures(variants: list[Variant], contenders: list[str],
                   rows: dict[tuple[str, str], list[dict[str, Any]]],
                   built: dict[str, tuple[Path, int]], base: float,
                   ratio: Any, mbps: Any) -> list[_figures.Figure]:
    """The targets of the stream bench, each as a figure."""
    out: list[_figures.Figure] = []

    def peak(v: str, c: str) -> float:
        return _median([r["peak_mib"] for r in rows.get((v, c), []) if r.get("ok")])

    for variant in variants:
        v = variant.name
        if v in ("utf8-100mb", "1pair"):
            continue
        if v == "40mb":
            ok = [r for r in rows.get((v, "product"), []) if r.get("ok")]
            out.append(_figures.Figure(f"stream {v}: lines of 40 MB recorded (product)",
                                       float(len(ok)), "runs", "every run",
                                       len(ok) == len(rows.get((v, "product"), [])) > 0))
            continue
        if "sdk" in contenders:
            out.append(_figures.at_least(f"stream {v}: throughput product / SDK",
                                         ratio(v, "product", "sdk", "speed"), 2.5))
        if "pipe" in contenders:
            out.append(_figures.at_least(f"stream {v}: throughput product / pipe",
                                         ratio(v, "product", "pipe", "speed"), 0.5))
        if "sdk" in contenders:
            out.append(_figures.at_most(f"stream {v}: peak RSS product / SDK",
                                        ratio(v, "product", "sdk", "rss"), 0.5))
        out.append(_figures.at_most(f"stream {v}: peak RSS product - import baseline",
                                    peak(v, "product") - base, 16, "MiB"))
        if "no-keep" in contenders and "sdk" in contenders:
            out.append(_figures.info(f"stream {v}: throughput product without the kept "
                                     "stream / SDK", ratio(v, "no-keep", "sdk", "speed")))
    if "utf8" in built and "utf8-100mb" in built:
        out.append(_figures.at_most("stream: peak RSS at 1 GB / at 100 MB (product)",
                                    peak("utf8", "product") / peak("utf8-100mb", "product"),
                                    1.10))
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
