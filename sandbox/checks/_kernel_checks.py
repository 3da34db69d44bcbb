"""Preflight checks of what the kernel must give every sandbox: a cgroup, the seccomp filter,
the Landlock domain.

Each answers ``ok``, ``broken`` or ``unverified`` (`sandbox.checks._host_checks.Check`),
and each exercises the mechanism rather than looking for it: ``cgroups``
puts a process in a sandbox's cgroup and ends it with ``cgroup.kill``;
``seccomp`` runs a probe in a session's sandbox that tries ptrace and
process_vm_readv, which the kernel's own rules allow it, and must be refused;
``landlock`` runs one that opens bwrap's pid 1's memory and signals it, which
the same uid may do, and must be refused.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio

from .._errors import ContainmentUnavailable, SessionUserUnusable
from .._landlock import PYTHON as LANDLOCK_PYTHON
from .._landlock import REFER_ABI, SCOPE_ABI, host_abi
from .._process import open_child
from .._report import Check
from .._seccomp import session_filter
from .._sync import run_sync
from ..cgroup import CgroupHost, Hierarchy, SessionCgroup, find_cgroups, open_session_cgroup
from ._probes import PROBE_PYTHON, Run, probe_spec, run_confined

if TYPE_CHECKING:
    from .._layout import HostLayout
    from ..users import SessionUser

__all__ = ["LANDLOCK_PROBE", "SECCOMP_PROBE", "check_cgroups", "check_landlock", "check_seccomp"]

SLEEP_CANDIDATES: Final = ("/usr/bin/sleep", "/bin/sleep")
SECCOMP_PROBE: Final = r"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def answer(result):
    return "ok" if result != -1 else "errno=%d" % ctypes.get_errno()


child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
seize = answer(libc.ptrace(0x4206, child, None, None))
buf = ctypes.create_string_buffer(16)
iov = Iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
read = answer(libc.process_vm_readv(os.getpid(), ctypes.byref(iov), 1, ctypes.byref(iov), 1, 0))
os.kill(child, 9)
print("ptrace", seize, "process_vm_readv", read)
"""
"""``PTRACE_SEIZE`` of its own child and ``process_vm_readv`` of itself: both allowed by the
kernel's ptrace rules (Yama or not), so only the filter can refuse them."""


def check_cgroups(host: CgroupHost | None = None, *, timeout_s: float) -> Check:
    """``cgroups``: each sandbox in a cgroup of its own, ended by ``cgroup.kill``; limits' homes.

    Verified by doing it: a ``sleep`` joins a new session cgroup, ``cgroup.kill``
    ends it, the cgroup empties and is removed. Broken when there is no v2
    hierarchy, no ``cgroup.kill``, no right to make the cgroup, or no
    hierarchy for a limit's controller (neither delegated in v2 nor a v1 one).
    """
    host = host or find_cgroups()
    try:
        cgroup = open_session_cgroup(host, "preflight")
    except ContainmentUnavailable as exc:
        return Check("cgroups", "broken", exc.detail, exc.fix)
    sleep = next((path for path in SLEEP_CANDIDATES if os.path.exists(path)), None)
    if sleep is None:
        run_sync(cgroup.end)
        return Check("cgroups", "unverified", f"no `sleep` to exercise it: none of "
                     f"{SLEEP_CANDIDATES}")  # fmt: skip
    ended = run_sync(_exercise, cgroup, sleep, timeout_s)
    assert host.v2 is not None  # open_session_cgroup refuses a host without one
    where = {name: _where(home) for name, home in host.limits.items()}
    limits = ", ".join(f"{name} {place}" for name, place in where.items())
    if ended is not True:
        return Check("cgroups", "broken" if ended is False else "unverified",
                     f"a process in a session cgroup under {host.v2.base} was not ended by "
                     f"cgroup.kill within {timeout_s} s", "report this kernel")  # fmt: skip
    missing = [name for name, home in host.limits.items() if home is None]
    detail = (f"v2 at {host.v2.mount}: each sandbox in its own cgroup under {host.v2.base}, "
              f"ended with cgroup.kill and waited for until empty (exercised); limits: {limits}")
    if missing:
        return Check("cgroups", "broken", detail + f"; no hierarchy for {', '.join(missing)}: "
                     "per-session limits could not be set",
                     "mount the v1 pids and memory hierarchies, or delegate those controllers "
                     "to the runner's cgroup in v2")  # fmt: skip
    return Check("cgroups", "ok", detail)


