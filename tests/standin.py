"""Stand-in harnesses for tests: one self-contained file, data embedded (DESIGN.md RC-02).

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
