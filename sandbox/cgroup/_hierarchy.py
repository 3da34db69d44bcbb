"""Where this host's cgroup hierarchies are, and the runner's place in each: facts, no verdict.

`find_cgroups` reads ``/proc/self/mountinfo`` and ``/proc/self/cgroup`` and says
where the v2 hierarchy is mounted (membership and ``cgroup.kill``,
`sandbox.cgroup._cgroup`) and, per limit controller, which hierarchy holds its
limit: v2 when the runner's own cgroup delegates the controller, else the v1
hierarchy of that name (`sandbox.cgroup._cgroup_limits`). It creates nothing.
Both the session's cgroup and its limit cgroups are made from these facts, so
they live here, below both: neither imports the other for them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from .._hostfs import PROC

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["BASE_NAME", "LIMIT_CONTROLLERS", "CgroupHost", "Hierarchy", "find_cgroups"]

BASE_NAME: Final = "headwater-campaign"
"""The directory, under the runner's own cgroup, that holds the sessions' cgroups."""
LIMIT_CONTROLLERS: Final = ("pids", "memory")
"""The controllers per-session limits need."""


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """One mounted cgroup hierarchy and the runner's place in it.

    Attributes:
        version: 2 for the unified hierarchy, 1 for a legacy controller's.
        mount: Where it is mounted.
        own: The runner's cgroup in it, as /proc/self/cgroup says (``/`` or deeper).
    """

    version: Literal[1, 2]
    mount: Path
    own: str

    @property
    def base(self) -> Path:
        """``<mount>/<own>/headwater-campaign``: the parent of the sessions' cgroups."""
        return self.mount / self.own.lstrip("/") / BASE_NAME


@dataclass(frozen=True, slots=True)
class CgroupHost:
    """What this host offers sessions (`find_cgroups`); facts, no verdict.

    Attributes:
        v2: The unified hierarchy, for membership and ``cgroup.kill``; None if absent.
        limits: Per `LIMIT_CONTROLLERS` name, the hierarchy where its limit goes
            (v2 when the runner's cgroup delegates it, else the v1 one), or None.
    """

    v2: Hierarchy | None
    limits: Mapping[str, Hierarchy | None] = field(default_factory=dict)


def find_cgroups(proc: Path = PROC) -> CgroupHost:
    """Read ``proc``/self/mountinfo and ``proc``/self/cgroup: where the hierarchies are.

    Reads only; creates nothing (`open_session_cgroup` does, and says when it cannot).
    """
    mounts: dict[str, Path] = {}  # "2", or a v1 controller's name -> mount point
    with contextlib.suppress(OSError):
        for line in (proc / "self" / "mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, *rest = right.split()
            point = Path(left.split()[4].replace("\\040", " "))
            if fstype == "cgroup2":
                mounts.setdefault("2", point)
            elif fstype == "cgroup" and rest:
                for option in rest[-1].split(","):
                    mounts.setdefault(option, point)
    own: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in (proc / "self" / "cgroup").read_text().splitlines():
            number, controllers, path = line.split(":", 2)
            for name in (controllers.split(",") if number != "0" else ["2"]):
                own[name] = path
    v2 = Hierarchy(2, mounts["2"], own.get("2", "/")) if "2" in mounts else None
    limits: dict[str, Hierarchy | None] = {}
    for name in LIMIT_CONTROLLERS:
        if v2 is not None and name in _delegated(v2):
            limits[name] = v2
        elif name in mounts and name in own:
            limits[name] = Hierarchy(1, mounts[name], own[name])
        else:
            limits[name] = None
    return CgroupHost(v2=v2, limits=limits)


def _delegated(v2: Hierarchy) -> set[str]:
    """Controllers the runner's own v2 cgroup enables for its children."""
    try:
        return set((v2.mount / v2.own.lstrip("/") / "cgroup.subtree_control").read_text().split())
    except OSError:
        return set()