def _where(home: Hierarchy | None) -> str:
    if home is None:
        return "none"
    return f"via v{home.version} {home.mount}{'' if home.own == '/' else home.own}"


async def _exercise(cgroup: SessionCgroup, sleep: str, timeout_s: float) -> bool | None:
    """True: the joined sleep was in the cgroup and cgroup.kill ended it; False: it was not
    ended; None: it never showed up in the cgroup (could not tell)."""
    try:
        async with open_child([*cgroup.join_argv(), sleep, "60"], grace_s=0.0) as child:
            with anyio.move_on_after(timeout_s):
                while not cgroup.populated():  # noqa: ASYNC110 (a kernfs file: polled)
                    await anyio.sleep(0.01)
            if not cgroup.populated():
                return None
            emptied = await cgroup.end(bound_s=timeout_s)
            await child.reap(0.0)
            return emptied and child.returncode == -9
    finally:
        await cgroup.end(bound_s=timeout_s)


def check_seccomp(
    executable: str, layout: HostLayout, user: SessionUser | None, timeout_s: float
) -> Check:
    """``seccomp``: inside a session's sandbox, ptrace and process_vm_readv are refused (EPERM)."""
    try:
        session_filter()
    except ContainmentUnavailable as exc:
        return Check("seccomp", "broken", exc.detail, exc.fix)
    if not Path(PROBE_PYTHON).is_file():
        return Check("seccomp", "unverified", f"no {PROBE_PYTHON} to run the probe with; the "
                     "filter is passed to every sandbox (--seccomp)")  # fmt: skip
    answer = _four_word_probe("seccomp", PROBE_PYTHON, SECCOMP_PROBE, executable, layout, user,
                              timeout_s)  # fmt: skip
    if isinstance(answer, Check):
        return answer
    run, words = answer
    refused = f"errno={errno.EPERM}"
    if words[1] == refused and words[3] == refused:
        return Check("seccomp", "ok", "inside a session's sandbox ptrace and process_vm_readv "
                     "are refused (EPERM); /proc/<pid>/mem, which no filter of system calls "
                     "sees, is the landlock check's")  # fmt: skip
    if "ok" in (words[1], words[3]):
        return Check("seccomp", "broken", f"inside the sandbox: {run.stdout.strip()}: the "
                     "seccomp filter was not applied",
                     "bubblewrap must support --seccomp FD (0.8.0 does)")  # fmt: skip
    return Check("seccomp", "unverified", f"inside the sandbox: {run.stdout.strip()}")


LANDLOCK_PROBE: Final = r"""
import errno, os
def answer(call):
    try:
        call()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
print("mem", answer(lambda: os.close(os.open("/proc/1/mem", os.O_RDONLY))),
      "kill", answer(lambda: os.kill(1, 0)))
"""
"""Opens bwrap's pid 1's ``/proc/1/mem`` and sends it signal 0: both allowed by the kernel's
own rules to a process of the same uid (pid 1 is dumpable), so only the domain can refuse."""


