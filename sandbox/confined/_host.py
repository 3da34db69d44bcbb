"""The host's cgroup hierarchies for a sandbox: found once per process, swept once.

Step 1 of `sandbox.confined`: before the lease, so that a leftover the sweep
ends (a killed runner's cgroup) does not hold its user.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ..cgroup import CgroupHost, find_cgroups, sweep_once

if TYPE_CHECKING:
    from ._spec import ConfinedSpec

__all__ = ["swept_cgroups"]


def swept_cgroups(spec: ConfinedSpec) -> CgroupHost:
    """The host's cgroup hierarchies; a first call sweeps a killed runner's cgroups (blocking)."""
    cgroups = spec.cgroups or _host_cgroups()
    sweep_once(cgroups)
    return cgroups


@functools.cache
def _host_cgroups() -> CgroupHost:
    """`find_cgroups`, once per process: a documented cache of what the process reads of itself.

    Process-wide on purpose: ``/proc/self/mountinfo`` and ``/proc/self/cgroup``
    describe this process's mounts and its own cgroup, which no batch or loop of
    it changes (the runner never moves itself), so one answer serves them all.
    Thread-safe: functools.cache is; two threads that miss at once read the same
    files twice and get equal answers.
    """
    return find_cgroups()
