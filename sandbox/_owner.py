"""Which runner made a cgroup or a scratch directory, and whether that runner still lives.

A runner killed with SIGKILL cannot clean up after itself; the next runner
must tell its leftovers from those of a runner still at work. Names carry a
*runner tag*, ``<pid>.<start>``: the runner's pid and its start time (field 22
of ``/proc/<pid>/stat``, clock ticks since boot), so a pid the kernel has
since given to another process does not pass for the runner (proc(5)). A tag
of a pid alone (``<pid>``, as scratch directories were first named) is alive
while that pid is.

A pid means something only in its pid namespace: two runners in different
pid namespaces (two containers) that share the same roots (``/var/tmp``, the
cgroup hierarchy) each see the other's pid as absent, or as another process.
So the tag carries the runner's pid namespace too, ``<pid>.<start>.<ns>``
(``ns``: the inode of ``/proc/self/ns/pid``, namespaces(7)), and a runner
judges another dead only when it can tell (`runner_gone`): the tag names its
own pid namespace and no process of that pid and start time runs. An entry of
another namespace is left, and logged. A tag without a namespace (an older
runner's, ``<pid>.<start>`` or ``<pid>``) is taken as of this namespace, as
before. Rule: docs/confinement.md "Process containment" (the sweep of killed
runners) and docs/storage.md (the store sweep).
"""

from __future__ import annotations

import logging
import os
import re
from typing import Final, Literal, TypeAlias

__all__ = ["TAG", "RunnerState", "pid_namespace", "runner_alive", "runner_gone", "runner_state",
           "runner_tag"]

TAG: Final = re.compile(r"(?P<pid>[0-9]+)(?:\.(?P<start>[0-9]+)(?:\.(?P<ns>[0-9]+))?)?")
"""A runner tag: ``4242.1234567.4026531836``, or, from older runners, ``4242.1234567`` or
``4242`` alone."""
RunnerState: TypeAlias = Literal["running", "gone", "elsewhere"]
"""What a tag's runner is to this runner: ``running``; ``gone`` (this pid namespace, no
such process); ``elsewhere`` (another pid namespace: its processes cannot be seen here)."""
logger = logging.getLogger(__name__)
_OWN_NAMESPACE: list[int | None] = []


def _start_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[19])  # field 22 of the whole line; [0] here is field 3 (state)


def pid_namespace(pid: int | None = None) -> int | None:
    """The inode of ``/proc/<pid>/ns/pid`` (None: this process's, read once), or None when it
    cannot be read (no such process, or a /proc without namespaces)."""
    if pid is None and _OWN_NAMESPACE:
        return _OWN_NAMESPACE[0]
    try:
        inode: int | None = os.stat(f"/proc/{'self' if pid is None else pid}/ns/pid").st_ino
    except OSError:
        inode = None
    if pid is None:
        _OWN_NAMESPACE.append(inode)
    return inode


def runner_tag(pid: int | None = None) -> str:
    """The tag of runner ``pid`` (None: this process), ``<pid>.<start>.<ns>``
    (``<pid>.<start>`` where its pid namespace cannot be read).

    Raises:
        OSError: the process does not exist (its /proc entry cannot be read).
    """
    namespace = pid_namespace(pid)
    pid = os.getpid() if pid is None else pid
    start = _start_ticks(pid)
    if start is None:
        raise ProcessLookupError(f"no process {pid}")
    return f"{pid}.{start}" if namespace is None else f"{pid}.{start}.{namespace}"


def runner_state(tag: str) -> RunnerState | None:
    """What the runner ``tag`` names is to this runner (`RunnerState`); None: not a tag.

    ``elsewhere`` when the tag names a pid namespace other than this runner's
    (or names one and this runner's cannot be read); a tag without one is of
    this namespace. Otherwise ``running`` while its pid runs with its start
    time (any start time for a tag of a pid alone), else ``gone``.
    """
    found = TAG.fullmatch(tag)
    if found is None:
        return None
    namespace = found.group("ns")
    if namespace is not None and int(namespace) != pid_namespace():
        return "elsewhere"
    ticks = _start_ticks(int(found.group("pid")))
    start = found.group("start")
    return "running" if ticks is not None and (start is None or ticks == int(start)) else "gone"


def runner_gone(tag: str, *, entry: str | None = None) -> bool:
    """Whether this runner can tell that the runner ``tag`` names is dead (`runner_state`
    ``gone``): the only case in which a sweep may remove what it left.

    ``entry``: what the caller would sweep, for the log line that says an entry of a
    runner in another pid namespace is left.
    """
    state = runner_state(tag)
    if state == "elsewhere" and entry is not None:
        logger.info("left %s: its runner (%s) is in another pid namespace, whose processes "
                    "this runner cannot see", entry, tag)  # fmt: skip
    return state == "gone"


def runner_alive(tag: str) -> bool:
    """Whether the runner ``tag`` names may still run: running, or of another pid namespace
    (not known dead); False for a runner known gone and for a name that is not a tag."""
    return runner_state(tag) in ("running", "elsewhere")
