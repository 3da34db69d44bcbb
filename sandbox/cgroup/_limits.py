"""Per-session resource limits: what one sandbox may use, and how passing one is named.

Rule (docs/batch.md "Session states", ``limit-exceeded``): a session may not take
the host or the runner down with it. Each limit has a home where the kernel
or the runner enforces it, and passing one ends that session (never the
batch) with the limit named:

============  ==============================================  ==========================
limit         enforced by                                     seen passed when
============  ==============================================  ==========================
processes     the ``pids`` controller (``pids.max``)          a fork was refused
memory        the ``memory`` controller (limit, no swap)      the kernel's OOM killer ran
tmp           bwrap ``--size`` of the private ``/tmp``        it is full
writes        the runner, measuring what it may write         over the limit
open files    ``RLIMIT_NOFILE`` of every process in it        (the call fails: EMFILE)
connections   the egress proxy, connections open at once      one more was refused
stdout        the runner's reader of its stdout pipe          one read passed it
============  ==============================================  ==========================

The cgroup limits are set in the session's own cgroups (`sandbox.cgroup._cgroup_limits`:
v2 where the runner's cgroup delegates the controller, else the v1 hierarchy);
``open files`` is set by the join shell as root before the privilege drop (a
hard limit, so nothing inside can raise it); the rest are watched while the
session runs and once after it (`sandbox.cgroup._watch`); ``stdout`` is counted by the
recorder's reader as it reads the pipe (`recorder._lines`). The defaults
(`DEFAULT_LIMITS`) are measured: each is at least four times what the pinned
CLI used in ``make demo`` and the real-CLI tests (docs/host.md, "Limits").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

__all__ = [
    "DEFAULT_CONNECTIONS",
    "DEFAULT_LIMITS",
    "DEFAULT_MEMORY_BYTES",
    "DEFAULT_OPEN_FILES",
    "DEFAULT_PIDS",
    "DEFAULT_STDOUT_BYTES",
    "DEFAULT_TMP_BYTES",
    "DEFAULT_WRITE_BYTES",
    "MIN_STDOUT_BYTES",
    "LimitHit",
    "LimitName",
    "Limits",
    "format_bytes",
]

MiB: Final = 1024 * 1024
GiB: Final = 1024 * MiB

LimitName: TypeAlias = Literal["processes", "memory", "tmp", "writes", "connections", "stdout",
                              "stderr", "lines"]
"""The limits whose passing ends a session (``open files`` only refuses the call)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-sandbox resource limits; None is no limit (a preflight probe's).

    Attributes:
        pids: Most processes and threads alive at once in the sandbox (``pids.max``).
        memory_bytes: Most memory, in bytes, its processes may use together
            (page cache and the private /tmp's pages included; no swap).
        tmp_bytes: Size, in bytes, of the private ``/tmp`` (a tmpfs).
        write_bytes: Most bytes the session may add to the directories it may
            write (its workspace, log and config directories), counted as
            allocated blocks over what they held when it started.
        open_files: ``RLIMIT_NOFILE`` (soft and hard) of every process in it.
        connections: Most connections open at once through its egress proxy
            (each costs the runner two descriptors); `sandbox.network._egress`.
        stdout_bytes: Most bytes the session may print on stdout, counted as the
            runner reads them from the pipe (`recorder._lines`), before any line
            handling; at least `MIN_STDOUT_BYTES` when set.
    """

    pids: int | None = None
    memory_bytes: int | None = None
    tmp_bytes: int | None = None
    write_bytes: int | None = None
    open_files: int | None = None
    connections: int | None = None
    stdout_bytes: int | None = None

    def __post_init__(self) -> None:
        """Raises ValueError: a limit below 1, or ``stdout_bytes`` below `MIN_STDOUT_BYTES`."""
        for name in ("pids", "memory_bytes", "tmp_bytes", "write_bytes", "open_files",
                     "connections", "stdout_bytes"):  # fmt: skip
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"limit {name} must be at least 1 or None, got {value}")
        if self.stdout_bytes is not None and self.stdout_bytes < MIN_STDOUT_BYTES:
            raise ValueError(f"limit stdout_bytes must be at least {MIN_STDOUT_BYTES}, got "
                             f"{self.stdout_bytes}")


DEFAULT_PIDS: Final = 512
"""Processes and threads at once: the CLI peaked at 20; a fork bomb stops at 512."""
DEFAULT_MEMORY_BYTES: Final = 2 * GiB
"""Memory, page cache and /tmp's pages included: the CLI's cgroup peaked under 1 GiB."""
DEFAULT_TMP_BYTES: Final = 512 * MiB
"""The private /tmp: the CLI wrote nothing there (its pages count as memory too)."""
DEFAULT_WRITE_BYTES: Final = 512 * MiB
"""Bytes added to the workspace, log and config directories: the CLI added under 1 MiB."""
DEFAULT_OPEN_FILES: Final = 1024
"""Open files per process: the CLI held at most 30."""
DEFAULT_CONNECTIONS: Final = 64
"""Connections open at once through the egress proxy: the CLI held at most 1 (parallel
subagents add a few)."""
DEFAULT_STDOUT_BYTES: Final = 256 * MiB
"""Bytes printed on stdout: the largest capture of the pinned CLI is 214 KB and the largest
line seen 1.4 MB (a tool result holding an image, printed twice), so a real session prints a
few MB; 256 MiB is a hundred times that and four times the line cap
(`recorder._lines.MAX_LINE_BYTES`), and costs the runner about a second of reading."""
MIN_STDOUT_BYTES: Final = 4 * MiB
"""The least ``--max-stdout``: below it one ordinary large line (1.4 MB) and a few reads of
the 1 MiB pipe would end a real session."""
DEFAULT_LIMITS: Final = Limits(
    pids=DEFAULT_PIDS, memory_bytes=DEFAULT_MEMORY_BYTES, tmp_bytes=DEFAULT_TMP_BYTES,
    write_bytes=DEFAULT_WRITE_BYTES, open_files=DEFAULT_OPEN_FILES,
    connections=DEFAULT_CONNECTIONS, stdout_bytes=DEFAULT_STDOUT_BYTES,
)
"""What a session gets unless the batch says otherwise (``--max-processes`` and friends;
measured: docs/host.md, "Limits")."""


@dataclass(frozen=True, slots=True)
class LimitHit:
    """A limit a session passed, as the runner saw it.

    Attributes:
        limit: Which (`LimitName`).
        detail: What was seen, in words, with the limit's value (``"... more than
            512 processes and threads at once"``); no value of the session's.
    """

    limit: LimitName
    detail: str


def format_bytes(count: int) -> str:
    """``count`` bytes in the largest binary unit that divides it, else in MiB to one place."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    if count >= MiB:
        return f"{count / MiB:.1f} MiB"
    return "1 byte" if count == 1 else f"{count} bytes"
