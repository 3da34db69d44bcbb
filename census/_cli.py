"""``python -m census RELEASE``: install a release, replay the situations, print its census."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from rich.console import Console

from recorder import PINNED_RELEASE
from sandbox import run_sync

from ._census import INIT_KIND, dump_census, line_kind, take_census
from ._install import InstallFailed, install_release
from ._printout import print_census
from ._reads import recorder_keys, unseen_capabilities
from ._replays import DEFAULT_CONCURRENCY, describe, replay_all, write_captures
from ._runner import Replay, settle_host
from ._situation import LoadedSituation, SituationError, load_situations

__all__ = ["build_parser", "main", "printed_versions", "unsignalled"]

CHECKOUT: Final = Path(__file__).resolve().parent.parent
SITUATIONS: Final = Path("tests/fixtures/census/situations")
CENSUSES: Final = Path("tests/fixtures/census")
EXIT_PASS: Final = 0
EXIT_DRIFT_UNDECIDED: Final = 1
"""A situation did not run, or an init key of the release is not decided."""
EXIT_USAGE: Final = 2
"""The release cannot be installed, or a situation cannot be read."""
EXIT_INTERRUPTED: Final = 130
"""Ctrl-C during the replays: nothing written (128 + SIGINT, as a shell reports it)."""

DESCRIPTION: Final = """\
Replay the recorded situations through one Claude Code release, under the product's own
sandbox, and print its census: per line kind (a line's `type`, and `type/subtype` for a
system line) the keys it printed with their JSON types and in how many situations, the
subtypes of result lines, the keys of assistant and user messages, the members of the init
line's lists (tools, agents, skills, ...); what is NEW or GONE against the pinned release's
committed census; and, per key, what the recorder does with it (read, or its decision:
policed, prose, ignored; an init key neither is 'not decided').

