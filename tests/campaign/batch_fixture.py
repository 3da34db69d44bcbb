"""What the tests of the fixture batches share: a copy of a fixture, the CLI, the ledger read.

``tests/fixtures/batches/<name>/`` holds a batch the runner wrote at an older config format,
with its corpus and scripts (tests/campaign/test_format1_batch.py and test_format2_batch.py
say how each was made). Each test works on a copy under `HOST_ROOT`, so every command sees
the batch as a batch that was moved; the expected values are read here with ``json``,
ruamel and zstandard, never by the code under test.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import zstandard
from ruamel.yaml import YAML

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO: Final = Path(__file__).resolve().parents[2]
FIXTURES: Final = REPO / "tests" / "fixtures" / "batches"
HOST_ROOT: Final = Path("/var/tmp")
"""Where the copies go: outside $HOME (a batch is never under it) and outside /tmp."""
CLI_TIMEOUT_S: Final = 120.0
"""Bound on one command: a resume of a fixture runs a few sessions in about 10 s, the others
take about a second."""
DIGEST_SHOWN: Final = 19
"""Characters of a call's digest that ``show`` prints: ``sha256:`` and 12 hex digits."""
Key = tuple[str, str, str]
"""(arm, probe, session)."""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m campaign ARGS`` in a pipe (plain text, no colour); never raises for a status."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=CLI_TIMEOUT_S, check=False)


def fixture_copy(name: str) -> Iterator[Path]:
    """A fresh copy of fixture ``name`` (batch, corpus, scripts) under `HOST_ROOT`, removed
    after: the generator a fixture yields from."""
    root = Path(tempfile.mkdtemp(prefix=f"hw-{name}-", dir=HOST_ROOT))
    try:
        shutil.copytree(FIXTURES / name, root / name)
        yield root / name
    finally:
        shutil.rmtree(root, ignore_errors=True)


def read_yaml(path: Path) -> dict[str, Any]:
    """The YAML mapping in ``path`` (config.yaml, plan.yaml), read by ruamel's safe loader."""
    data: dict[str, Any] = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    return data


def read_ledger(batch: Path) -> list[dict[str, Any]]:
    """Every record of the batch's ledger.jsonl, in order, as JSON objects."""
    lines = (batch / "ledger.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def record_key(record: dict[str, Any]) -> Key:
    """The (arm, probe, session) of a ledger record."""
    return record["arm"], record["probe"], record["session"]


def last_finals(batch: Path) -> dict[Key, dict[str, Any]]:
    """Each session's last ``final`` record, keyed (arm, probe, session)."""
    return {record_key(r): r for r in read_ledger(batch) if r["kind"] == "final"}


def arm_cost(batch: Path, arm: str) -> Decimal:
    """Every attempt's cost of ``arm``, summed as the ledger writes each: a decimal string."""
    return sum((Decimal(r["cost_usd"]) for r in read_ledger(batch)
                if r["kind"] == "final" and r["arm"] == arm), Decimal(0))


def kept_stream(path: Path) -> list[dict[str, Any]]:
    """The lines of a kept stream (``stdout.jsonl.zst``) as JSON objects."""
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        return [json.loads(line) for line in io.TextIOWrapper(reader, encoding="utf-8")]


def init_cwd(stream: Path) -> str:
    """The ``cwd`` of the kept stream's init line: where the workspace was mounted then."""
    return str(next(r["cwd"] for r in kept_stream(stream) if r.get("subtype") == "init"))


def names_its_workspace(stream: Path) -> bool:
    """Whether a tool call of the kept stream names a path under the init line's ``cwd``."""
    records = kept_stream(stream)
    cwd = init_cwd(stream)
    inputs = [json.dumps(block.get("input")) for r in records if r.get("type") == "assistant"
              for block in r["message"]["content"] if block.get("type") == "tool_use"]
    return any(f"{cwd}/" in text for text in inputs)


def assert_show_prints_the_last_attempt(batch: Path, key: Key) -> None:
    """``show`` of session ``key`` exits 0 and prints its last final record's state, reason,
    calls (tool, argument, the digest's first `DIGEST_SHOWN` characters) and answer, and every
    line of the attempt's final.txt; all read from the ledger and the session's directory."""
    arm, probe, session = key
    run = cli("show", str(batch), arm, probe, session)
    assert run.returncode == 0, run.stderr
    final = last_finals(batch)[key]
    lines = run.stdout.splitlines()
    assert f"  state: {final['state']}" in lines and f"  reason: {final['reason']}" in lines
    calls = final["event"]["calls"]
    assert f"  calls ({len(calls)}):" in lines
    for call in calls:
        assert f"    {call['tool']} {call['argument']} -> {call['result'][:DIGEST_SHOWN]}" in lines
    assert f"  answer: {final['event']['answer']}" in lines
    text = (batch / "sessions" / arm / probe / session / "attempt-1" / "final.txt").read_text()
    assert all(f"    | {line}" in lines for line in text.split("\n"))
