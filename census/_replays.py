"""Every situation of a census replayed (a few at once), and the streams kept as fixtures."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import anyio

from ._runner import HostRecipe, Replay, replay
from ._situation import LoadedSituation

__all__ = ["DEFAULT_CONCURRENCY", "describe", "replay_all", "write_captures"]

DEFAULT_CONCURRENCY: Final = 2
"""Replays at once: the hosts this runs on have two cores, and a root runner two session
users (the Makefile's ``SESSION_USERS``)."""


def describe(result: Replay) -> str:
    """One line of a replay's end, for the progress on stderr and the printout."""
    if result.error is not None:
        return f"did not run: {result.error}"
    lines = sum(1 for line in result.stdout.split(b"\n") if line.strip())
    how = (f"timed out after {result.duration_s:g} s" if result.timed_out
           else f"exit {result.returncode} after {result.duration_s:g} s")
    extra = [f"{lines} lines"]
    if result.signal_sent:
        extra.append(result.signal_sent)
    if result.stdout_cut:
        extra.append("stdout cut at its bound")
    if result.unmatched:
        extra.append(f"{result.unmatched} request(s) no script covered")
    return f"{how}, {', '.join(extra)}"


async def replay_all(situations: Sequence[LoadedSituation], *, harness: Path, host: HostRecipe,
                     concurrency: int = DEFAULT_CONCURRENCY,
                     progress: Callable[[str], None] = lambda line: None) -> list[Replay]:
    """Replay each situation (at most ``concurrency`` at once); results in ``situations``'
    order. ``progress`` is told one line per situation as it ends."""
    results: dict[str, Replay] = {}
    queue = list(reversed(situations))  # taken from the end: in the given order
    total = len(situations)

    async def worker() -> None:
        while queue:
            loaded = queue.pop()
            result = await replay(loaded, harness=harness, host=host)
            results[loaded.name] = result
            best = " (best effort)" if loaded.situation.best_effort else ""
            progress(f"[{len(results)}/{total}] {loaded.name}{best}: {describe(result)}")

    async with anyio.create_task_group() as group:
        for _ in range(max(1, min(concurrency, total))):
            group.start_soon(worker)
    return [results[loaded.name] for loaded in situations]


META_SUFFIX: Final = ".meta.json"


def write_captures(replays: Sequence[Replay], directory: Path) -> list[Path]:
    """Each replay's stdout as ``<name>.jsonl`` and how it ran as ``<name>.meta.json``
    (the harness argv, the sandbox's argv with host paths as placeholders, the network, the
    exit status, the signal sent, the end of stderr). Returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for result in replays:
        stream = directory / f"{result.name}.jsonl"
        stream.write_bytes(result.stdout)
        meta = {"argv": list(result.argv), "sandbox_argv": list(result.sandbox_argv),
                "network": result.network, "exit_status": result.returncode,
                "signal": result.signal_sent, "timed_out": result.timed_out,
                "stdout_cut": result.stdout_cut, "unmatched_requests": result.unmatched,
                "error": result.error, "duration_s": result.duration_s,
                "stderr_tail": result.stderr_tail[-2000:]}
        path = directory / f"{result.name}{META_SUFFIX}"
        path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        written += [stream, path]
    return written