The release is installed with npm into .harness-census/RELEASE/ beside the pinned .harness/
(never touched); the census is written to tests/fixtures/census/RELEASE.json (stable: the same
release replayed again gives the same bytes). Progress goes to stderr, one line per situation.
See docs/census.md."""

EPILOG: Final = f"""\
exit status:
  0  every situation ran and every init key of the release is decided: the release passes
     (it may then be added to the recorder's COVERED_RELEASES)
  1  a situation did not run (timed out, or its sandbox could not start), an init key
     of the release is neither read nor decided by the recorder (RC-07), its init line
     lists a capability the recorder does not know (it refuses those sessions), or the
     harness replayed printed another release
  2  the release cannot be installed, or the situations cannot be read
  130  interrupted (Ctrl-C): nothing written

examples:
  make census CENSUS_VERSION=2.1.332
  .venv/bin/python -m census 2.1.332 --captures      # also keep each stream as a fixture
  .venv/bin/python -m census 2.1.332 --only a_read_answer c_bash --no-write
  .venv/bin/python -m census 2.1.197 --harness .harness-census/2.1.197/node_modules/.bin/claude

The baseline is tests/fixtures/census/{PINNED_RELEASE}.json (the pinned release's)."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m census``."""
    parser = argparse.ArgumentParser(prog="python -m census", description=DESCRIPTION,
                                     epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("release", help="the Claude Code release, e.g. 2.1.332")
    parser.add_argument("--harness", type=Path, metavar="PATH",
                        help="replay through this CLI instead of installing RELEASE (it must "
                             "be that release)")
    parser.add_argument("--streams", type=Path, metavar="DIR",
                        help="take the census of the committed streams DIR/*.jsonl instead of "
                             "replaying (nothing installed or run; e.g. tests/fixtures/captures "
                             "for 2.1.197)")
    parser.add_argument("--situations", type=Path, metavar="DIR", default=None,
                        help=f"the situations' directory (default: {SITUATIONS})")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="replay only these situations (the census then covers them alone)")
    parser.add_argument("--baseline", type=Path, metavar="FILE",
                        help=f"the census to compare with (default: {CENSUSES}/"
                             f"{PINNED_RELEASE}.json, the pinned release's)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help=f"where to write the census (default: {CENSUSES}/RELEASE.json)")
    parser.add_argument("--no-write", action="store_true", help="print only; write no file")
    parser.add_argument("--captures", action="store_true",
                        help="also keep each situation's stdout as tests/fixtures/captures-"
                             "RELEASE/NAME.jsonl, with NAME.meta.json (how it ran)")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, metavar="N",
                        help=f"situations replayed at once (default {DEFAULT_CONCURRENCY})")
    parser.add_argument("--network", choices=("confined", "host"),
                        help="the sessions' network (default: confined where the network "
                             "preflight verifies it, else host, as a batch settles it)")
    parser.add_argument("--bwrap", default="bwrap", help="the bwrap executable")
    return parser


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the census of one release (module docstring); returns the exit status."""
    args = build_parser().parse_args(argv)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Console(highlight=False)
    root = CHECKOUT
    if args.streams is not None:
        return _of_streams(args, out, err, root)
    try:
        situations = load_situations(args.situations or root / SITUATIONS, args.only)
        harness = args.harness or install_release(args.release, root=root)
    except (SituationError, InstallFailed) as exc:
        err.print(f"census: {exc}", markup=False)
        return EXIT_USAGE
    host = settle_host(bwrap=args.bwrap, network=args.network)
    err.print(f"census of {args.release}: {len(situations)} situations through {harness}, "
              f"network {host.network} ({host.network_note})", markup=False)
    started = time.monotonic()
    try:
        replays: list[Replay] = run_sync(lambda: replay_all(
            situations, harness=harness, host=host, concurrency=args.concurrency,
            progress=lambda line: err.print(line, markup=False)))
    except BaseException as exc:
        if not _interrupted(exc):
            raise
        err.print("census: interrupted: the replays under way were ended and their scratch "
                  "directories removed; no census written", markup=False)
        return EXIT_INTERRUPTED
    seconds = time.monotonic() - started
    census = take_census(args.release, [(r.name, r.stdout) for r in replays])
    baseline_path = args.baseline or root / CENSUSES / f"{PINNED_RELEASE}.json"
    baseline = _read_json(baseline_path)
    out_path = args.out or root / CENSUSES / f"{args.release}.json"
    printed = printed_versions(r.stdout for r in replays)
    other_release = bool(printed - {args.release})
    # A census of another release is never written under this one's name: it would replace
    # the committed census of RELEASE with another's (RELEASE.json is what the tests read).
    if not args.no_write and not other_release:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(dump_census(census), encoding="utf-8")
        if args.captures:
            write_captures(replays, root / "tests" / "fixtures" / f"captures-{args.release}")
    ran = [r for r in replays if r.ran]
    reads = recorder_keys()
    header = [f"census of {args.release}: {len(ran)} of {len(replays)} situations ran in "
              f"{seconds:.0f} s (network {host.network}); "
              + (f"against {baseline.get('release')} ({baseline_path})" if baseline is not None
                 else f"no baseline census at {baseline_path}"),
              "recorder: reads OBSERVED_KEYS of every line and INIT_KEYS of the init line; "
              + (f"decision tables: {', '.join(reads.tables)}" if reads.tables
                 else "no decision table exported yet (init keys it does not read are "
                      "'not decided')")]
    print_census(out, census, baseline, reads, header=header)
    if other_release:
        out.print(f"the harness is not {args.release}: its init lines print "
                  f"{', '.join(sorted(printed))} (give --harness the CLI of that release); "
                  f"nothing written", markup=False)
        return EXIT_DRIFT_UNDECIDED
    if not args.no_write:
        out.print(f"written: {out_path}", markup=False)
    return _verdict(out, args.release, replays, reads.undecided_init_keys(census),
                    unsignalled(situations, replays), unseen_capabilities(census))


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C: a KeyboardInterrupt, or a group (trio's nursery wraps it)
    holding nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_interrupted(inner) for inner in exc.exceptions)
    return isinstance(exc, KeyboardInterrupt)


def unsignalled(situations: Sequence[LoadedSituation], replays: Sequence[Replay]) -> list[str]:
    """The situations with a stop signal whose replay ran but ended before it was due (the
    release did not show what the situation is for)."""
    return [s.name for s, r in zip(situations, replays, strict=True)
            if s.situation.stop is not None and r.ran and r.signal_sent is None]


def printed_versions(streams: Iterable[bytes]) -> set[str]:
    """The ``claude_code_version`` values the init lines of ``streams`` print."""
    found: set[str] = set()
    for stdout in streams:
        for line in stdout.splitlines():
            if b'"init"' not in line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if (isinstance(obj, dict) and line_kind(obj) == INIT_KIND
                    and isinstance(version := obj.get("claude_code_version"), str)):
                found.add(version)
    return found


def _of_streams(args: argparse.Namespace, out: Console, err: Console, root: Path) -> int:
    """The census of committed streams (``--streams``): written and printed, no verdict on
    situations (none ran); the init keys are judged as for a replay."""
    paths = sorted(args.streams.glob("*.jsonl"))
    if not paths:
        err.print(f"census: no *.jsonl stream in {args.streams}", markup=False)
        return EXIT_USAGE
    streams = [(path.stem, path.read_bytes()) for path in paths]
    printed = printed_versions(stdout for _, stdout in streams)
    if printed - {args.release}:
        err.print(f"census: the streams in {args.streams} are not of {args.release}: their "
                  f"init lines print {', '.join(sorted(printed))}", markup=False)
        return EXIT_USAGE
    census = take_census(args.release, streams)
    baseline_path = args.baseline or root / CENSUSES / f"{PINNED_RELEASE}.json"
    baseline = _read_json(baseline_path)
    out_path = args.out or root / CENSUSES / f"{args.release}.json"
    if not args.no_write:
        out_path.write_text(dump_census(census), encoding="utf-8")
    reads = recorder_keys()
    print_census(out, census, baseline, reads, header=[
        f"census of {args.release} from {len(paths)} committed streams in {args.streams}"])
    return _verdict(out, args.release, [], reads.undecided_init_keys(census),
                    unseen=unseen_capabilities(census))


def _verdict(out: Console, release: str, replays: Sequence[Replay],
             undecided: Sequence[str], unsignalled: Sequence[str] = (),
             unseen: Sequence[str] = ()) -> int:
    failed = [r for r in replays if not r.ran]
    for result in failed:
        out.print(f"did not run: {result.name}: {describe(result)}", markup=False)
    for name in unsignalled:
        out.print(f"warning: {name} ended before its stop signal was due, so this release "
                  "did not show what the situation is for (its census counts what it printed)",
                  markup=False)
    if undecided:
        out.print(f"not decided: the init line of {release} prints {len(undecided)} key(s) "
                  f"the recorder neither reads nor decides (RC-07: every init key is policed, "
                  f"recorded in the prose or ignored): {', '.join(undecided)}", markup=False)
    if unseen:
        out.print(f"unseen capabilities: the init line of {release} lists {len(unseen)} "
                  f"capability(ies) the recorder does not know, and refuses every session "
                  f"that lists one (RC-07, fail closed; add each to KNOWN_CAPABILITIES once "
                  f"decided): {', '.join(unseen)}", markup=False)
    if failed or undecided or unseen:
        out.print(f"{release} does not pass the census: "
                  + "; ".join(part for part in (
                      f"{len(failed)} situation(s) did not run" if failed else "",
                      f"{len(undecided)} init key(s) not decided" if undecided else "",
                      f"{len(unseen)} capability(ies) unseen" if unseen else "")
                      if part), markup=False)
        return EXIT_DRIFT_UNDECIDED
    out.print(f"{release} passes the census: every situation ran and every init key is "
              "decided", markup=False)
    return EXIT_PASS


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
