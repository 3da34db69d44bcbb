"""The batch ledger: one JSON line per attempt state change, appended and fsynced.

The ledger is the batch's memory. Transcripts are re-rendered from it, and
``resume`` reruns only what it does not show as finished. A runner killed at
any instant loses at most the line it was writing: a last line without a
newline is ignored on reading (it never finished), every earlier line stands.

Each line is a JSON object with at least ``kind`` ("started" | "final"),
``arm``, ``probe``, ``session``, ``attempt`` (1-based) and ``at`` (RFC 3339
UTC). A "final" line also carries ``state`` (DESIGN.md session states),
``reason``, ``cost_usd`` (decimal string or null = unknown), ``served_model``,
``claude_code_version``, ``outside_paths`` (int), ``anomalies`` (int),
``retryable`` (bool) and, for ``recorded``, ``event`` (the event mapping as
the transcript writes it).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def utc_now() -> str:
    """Now as RFC 3339 UTC with second precision, e.g. ``2026-11-30T12:00:00Z``."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Ledger:
    """Append-only writer of ``ledger.jsonl`` (one line per state change, fsynced).

    Not thread-safe; the supervisor writes from one task at a time (anyio is
    single-threaded per event loop and ``append`` does not await).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record as a JSON line and fsync it before returning.

        Raises:
            OSError: the disk refused the write (the batch cannot go on safely).
        """
        line = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        os.write(self._fd, line.encode("utf-8") + b"\n")
        os.fsync(self._fd)

    def close(self) -> None:
        """Close the file; idempotent."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_ledger(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the complete records of ``path`` in order, streaming (bounded memory).

    A final line without a newline (a write cut by a crash) is skipped; a
    complete line that is not a JSON object raises ValueError naming the line
    number, because a ledger the runner did not write is not evidence.
    """
    if not path.exists():
        return
    with path.open("rb") as fp:
        for number, raw in enumerate(fp, start=1):
            if not raw.endswith(b"\n"):
                return
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not a JSON line ({exc})") from exc
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: not a JSON object")
            yield record


@dataclass(frozen=True, slots=True)
class SessionKey:
    """(arm, probe, session): one session of a batch."""

    arm: str
    probe: str
    session: str


def final_records(path: Path, *, arm: str | None = None) -> dict[SessionKey, list[dict[str, Any]]]:
    """Every "final" record per session, in attempt order (for cost: every attempt counts).

    Args:
        path: the ledger.
        arm: only this arm's sessions when given.

    Returns:
        SessionKey -> the final records of its attempts, oldest first.
    """
    out: dict[SessionKey, list[dict[str, Any]]] = {}
    for record in read_ledger(path):
        if record.get("kind") != "final":
            continue
        if arm is not None and record.get("arm") != arm:
            continue
        key = SessionKey(str(record["arm"]), str(record["probe"]), str(record["session"]))
        out.setdefault(key, []).append(record)
    return out
