"""``doctor``'s ``limits`` check: a session's limits are enforced here, and the runner sees them.

Exercised, not looked up: two probes run in a session's sandbox (`open_confined`,
as the session user) with small limits, and each does what passes one.

1. memory 64 MiB, /tmp 4 MiB, open files 64: the probe prints its
   ``RLIMIT_NOFILE`` and its /tmp's size, then a child allocates 256 MiB. The
   kernel must end the child, and the runner must name ``memory`` and have
   seen the session's /tmp (through bwrap's pid 1) while it ran;
2. processes 16: the probe forks until refused; the runner must name
   ``processes``.

Verified ok only when every one of these holds; broken when one was measured
not to (a limit not set or not enforced, or not seen); could not verify when
a probe did not run to an answer (a timeout, the sandbox does not start), or
without ``/usr/bin/python3``. Only ``doctor`` runs it (about a second); the
checks before every batch already refuse a host without the controllers
(``cgroups``), and a session whose limits cannot be set is refused.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._capture import Run, capture
from .._errors import ConfinementUnavailable, SessionUserUnusable, SpawnFailed
from .._report import Check
from .._sync import run_sync
from ..cgroup import LimitHit, Limits, MiB
from ..confined import open_confined
from ._probes import PROBE_PYTHON, probe_spec

if TYPE_CHECKING:
    from .._layout import HostLayout
    from ..confined import ConfinedSpec
    from ..users import SessionUser

__all__ = ["LIMITS_PROBE_TIMEOUT_S", "check_limits"]

LIMITS_PROBE_TIMEOUT_S: Final = 30.0
"""Each probe ends within a second (the watch reads every 0.2 s); more means it hangs."""
MEMORY_LIMITS: Final = Limits(memory_bytes=64 * MiB, tmp_bytes=4 * MiB, open_files=64)
PIDS_LIMITS: Final = Limits(pids=16)
MEMORY_PROBE: Final = r"""
import os, resource, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
tmp = os.statvfs("/tmp")
print("nofile", soft, hard, "tmp", tmp.f_blocks * tmp.f_frsize, flush=True)
time.sleep(0.5)
if os.fork() == 0:
    held = [bytearray(1024 * 1024) for _ in range(256)]
    os._exit(0)
os.wait()
time.sleep(20)
"""
PIDS_PROBE: Final = r"""
import os, time
for _ in range(64):
    if os.fork() == 0:
        time.sleep(20)
        os._exit(0)
time.sleep(20)
"""


def check_limits(bwrap: str, layout: HostLayout, user: SessionUser | None,
                 timeout_s: float = LIMITS_PROBE_TIMEOUT_S) -> Check:
    """``limits``: exercise a session's limits in its sandbox (module docstring).

    Never raises for a host problem: every failure is one of the three answers.
    """
    if not Path(PROBE_PYTHON).is_file():
        return Check("limits", "unverified", f"no {PROBE_PYTHON} to run the probes with")

    def spec(code: str, limits: Limits) -> ConfinedSpec:
        base = probe_spec(bwrap=bwrap, layout=layout, executable=Path(PROBE_PYTHON),
                          command=[PROBE_PYTHON, "-c", code], user=user)  # fmt: skip
        return dataclasses.replace(base, limits=limits, name="preflight")

    try:
        memory = run_sync(_probe, spec(MEMORY_PROBE, MEMORY_LIMITS), timeout_s)
        pids = run_sync(_probe, spec(PIDS_PROBE, PIDS_LIMITS), timeout_s)
    except SessionUserUnusable as exc:
        return Check("limits", "unverified", f"not run: {exc} (see the session-user check)")
    except ConfinementUnavailable as exc:  # the host cannot set them: measured
        return Check("limits", "broken", f"a sandbox with limits cannot be made: {exc.detail}",
                     exc.fix)  # fmt: skip
    return _verdict(memory, pids)


async def _probe(spec: ConfinedSpec, timeout_s: float) -> tuple[Run, LimitHit | None, bool]:
    """The probe's output, the limit the runner named, and whether it saw the /tmp."""
    try:
        async with open_confined(spec) as sandbox:
            run = await capture(sandbox.child, timeout_s=timeout_s)
    except SpawnFailed as exc:
        return Run(None, "", str(exc)), None, False
    seen_tmp = sandbox.watch is not None and "tmp_bytes" in sandbox.watch.peaks
    return run, sandbox.limit_hit, seen_tmp


def _verdict(memory: tuple[Run, LimitHit | None, bool],
             pids: tuple[Run, LimitHit | None, bool]) -> Check:
    (run, hit, seen_tmp), (pids_run, pids_hit, _) = memory, pids
    for probe in (run, pids_run):
        if probe.timed_out or probe.returncode is None:
            return Check("limits", "unverified", "a limits probe gave no answer: "
                         f"{probe.stderr.strip()[-300:] or 'timed out'}")  # fmt: skip
    words = run.stdout.split()
    problems = []
    if words[:5] != ["nofile", "64", "64", "tmp", str(4 * MiB)]:
        problems.append(f"open files or /tmp not as set (nofile 64, /tmp 4 MiB): "
                        f"{run.stdout.strip()[:200] or run.stderr.strip()[-200:]}")
    if hit is None or hit.limit != "memory":
        problems.append(f"a child allocating 256 MiB under a 64 MiB limit was not named as "
                        f"passing memory (named: {hit})")
    if not seen_tmp:
        problems.append("the runner could not see the session's /tmp (/proc/<pid>/root/tmp)")
    if pids_hit is None or pids_hit.limit != "processes":
        problems.append(f"64 forks under a limit of 16 were not named as passing processes "
                        f"(named: {pids_hit})")
    if problems:
        return Check("limits", "broken", "; ".join(problems),
                     "the pids and memory controllers must take limits (see the cgroups "
                     "check), bwrap must take --size (0.8.0 does), and the runner must "
                     "read /proc/<pid>/root of the sandbox")  # fmt: skip
    return Check("limits", "ok", "in a session's sandbox: open files held at 64 (hard), /tmp "
                 "at its 4 MiB, a child over 64 MiB of memory ended by the kernel and named, "
                 "a fork past 16 processes refused and named; the session's /tmp seen by the "
                 "runner")  # fmt: skip
