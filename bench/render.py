"""Benchmark (not a test): rendering one arm's transcript of N events, and its read-back proof.

The per-arm transcript is rebuilt as the batch goes; at 10,000 sessions it
holds 10,000 events. This builds N synthetic recorded sessions (each three
calls, one produced artifact with two cites and a finding, an answer; one
more session per ten that was not recorded), then times, in CPU seconds of
this process (the work is single-threaded and CPU-bound, and CPU time does
not count other processes sharing the host), each the best of ``--runs``:

* ``build``: constructing the `Transcript` from ready `Event`/`SessionRow`
  models (the cross-section checks);
* ``first``: the batch's writer, `write_streamed` (the product's only one), into a
  new `ItemSpool` (each event loaded, dumped and proved, the file written and read
  back: the whole transcript from nothing, what a growing transcript pays once, over
  the batch);
* ``again``: `write_streamed` with that `ItemSpool` kept, one event added
  (what each later render pays);
* ``check``: `parse_transcript` of the text ``first`` wrote (the check, loading every
  event).

The bench measures the product only: the tests' whole-text renderer (their oracle) is
not timed here, and nothing here imports the tests.

Usage: ``.venv/bin/python bench/render.py [N ...]`` (default 10000 100000).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from recorder.transcript import (
    Artifact,
    Call,
    Event,
    Identity,
    ItemSpool,
    SessionRow,
    Transcript,
    parse_transcript,
    write_streamed,
)

T = TypeVar("T")
DEFAULT_SIZES = (10_000, 100_000)


def _digest(i: int, k: int) -> str:
    return "sha256:" + f"{i:032x}{k:032x}"


def synthetic(n: int) -> Transcript:
    """N recorded sessions over 100 probes, plus one not recorded per ten."""
    events, rows = [], []
    for i in range(n):
        probe, session = f"HW-PRB-{i % 100:04d}", f"r{i // 100 + 1}"
        events.append(Event(
            probe=probe, session=session,
            calls=[Call(tool="Read", argument=f"docs/d{i}.md", result=_digest(i, 1)),
                   Call(tool="Grep", argument="HW-DR-0052 in docs", result=_digest(i, 2)),
                   Call(tool="Bash", argument=f"ls docs/{i}", result=_digest(i, 3))],
            produced=[Artifact(path="notes.md", result=_digest(i, 4),
                               cites=["HW-DR-0051", "HW-DR-0052"], findings=["rule-a"])],
            answer="HW-DR-0052",
        ))
        rows.append(SessionRow(probe=probe, session=session, state="recorded", outside_paths=1))
    for j in range(n // 10):
        rows.append(SessionRow(probe="HW-PRB-9999", session=f"r{j + 1}", state="timed-out",
                               outside_paths=0))
    identity = Identity(
        model="claude-opus-4-8", served_version="claude-opus-4-8-20261101", tree=_digest(0, 0),
        lock=_digest(0, 0), selection=_digest(0, 0), read_set=_digest(0, 0), seed=0,
        harness="headwater-campaign 0.1.0", tier="campaign", arm="present",
        at="2026-11-30T12:00:00Z", cost_cents=n,
    )
    return Transcript(prose=f"Prose.\n\nOutside-workspace paths named: {n}", identity=identity,
                      events=events, sessions=rows)


def best(runs: int, fn: Callable[[], T]) -> tuple[float, T]:
    """The least CPU time of ``runs`` calls of ``fn``, in seconds, and the last result."""
    times, out = [], None
    for _ in range(runs):
        start = time.process_time()
        out = fn()
        times.append(time.process_time() - start)
    assert out is not None
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(DEFAULT_SIZES))
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for n in args.sizes:
        t = synthetic(n)
        build_s, _ = best(args.runs, lambda t=t: Transcript(  # type: ignore[misc]
            prose=t.prose, identity=t.identity, events=t.events, sessions=t.sessions))
        with tempfile.TemporaryDirectory(prefix="render-") as scratch:
            path = Path(scratch) / "arm.md"
            first_s, spool = best(args.runs, lambda t=t, path=path: _first(t, path))
            text = path.read_text(encoding="utf-8")
            extra = Event(probe="HW-PRB-9998", session="r1", calls=[])
            more = [*t.sessions, SessionRow(probe="HW-PRB-9998", session="r1",
                                            state="recorded", outside_paths=0)]
            grown = [*t.events, extra]
            again_s, _ = best(args.runs, lambda t=t, s=spool, g=grown, m=more, path=path:
                              _write(t, path, g, m, s))
            spool.close()
        check_s, _ = best(args.runs, lambda text=text: parse_transcript(text))
        print(f"{n:>7} events ({len(text) / 1e6:6.1f} MB), CPU s: build {build_s:6.2f}; "
              f"first {first_s:7.2f}, again {again_s:6.2f}; "
              f"check {check_s:7.2f}", flush=True)


def _write(t: Transcript, path: Path, events: list[Event], rows: list[SessionRow],
           spool: ItemSpool) -> ItemSpool:
    """`write_streamed` of these parts; the rows of recorded sessions refer to their events."""
    refs: list[tuple[SessionRow, int | None]] = []
    by_name = {(e.probe, e.session): i for i, e in enumerate(events)}
    for row in rows:
        refs.append((row, by_name[(row.probe, row.session)] if row.state == "recorded"
                     else None))
    write_streamed(path, prose=t.prose, identity=t.identity, rows=lambda: iter(refs),
                   load=events.__getitem__, spool=spool)
    return spool


def _first(t: Transcript, path: Path) -> ItemSpool:
    return _write(t, path, t.events, t.sessions, ItemSpool(path.parent))


if __name__ == "__main__":
    main()
