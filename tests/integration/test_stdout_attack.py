"""A session that prints without end is ended at its stdout bound (``--max-stdout``).

Under real bwrap, through ``record``: a stand-in prints an init line, then 1 MiB lines
of whitespace (or of one byte) for 12 s, deaf to SIGTERM and to a closed pipe, then a
valid stream. Such a flood once printed 37.7 GB in 60 s: the kept stream (zstd) was only
3.2 MB, so the writes limit never saw it, and the runner parsed and compressed at more
than a core the whole time.

Rule (docs/confinement.md "Limits", docs/cli.md): the runner counts the bytes it receives
from the pipe before any line handling; past the bound the session is ended at once,
``limit-exceeded``, its reason naming the bound and its option; the runner stopped
reading soon after the bound (what it kept is at most the bound plus one read of the
pipe, 1 MiB), and the session's time is short (not the flood's 12 s). ``retranscribe``
re-reads only what was kept and keeps the state.

Seen red with the bound removed (``max_stdout_bytes`` not passed to ``drive_child`` in
campaign/supervisor/_session.py): the flood runs its 12 s, the session is ``recorded``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import zstandard

from recorder._lines import READ_CHUNK_BYTES
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

MiB = 1024 * 1024
BOUND = 8 * MiB
FLOOD_S = 12
STANDIN = r'''#!/usr/bin/python3
import json, os, signal, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (stdout attack)"); sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
task = sys.argv[-1]
def out(data):
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(1, view):]
        except OSError:
            time.sleep(0.01)
def emit(o): out((json.dumps(o) + "\n").encode())
def init():
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
          "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
          "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
init()
fill = b" " if "whitespace" in task else b"x"
line = fill * (1024 * 1024 - 1) + b"\n"
end = time.monotonic() + FLOOD_S
while time.monotonic() < end:
    out(line)
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": "did: flood\nnothing"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''.replace("FLOOD_S", str(FLOOD_S))


def _record(root: Path, probe: str) -> subprocess.CompletedProcess[str]:
    kit.write_script(root / "scripts", "unused", "no task says this")
    return kit.cli("record", "--corpus", str(root / "corpus"), "--tier", "regression",
                   "--probe", probe, "--arm", "present", "--batch-dir", str(root / "batch"),
                   "--harness", str(root / "claude"), "--provider", "scripted",
                   "--scripts", str(root / "scripts"), "--max-stdout", "8M",
                   env=kit.base_env())


def _kept_bytes(path: Path) -> int:
    """Bytes the kept stream holds, decompressed."""
    total = 0
    with path.open("rb") as fh:
        reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
        while chunk := reader.read(MiB):
            total += len(chunk)
    return total


@pytest.mark.parametrize("fill", ["whitespace", "one-byte"])
def test_a_flood_on_stdout_ends_limit_exceeded_at_the_bound(bwrap: str, fill: str) -> None:
    probe = f"OUT-{fill.upper()}-1"
    with kit.host_dir("hw-stdout-") as root:
        kit.write_corpus(root / "corpus", {probe: f"flood {fill} now."}, tools=["Bash"])
        kit.write_harness(root / "claude", STANDIN)
        batch = root / "batch"
        done = _record(root, probe)
        assert done.returncode == 1, done.stdout + done.stderr  # a final state not recorded
        (final,) = kit.final_list(batch)
        assert final["state"] == "limit-exceeded", final["reason"]
        assert final["limit"] == "stdout" and final["end"] == "stdout-limit"
        assert "printed more than 8 MiB on stdout (--max-stdout)" in final["reason"]
        assert not final["retryable"]
        # The runner stopped reading soon after the bound: kept <= bound + one read.
        assert BOUND < final["stream_bytes"] <= BOUND + READ_CHUNK_BYTES
        assert _kept_bytes(batch / final["stream"]) == final["stream_bytes"]
        assert final["duration_s"] < FLOOD_S / 2, final["duration_s"]
        prose = (batch / "transcripts" / "present.md").read_text()
        assert f"{probe}/r1 ended limit-exceeded" in prose
        assert kit.processes_under(root) == {}
        # retranscribe re-reads only what was kept, and keeps what the runner saw.
        again = kit.cli("retranscribe", str(batch), env=kit.base_env())
        assert again.returncode == 0, again.stdout + again.stderr
        (redone,) = [r for r in kit.ledger_dicts(batch) if r["kind"] == "rederived"]
        assert (redone["state"], redone["reason"]) == (final["state"], final["reason"])