def check_landlock(
    executable: str | None, layout: HostLayout | None, user: SessionUser | None,
    timeout_s: float,
) -> Check:
    """``landlock``: inside a session's sandbox, pid 1's memory (and, ABI 6+, its signals) refused.

    Broken when the kernel has no Landlock (every sandbox would end with
    `sandbox._landlock.LANDLOCK_FAILED_STATUS`), when the interpreter that
    makes the domain is missing, or when the probe opens pid 1's memory (the
    domain was not made). Unverified when the probe gives no answer, or
    cannot run (``executable`` or ``layout`` None: the sandbox does not start).
    """
    abi = host_abi()
    if abi is None:
        return Check("landlock", "broken", "the kernel has no Landlock: a session could write "
                     "bwrap's pid 1's memory through /proc/1/mem",
                     "run Linux 5.19+ with Landlock in its lsm= boot list (e.g. "
                     "lsm=landlock,lockdown,yama,apparmor,bpf); ABI 6 (Linux 6.12+) also "
                     "scopes signals")  # fmt: skip
    if abi < REFER_ABI:
        return Check("landlock", "broken", f"Landlock ABI {abi} cannot allow a rename into "
                     "another directory: every such rename of a session would fail (EXDEV)",
                     f"run Linux 5.19+ (Landlock ABI {REFER_ABI})")  # fmt: skip
    if not Path(LANDLOCK_PYTHON).is_file():
        return Check("landlock", "broken", f"no {LANDLOCK_PYTHON}: every session's harness is "
                     "started in its Landlock domain by it", "install python3 (Debian: "
                     "apt-get install python3)")  # fmt: skip
    if executable is None or layout is None:
        return Check("landlock", "unverified", f"Landlock ABI {abi}; not run: the sandbox does "
                     "not start")  # fmt: skip
    answer = _four_word_probe("landlock", LANDLOCK_PYTHON, LANDLOCK_PROBE, executable, layout,
                              user, timeout_s)  # fmt: skip
    if isinstance(answer, Check):
        return answer
    run, words = answer
    mem, kill = words[1], words[3]
    if mem == "ok":
        return Check("landlock", "broken", f"inside the sandbox: {run.stdout.strip()}: bwrap's "
                     "pid 1's memory is open to the session (no Landlock domain)",
                     "report this: every sandbox's harness is started in a domain")  # fmt: skip
    if mem not in ("EACCES", "EPERM"):
        return Check("landlock", "unverified", f"inside the sandbox: {run.stdout.strip()}")
    scoped = abi >= SCOPE_ABI
    if scoped and kill != "EPERM":
        return Check("landlock", "broken", f"inside the sandbox: {run.stdout.strip()}: Landlock "
                     f"ABI {abi} should refuse the signal", "report this kernel")  # fmt: skip
    detail = (f"Landlock ABI {abi}: inside a session's sandbox bwrap's pid 1's memory is "
              f"refused ({mem})")
    if scoped:
        return Check("landlock", "ok", detail + ", and so are its signals (EPERM); abstract unix "
                     "sockets made outside the session are scoped too (not probed)")  # fmt: skip
    return Check("landlock", "ok", detail + f"; before ABI {SCOPE_ABI} the session can still "
                 "signal its lifeline watcher (the cgroup kill still ends it)")  # fmt: skip


def _four_word_probe(
    name: str, python: str, code: str, executable: str, layout: HostLayout,
    user: SessionUser | None, timeout_s: float,
) -> tuple[Run, list[str]] | Check:
    """Run ``python -c code`` in a session's sandbox: its run and the four words it printed,
    or the ``unverified`` check ``name`` when it could not run or gave no such answer."""
    spec = probe_spec(bwrap=executable, layout=layout, executable=Path(python),
                      command=[python, "-c", code], user=user)  # fmt: skip
    try:
        run = run_confined(spec, timeout_s=timeout_s)
    except (SessionUserUnusable, ContainmentUnavailable) as exc:
        return Check(name, "unverified", f"not run: {exc}")
    words = run.stdout.split()
    if run.timed_out or run.returncode != 0 or len(words) != 4:
        return Check(name, "unverified", f"the probe gave no answer (status {run.returncode}): "
                     f"{run.stderr.strip()[-300:] or run.stdout[:200]}")  # fmt: skip
    return run, words
