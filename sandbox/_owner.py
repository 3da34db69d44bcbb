"""Which runner made a cgroup or a scratch directory, and whether that runner still lives.

A runner killed with SIGKILL cannot clean up after itself; the next runner
must tell its leftovers from those of a runner still at work. Names carry a
*runner tag*, ``<pid>.<start>``: the runner's pid and its start time (field 22
of ``/proc/<pid>/stat``, clock ticks since boot), so a pid the kernel has
since given to another process does not pass for the runner (proc(5)). A tag
of a pid alone (``<pid>``, as scratch directories were first named) is alive
while that pid is.
"""

from __future__ import annotations

import os
import re
from typing import Final

__all__ = ["TAG", "runner_alive", "runner_tag"]

TAG: Final = re.compile(r"(?P<pid>[0-9]+)(?:\.(?P<start>[0-9]+))?")
"""A runner tag: ``4242.1234567``, or ``4242`` alone."""


def _start_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[19])  # field 22 of the whole line; [0] here is field 3 (state)


def runner_tag(pid: int | None = None) -> str:
    """The tag of runner ``pid`` (None: this process), ``<pid>.<start>``.

    Raises:
        OSError: the process does not exist (its /proc entry cannot be read).
    """
    pid = os.getpid() if pid is None else pid
    start = _start_ticks(pid)
    if start is None:
        raise ProcessLookupError(f"no process {pid}")
    return f"{pid}.{start}"


def runner_alive(tag: str) -> bool:
    """Whether the runner ``tag`` names still runs (same pid, same start time)."""
    found = TAG.fullmatch(tag)
    if found is None:
        return False
    ticks = _start_ticks(int(found.group("pid")))
    start = found.group("start")
    return ticks is not None and (start is None or ticks == int(start))
