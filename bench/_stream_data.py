"""The stream of bench/stream.py: its variants, its lines, and the stand-in harness that prints it.

`stream_lines` yields what Claude Code 2.1.197 prints for a session that reads
large files (an init line, pairs of a ``Read`` tool_use line and its
tool_result line with the file's text twice, a final message, a result
line); `build_standin` writes it once, as the tail of a ``/bin/sh`` stand-in
that answers ``--version`` and the Agent SDK's ``initialize`` request and
then ``tail``s itself, so every contender reads the same bytes from the same
producer.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

MIB = 1 << 20
KIB = 1 << 10
MODEL = "claude-opus-4-8"
FORMAT = 4
"""Bumped when the generated streams change, so old stand-ins are rebuilt."""


@dataclass(frozen=True)
class Variant:
    name: str
    pairs: int
    result_bytes: int
    ascii_only: bool
    note: str


VARIANTS = {
    v.name: v
    for v in (
        Variant("utf8", 2500, 200 * KIB, False, "2,500 Read pairs of 200 KiB, UTF-8 prose"),
        Variant("ascii", 2500, 200 * KIB, True, "the same, ASCII only"),
        Variant("3mb", 340, 1536 * KIB, False, "3 MB lines (1.5 MiB results)"),
        Variant("utf8-100mb", 250, 200 * KIB, False, "the first tenth of utf8"),
        Variant("40mb", 5, 20 * MIB, False, "40 MB lines (20 MiB results)"),
        Variant("1pair", 1, 200 * KIB, False, "one pair: what a stream costs before its length"),
    )
}
QUICK_VARIANTS = ("utf8", "ascii", "3mb", "utf8-100mb", "40mb")

VOCABULARY = ("the cache record widget render index page provider retry budget decision "
              "specification note table scroll eviction policy section letter count summary "
              "model client server request response latency default length status current "
              "superseded history reason")
WORDS = tuple(VOCABULARY.split(" "))
ACCENTED = ("café", "naïve", "→", "—", "✓", "résumé", "über", "日本語", "Ω")
TEXTS_IN_POOL = 24
"""Distinct file texts per stream: more than zstd's window holds, so the kept stream is
compressed for real rather than matched against the previous pair."""

# --- the stream ----------------------------------------------------------------------------


def _text_lines(rng: random.Random, size: int, *, ascii_only: bool) -> list[str]:
    lines: list[str] = []
    n = 0
    while n < size:
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
        if not ascii_only and rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), rng.choice(ACCENTED))
        line = " ".join(words)
        lines.append(line)
        n += len(line.encode()) + 1
    return lines


def _dump(obj: object) -> bytes:
    # Node's JSON.stringify: no spaces, non-ASCII printed raw.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def stream_lines(variant: Variant, workspace: str):  # type: ignore[no-untyped-def]
    """Yield the stream's lines (bytes, each with its newline)."""
    rng = random.Random(7)
    session = "5d0c6f2e-0000-4000-8000-000000000000"
    pool = []
    for _ in range(min(TEXTS_IN_POOL, variant.pairs)):
        lines = _text_lines(rng, variant.result_bytes, ascii_only=variant.ascii_only)
        raw = "\n".join(lines) + "\n"
        numbered = "".join(f"{i + 1}\t{line}\n" for i, line in enumerate(lines))
        pool.append((raw, numbered, len(lines)))
    yield _dump({
        "type": "system", "subtype": "init", "cwd": workspace, "session_id": session,
        "tools": ["Read", "Grep", "Glob"], "mcp_servers": [], "model": MODEL,
        "permissionMode": "dontAsk", "slash_commands": [], "apiKeySource": "none",
        "claude_code_version": "2.1.197", "output_style": "default", "agents": [],
        "skills": [], "plugins": [], "memory_paths": {}, "uuid": "u-init",
    })
    for i in range(variant.pairs):
        raw, numbered, count = pool[i % len(pool)]
        path = f"{workspace}/docs/area-{i % 40:02d}/file-{i:05d}.md"
        yield _dump({
            "type": "assistant", "message": {
                "model": MODEL, "id": f"msg_{i:06d}", "type": "message", "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{i:06d}", "name": "Read",
                             "input": {"file_path": path}}],
                "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 40}},
            "parent_tool_use_id": None, "session_id": session, "uuid": f"a-{i}",
        })
        yield _dump({
            "type": "user", "message": {"role": "user", "content": [
                {"tool_use_id": f"toolu_{i:06d}", "type": "tool_result", "content": numbered}]},
            "parent_tool_use_id": None, "session_id": session, "uuid": f"u-{i}",
            "timestamp": "2026-11-30T11:46:34.603Z",
            "tool_use_result": {"type": "text", "file": {
                "filePath": path, "content": raw, "numLines": count, "startLine": 1,
                "totalLines": count}},
        })
    yield _dump({
        "type": "assistant", "message": {
            "model": MODEL, "id": "msg_final", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": f"Read {variant.pairs} files.\nyes"}]},
        "parent_tool_use_id": None, "session_id": session, "uuid": "a-final",
    })
    # The result line as Claude Code 2.1.197 prints it (tests/fixtures/captures), its cost a
    # JSON number with a fraction (the product keeps it as an exact Decimal).
    yield (b'{"type":"result","subtype":"success","is_error":false,"api_error_status":null,'
           b'"duration_ms":1000,"duration_api_ms":900,"ttft_ms":121,"num_turns":' +
           str(variant.pairs + 1).encode() + b',"result":"yes","stop_reason":"end_turn",'
           b'"session_id":"' + session.encode() + b'","total_cost_usd":0.0111325,'
           b'"usage":{"input_tokens":1534,"output_tokens":116},"modelUsage":{},'
           b'"permission_denials":[],"terminal_reason":"completed","uuid":"r-final"}\n')


# The stand-in: a /bin/sh script whose tail is the stream. It answers --version (preflight)
# and, when the Agent SDK runs it (--input-format stream-json), the SDK's initialize control
# request, then prints the stream with tail (one read/write loop, no parsing).
_HEADER = """#!/bin/sh
# Stand-in harness written by bench/stream.py: prints the stream appended to this file.
case " $* " in *" --version "*) echo "2.1.197 (Claude Code)"; exit 0;; esac
case " $* " in *" --input-format stream-json "*)
  IFS= read -r request
  id=$(printf '%s' "$request" | sed -n 's/.*"request_id" *: *"\\([^"]*\\)".*/\\1/p')
  printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s",\
"response":{}}}\\n' "$id";;
esac
exec tail -c +OFFSET_ "$0"
exit 0
"""


def _header(offset: int) -> bytes:
    return _HEADER.replace("OFFSET_", f"{offset:012d}").encode()


def build_standin(root: Path, variant: Variant) -> tuple[Path, int]:
    """Write (once) the stand-in of ``variant`` under ``root``; return it and the stream's size."""
    path = root / f"standin-{variant.name}-v{FORMAT}"
    size_file = path.with_suffix(".size")
    if path.exists() and size_file.exists():
        return path, int(size_file.read_text())
    root.mkdir(parents=True, exist_ok=True)
    header_len = len(_header(0))
    tmp = path.with_suffix(".tmp")
    size = 0
    with tmp.open("wb") as fp:
        fp.write(_header(header_len + 1))
        for line in stream_lines(variant, str(workspace_of(root))):
            fp.write(line)
            size += len(line)
    tmp.chmod(0o755)
    tmp.rename(path)
    size_file.write_text(str(size))
    return path, size


def workspace_of(root: Path) -> Path:
    return root / "workspace"
