"""The pids and memory limits of a session, in cgroups: v2 where delegated, else v1.

Rule (`sandbox.cgroup._limits`): the kernel holds a session to its ``processes`` and
``memory`` limits. Each controller's home is found by `sandbox.cgroup.find_cgroups`:

* **v2** (the runner's own cgroup delegates the controller): the session's own
  v2 cgroup carries the limit (``pids.max``; ``memory.max`` with
  ``memory.swap.max`` 0); the controller is enabled in
  ``headwater-campaign/cgroup.subtree_control`` first;
* **v1** (a legacy hierarchy of that name, as on hosts whose v2 tree has only
  hugetlb): a cgroup of the same name as the session's v2 one under
  ``<mount>/<runner's cgroup>/headwater-campaign/`` (``pids.max``;
  ``memory.limit_in_bytes`` and, with swap accounting,
  ``memory.memsw.limit_in_bytes`` at the same value). The join shell writes
  itself into its ``cgroup.procs`` too (`sandbox.cgroup._cgroup.JOIN_SCRIPT`), so
  everything of the sandbox is in it from its first instruction; nothing
  inside can leave (no ``/sys`` is mounted, and only root may move a process).

What passing a limit leaves: ``pids.events`` counts refused forks (``max``),
``memory.events`` (v2) or ``memory.oom_control`` (v1) counts the processes the
kernel's OOM killer ended (``oom_kill``). A v1 cgroup is removed with the
session's v2 one once that is empty; a killed runner's are removed by the
sweep that ends its v2 ones (their processes are gone with those).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from .._errors import ContainmentUnavailable
from .._owner import TAG, runner_gone

if TYPE_CHECKING:
    from ._hierarchy import CgroupHost, Hierarchy
    from ._limits import Limits

__all__ = ["POLL_S", "REMOVE_TRIES", "ControllerGroup", "enable_delegated", "limit_groups",
           "remove_v1", "sweep_v1"]

Controller = Literal["pids", "memory"]
_LIMIT_FILES: Final = {
    ("pids", 1): ("pids.max",), ("pids", 2): ("pids.max",),
    ("memory", 1): ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
    ("memory", 2): ("memory.max", "memory.swap.max"),
}  # fmt: skip
"""The files a limit is written to, in order (v1 memory: the limit before memsw, which must
not be below it); an optional second file is skipped where the kernel has none."""
_EVENTS: Final = {
    ("pids", 1): ("pids.events", "max"), ("pids", 2): ("pids.events", "max"),
    ("memory", 1): ("memory.oom_control", "oom_kill"), ("memory", 2): ("memory.events", "oom_kill"),
}  # fmt: skip
_PEAKS: Final = {
    ("pids", 1): "pids.peak", ("pids", 2): "pids.peak",
    ("memory", 1): "memory.max_usage_in_bytes", ("memory", 2): "memory.peak",
}  # fmt: skip
REMOVE_TRIES: Final = 100
"""rmdir tries, `POLL_S` apart: a cgroup is EBUSY while a process is still in it."""
POLL_S: Final = 0.01
"""Seconds between two looks at a cgroup that is still emptying."""


@dataclass(frozen=True, slots=True)
class ControllerGroup:
    """One controller's cgroup of one session, where its limit is set.

    Attributes:
        controller: ``pids`` or ``memory``.
        version: 1 (its own directory, joined separately) or 2 (the session's v2 cgroup).
        path: The cgroup's directory.
        limit: The value written (a count, or bytes).
    """

    controller: Controller
    version: Literal[1, 2]
    path: Path
    limit: int

    def events(self) -> int:
        """How often the limit was hit: refused forks (pids), OOM kills (memory); 0 if gone."""
        name, key = _EVENTS[(self.controller, self.version)]
        return _keyed(self.path / name, key)

    def peak(self) -> int | None:
        """The most used at once (tasks, or bytes), where the kernel keeps it; else None."""
        try:
            return int((self.path / _PEAKS[(self.controller, self.version)]).read_text())
        except (OSError, ValueError):
            return None


def _keyed(path: Path, key: str) -> int:
    try:
        text = path.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def enable_delegated(host: CgroupHost, limits: Limits) -> None:
    """Enable, in the sessions' v2 base, each controller whose limit is set and lives in v2.

    Raises:
        ContainmentUnavailable: the kernel refuses (the runner's cgroup does not
            delegate it after all).
    """
    if host.v2 is None:
        return
    for name in _asked(limits):
        home = host.limits.get(name)
        if home is not None and home.version == 2:
            try:
                (host.v2.base / "cgroup.subtree_control").write_text(f"+{name}")
            except OSError as exc:
                raise ContainmentUnavailable(
                    f"cannot enable the {name} controller under {host.v2.base}: {exc}",
                    "delegate pids and memory to the runner's cgroup, or mount their v1 "
                    "hierarchies",
                ) from exc


def _asked(limits: Limits) -> dict[Controller, int]:
    asked: dict[Controller, int] = {}
    if limits.pids is not None:
        asked["pids"] = limits.pids
    if limits.memory_bytes is not None:
        asked["memory"] = limits.memory_bytes
    return asked


def limit_groups(host: CgroupHost, v2_path: Path, limits: Limits) -> list[ControllerGroup]:
    """Make each asked controller's cgroup of one session and write its limit (blocking).

    A v2 home is the session's own v2 cgroup ``v2_path`` (already made, its
    controllers enabled by `enable_delegated`); a v1 home gets a directory of
    the same name under its base. On an error, what this call made is removed.

    Raises:
        ContainmentUnavailable: a limit is asked whose controller has no home on
            this host, or its cgroup cannot be made or written.
    """
    made: list[ControllerGroup] = []
    try:
        for name, value in _asked(limits).items():
            home = host.limits.get(name)
            if home is None:
                raise ContainmentUnavailable(
                    f"a {name} limit is asked but this host has no {name} controller for it",
                    "mount the v1 pids and memory hierarchies, or delegate those controllers "
                    "to the runner's cgroup in v2",
                )
            group = _make(name, home, v2_path, value)
            made.append(group)
            _write_limit(group)
    except BaseException:
        remove_v1(made)
        raise
    return made


def _make(name: Controller, home: Hierarchy, v2_path: Path, value: int) -> ControllerGroup:
    if home.version == 2:
        return ControllerGroup(name, 2, v2_path, value)
    path = home.base / v2_path.name
    try:
        home.base.mkdir(exist_ok=True)
        path.mkdir()
    except OSError as exc:
        raise ContainmentUnavailable(f"cannot create a {name} cgroup under {home.base}: {exc}",
                                     "run the runner as root") from exc  # fmt: skip
    return ControllerGroup(name, 1, path, value)


def _write_limit(group: ControllerGroup) -> None:
    first, *rest = _LIMIT_FILES[(group.controller, group.version)]
    values = [str(group.limit), "0" if group.version == 2 else str(group.limit)]
    try:
        (group.path / first).write_text(values[0])
        for name in rest:
            if (group.path / name).exists():  # swap accounting may be off
                (group.path / name).write_text(values[1])
    except OSError as exc:
        raise ContainmentUnavailable(
            f"cannot set the {group.controller} limit in {group.path}: {exc}",
            "report this host's cgroup layout") from exc  # fmt: skip


def remove_v1(groups: list[ControllerGroup]) -> bool:
    """Remove the v1 cgroups of ``groups`` (their processes must be gone); True if all went."""
    removed = True
    for group in groups:
        if group.version == 1:
            removed = _remove(group.path) and removed
    return removed


def _remove(path: Path) -> bool:
    for _ in range(REMOVE_TRIES):
        try:
            path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:  # EBUSY: a process not yet gone from it
            time.sleep(POLL_S)
            continue
        return True
    return False


def sweep_v1(host: CgroupHost) -> list[Path]:
    """Remove the v1 limit cgroups of runners that no longer run (blocking).

    Their processes are gone already (the v2 sweep killed them, and a process
    cannot be in a session's v1 cgroup without being in its v2 one); one that
    is still busy is left for the next sweep.
    """
    removed: list[Path] = []
    for home in {h for h in host.limits.values() if h is not None and h.version == 1}:
        with contextlib.suppress(OSError):
            for entry in os.scandir(home.base):
                tag = entry.name.split("-", 1)[0]
                if (TAG.fullmatch(tag) and runner_gone(tag, entry=entry.path)
                        and entry.is_dir(follow_symlinks=False)
                        and _remove(Path(entry.path))):  # fmt: skip
                    removed.append(Path(entry.path))
    return removed
