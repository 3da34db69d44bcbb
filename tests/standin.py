"""Stand-in harnesses for tests: one self-contained file, data embedded (docs/glossary.md RC-02).

The file is run by Debian's ``/usr/bin/python3`` (under ``/usr``, so it also
runs inside bwrap where only ``/usr`` and its symlinks are mounted) and reads
nothing but itself.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

STANDIN_PYTHON: Final = "/usr/bin/python3"
"""Debian's interpreter; the venv's python lives outside /usr and is not mounted by bwrap."""

STDOUT_CHUNKS: Final = 3
"""The stream is written in this many pieces, flushed one by one (cuts land mid-line)."""

_TEMPLATE: Final = '''#!{python}
"""Stand-in harness written by tests/standin.py: prints an embedded stream and exits."""
import base64, os, sys, time

OUT = base64.b64decode({out!r})
ERR = base64.b64decode({err!r})
LATER = [(delay, base64.b64decode(data)) for delay, data in {later!r}]
CHUNKS, SLEEP_S, HOLD_S, CODE = {chunks!r}, {sleep_s!r}, {hold_s!r}, {code!r}

if sys.argv[1:] == ["--version"]:  # preflight asks, as of the real CLI: answer at once
    print("0.0.0 (headwater stand-in)")
    sys.exit(0)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


step = max(1, -(-len(OUT) // CHUNKS))
for start in range(0, len(OUT), step):
    write_all(1, OUT[start:start + step])
    time.sleep(0.01)
for delay, data in LATER:
    time.sleep(delay)
    write_all(1, data)
if HOLD_S > 0 and os.fork() == 0:
    # A descendant that keeps the stdout pipe open after the stand-in exits.
    os.close(2)
    time.sleep(HOLD_S)
    os._exit(0)
time.sleep(SLEEP_S)
write_all(2, ERR)
sys.exit(CODE)
'''


def write_standin(
    path: Path,
    *,
    stdout: bytes,
    exit_code: int = 0,
    sleep_s: float = 0,
    stderr: bytes = b"",
    hold_stdout_s: float = 0,
    later: Sequence[tuple[float, bytes]] = (),
) -> Path:
    """Write an executable stand-in harness at ``path`` and return ``path``.

    When run, it writes ``stdout`` in `STDOUT_CHUNKS` pieces (each written
    whole, 10 ms apart), then for each ``(delay_s, data)`` of ``later`` sleeps
    ``delay_s`` seconds and writes ``data``, then, if ``hold_stdout_s`` > 0, forks a descendant
    that holds stdout open for that many seconds; then it sleeps ``sleep_s``
    seconds, writes ``stderr`` and exits with ``exit_code``. Run with the one
    argument ``--version`` (the runner's preflight), it prints a version line
    and exits 0 at once, whatever it was told to sleep or hold.
    """
    text = _TEMPLATE.format(
        python=STANDIN_PYTHON,
        out=base64.b64encode(stdout),
        err=base64.b64encode(stderr),
        chunks=STDOUT_CHUNKS,
        sleep_s=float(sleep_s),
        hold_s=float(hold_stdout_s),
        later=[(float(delay), base64.b64encode(data)) for delay, data in later],
        code=exit_code,
    )
    path.write_text(text, encoding="ascii")
    path.chmod(0o755)
    return path


_SESSION_TEMPLATE: Final = '''#!{python}
"""Stand-in harness written by tests/standin.py: one well-formed session for any task."""
import json, os, sys, time

ANSWER, COST, SLEEP_S, MODEL = {answer!r}, {cost!r}, {sleep_s!r}, {model!r}

if sys.argv[1:] == ["--version"]:
    print("0.0.0 (headwater session stand-in)")
    sys.exit(0)


def emit(obj):
    os.write(1, (json.dumps(obj) + "\\n").encode())


# "0.0.0-standin" is no release, so RC-07 requires every policed key: each given, granting nothing.
emit({{"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Read"],
      "mcp_servers": [], "model": MODEL, "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {{}}, "claude_code_version": "0.0.0-standin",
      "additional_directories": [], "sandbox_enabled": False, "capabilities": [],
      "original_cwd": os.getcwd()}})
time.sleep(SLEEP_S)
emit({{"type": "assistant", "parent_tool_use_id": None, "message": {{
    "id": "m1", "model": MODEL, "content": [{{"type": "text", "text": "Done.\\n" + ANSWER}}]}}}})
os.write(1, ('{{"type":"result","subtype":"success","is_error":false,"api_error_status":null,'
             '"num_turns":1,"result":"","total_cost_usd":' + COST + '}}\\n').encode())
'''


def write_session_standin(path: Path, *, answer: str = "yes", cost: str = "0.0100",
                          sleep_s: float = 0.0, model: str = "claude-standin-1") -> Path:
    """Write a stand-in that prints one complete, recordable session for whatever task.

    Its init line passes the init check (dontAsk, nothing loaded), it waits
    ``sleep_s`` seconds, then says ``answer`` on the last line of its one
    message and ends with a result line of ``cost`` USD (JSON number text).
    ``--version`` answers at once.
    """
    text = _SESSION_TEMPLATE.format(python=STANDIN_PYTHON, answer=answer, cost=cost,
                                    sleep_s=float(sleep_s), model=model)
    path.write_text(text, encoding="ascii")
    path.chmod(0o755)
    return path


_STREAM_TEMPLATE: Final = '''#!{python}
"""Stand-in harness written by tests/standin.py: a long session of Read pairs, as fast as the
pipe takes it, for whatever task."""
import json, os, sys

TOTAL, RESULT_BYTES, MODEL = {total!r}, {result_bytes!r}, {model!r}

if sys.argv[1:] == ["--version"]:
    print("0.0.0 (headwater stream stand-in)")
    sys.exit(0)


def out(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def dump(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\\n"


cwd = os.getcwd()
out(dump({{"type": "system", "subtype": "init", "cwd": cwd, "tools": ["Read"],
           "mcp_servers": [], "model": MODEL, "permissionMode": "dontAsk", "skills": [],
           "plugins": [], "memory_paths": {{}}, "claude_code_version": "0.0.0-standin",
      "additional_directories": [], "sandbox_enabled": False, "capabilities": [],
      "original_cwd": os.getcwd()}}))
# The text twice per line, as the real CLI prints a Read: numbered, then raw.
lines = [("line %d of the file, caf\\u00e9 \\u2192 " % i) * 2 for i in range(RESULT_BYTES // 60)]
raw = "\\n".join(lines) + "\\n"
numbered = "".join("%d\\t%s\\n" % (i + 1, line) for i, line in enumerate(lines))
user = dump({{"type": "user", "message": {{"role": "user", "content": [
    {{"tool_use_id": "toolu_XXXXXXXX", "type": "tool_result", "content": numbered}}]}},
    "parent_tool_use_id": None, "tool_use_result": {{"type": "text", "file": {{
        "filePath": cwd + "/docs/f.md", "content": raw}}}}}})
written, n = 0, 0
while written < TOTAL:
    tid = b"toolu_%08d" % n
    out(dump({{"type": "assistant", "parent_tool_use_id": None, "message": {{
        "id": "m%d" % n, "model": MODEL, "content": [{{"type": "tool_use", "id": tid.decode(),
        "name": "Read", "input": {{"file_path": cwd + "/docs/f%d.md" % n}}}}]}}}}))
    line = user.replace(b"toolu_XXXXXXXX", tid)
    out(line)
    written += len(line)
    n += 1
out(dump({{"type": "assistant", "parent_tool_use_id": None, "message": {{
    "id": "final", "model": MODEL, "content": [{{"type": "text", "text": "Read them.\\nyes"}}]}}}}))
out(b'{{"type":"result","subtype":"success","is_error":false,"api_error_status":null,'
    b'"num_turns":2,"result":"","total_cost_usd":0.0100}}\\n')
'''


def write_stream_standin(path: Path, *, total_bytes: int, result_bytes: int = 200 * 1024,
                         model: str = "claude-standin-1") -> Path:
    """Write a stand-in that prints a recordable session of at least ``total_bytes`` bytes.

    Its init line passes the init check; then Read tool_use lines, each answered by a user
    line that holds a ``result_bytes`` text twice (numbered, and raw in
    ``tool_use_result``, as Claude Code prints a Read), as fast as the pipe takes them,
    until ``total_bytes``; then a final message ending ``yes`` and a result line. Nothing is
    held in memory but one line. ``--version`` answers at once.
    """
    text = _STREAM_TEMPLATE.format(python=STANDIN_PYTHON, total=int(total_bytes),
                                   result_bytes=int(result_bytes), model=model)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path
