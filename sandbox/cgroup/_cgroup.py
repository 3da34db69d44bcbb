"""Each sandbox in a cgroup of its own, so that the end of a session is the kernel's business.

Rule: however a session ends (its harness exits, the driver stops it, the
runner is cancelled), every process of it is gone before the runner goes on,
and a runner that was killed has its sessions ended at the next start. The
lifeline and ``--die-with-parent`` are ties a session can cut (it can kill its
watcher, and with ptrace it could clear bwrap's pid 1's parent-death signal);
a cgroup it cannot leave is not:

* **membership**: the sandbox is spawned through a tiny shell that writes
  itself into the session's cgroup, then ``exec``s the privilege drop and
  bwrap in place (`JOIN_SCRIPT`), so bwrap and everything it starts are in
  it from their first instruction. Only root (the runner) may move a process
  between these cgroups, and bwrap's ``--unshare-cgroup-try`` shows the
  session its own cgroup as the root;
* **the end**: ``cgroup.kill`` (Linux 5.14, cgroup v2) SIGKILLs every process
  in the cgroup, new forks included, and the runner waits until
  ``cgroup.events`` says ``populated 0``, then removes the cgroup.

Where: the cgroup v2 hierarchy (``/sys/fs/cgroup/unified`` on hosts that
still mount v1 controllers, ``/sys/fs/cgroup`` on v2-only hosts), under the
runner's own cgroup, in ``headwater-campaign/<runner tag>-<label>-<random>``
(`sandbox._owner`: a killed runner's cgroups are found by their tag). Limits
(`sandbox.cgroup._limits.Limits`) belong to the ``pids`` and ``memory``
controllers: v2's when the runner's cgroup delegates them, else the v1
hierarchies of that name; `find_cgroups` says which this host has, and
`sandbox.cgroup._cgroup_limits` makes and removes a session's limit cgroups with its
v2 one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import anyio

from .._errors import ContainmentUnavailable
from .._owner import TAG, runner_gone, runner_tag
from .._process import REAP_TIMEOUT_S
from ._cgroup_limits import (
    POLL_S,
    REMOVE_TRIES,
    ControllerGroup,
    enable_delegated,
    limit_groups,
    remove_v1,
    sweep_v1,
)
from ._hierarchy import CgroupHost, find_cgroups

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._limits import Limits

__all__ = [
    "JOIN_FAILED_STATUS",
    "SessionCgroup",
    "open_session_cgroup",
    "sweep_cgroups",
    "sweep_once",
]

JOIN_FAILED_STATUS: Final = 123
"""Exit status of a sandbox whose join shell could not enter its cgroup (nothing ran);
distinct from the init shell's 124 and 125 and from exec's 126 and 127."""
JOIN_SCRIPT: Final = (
    "unset PWD\n"
    'if [ "$1" != - ]; then ulimit -n "$1" || exit ' + str(JOIN_FAILED_STATUS) + "; fi; shift\n"
    'if [ "$1" != - ]; then ulimit -f "$1" || exit ' + str(JOIN_FAILED_STATUS) + "; fi; shift\n"
    'while [ "$1" != -- ]; do echo 0 > "$1" || exit ' + str(JOIN_FAILED_STATUS) + "; shift; done\n"
    'shift\nexec "$@"\n'
)
"""``sh -c JOIN_SCRIPT headwater-join NOFILE FSIZE PROCS... -- COMMAND...``: ``ulimit -n``
sets the soft and the hard ``RLIMIT_NOFILE`` (dash), as root and before the privilege drop, so
nothing inside can raise it (``-``: left as the runner's); ``ulimit -f`` the soft and hard
``RLIMIT_FSIZE``, in dash's 512-byte blocks (``-``: left); writing 0 to a ``cgroup.procs``
moves the writer itself (cgroups(7), v1 and v2); ``exec`` keeps the pid. The shell exports
the ``PWD`` it sets at start-up (dash): unset, so bwrap still starts with an empty
environment (RC-03: the session reads it in /proc/1/environ)."""
EMPTY_TIMEOUT_S: Final = REAP_TIMEOUT_S
"""Bound, in seconds, on waiting for ``populated 0`` after ``cgroup.kill``."""


@final
class SessionCgroup:
    """The cgroup of one sandbox (v2), made by `open_session_cgroup`, and its limit cgroups.

    Attributes:
        path: Its directory.
        groups: Where its ``pids`` and ``memory`` limits are (`sandbox.cgroup._cgroup_limits`):
            this cgroup for a v2 home, a v1 cgroup of the same name otherwise.
        final_events: After `end`: per limited controller, how often its limit was
            hit (refused forks, OOM kills), read once no process was left.
    """

    def __init__(self, path: Path, groups: Sequence[ControllerGroup] = ()) -> None:
        self.path = path
        self.groups = tuple(groups)
        self.final_events: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"<SessionCgroup {self.path}>"

    def join_argv(self, *, open_files: int | None = None,
                  file_bytes: int | None = None) -> list[str]:
        """The argv prefix that enters this cgroup and its v1 limit cgroups, then ``exec``s
        what follows (`JOIN_SCRIPT`), with ``RLIMIT_NOFILE`` at ``open_files`` and
        ``RLIMIT_FSIZE`` at ``file_bytes`` (rounded up to 512 bytes) when given.

        Raises:
            ValueError: ``file_bytes`` is less than 1.
        """
        if file_bytes is not None and file_bytes < 1:
            raise ValueError(f"file_bytes must be at least 1, got {file_bytes}")
        procs = [self.path / "cgroup.procs",
                 *(g.path / "cgroup.procs" for g in self.groups if g.version == 1)]  # fmt: skip
        blocks = "-" if file_bytes is None else str(-(-file_bytes // 512))
        return ["/bin/sh", "-c", JOIN_SCRIPT, "headwater-join",
                "-" if open_files is None else str(open_files), blocks,
                *map(str, procs), "--"]  # fmt: skip

    def populated(self) -> bool:
        """Whether a live process is still in it (``cgroup.events``); False once it is gone."""
        return _populated(self.path)

    def procs(self) -> list[int]:
        """The pids in it now (``cgroup.procs``); [] once it is gone."""
        try:
            return [int(word) for word in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL everything in it now (``cgroup.kill``); `end` still waits and removes it."""
        _kill(self.path)

    async def end(self, *, bound_s: float = EMPTY_TIMEOUT_S) -> bool:
        """Kill everything in it, wait (at most ``bound_s``) until it is empty, remove it.

        Its limit cgroups' counters are read into `final_events` once it is
        empty, then its v1 limit cgroups are removed with it.

        **Cancellation:** shielded; returns only when done or the bound passed.

        Returns:
            True when the cgroup is gone; False (logged by the caller) when a
            process outlived the bound or a directory could not be removed.
        """
        with anyio.CancelScope(shield=True):
            _kill(self.path)
            with anyio.move_on_after(bound_s):
                # cgroup.events signals a change only as POLLPRI, which an event loop's
                # readiness wait does not see (a kernfs file is always readable): poll it.
                while _populated(self.path):  # noqa: ASYNC110
                    await anyio.sleep(POLL_S)
            self.final_events = {g.controller: g.events() for g in self.groups}
            for _ in range(REMOVE_TRIES):
                if _remove_once(self.path):
                    return await anyio.to_thread.run_sync(remove_v1, list(self.groups))
                await anyio.sleep(POLL_S)
        return False


def open_session_cgroup(host: CgroupHost, label: str,
                        limits: Limits | None = None) -> SessionCgroup:
    """Make the cgroup of one sandbox: ``<base>/<runner tag>-<label>-<random>`` (blocking).

    With ``limits``, its ``pids`` and ``memory`` limits are set too, each where
    the host has the controller (`sandbox.cgroup._cgroup_limits.limit_groups`).

    Raises:
        ContainmentUnavailable: no cgroup v2 hierarchy, no ``cgroup.kill`` (Linux
            older than 5.14), the runner may not create the cgroup (not root,
            no delegated subtree), or a limit is asked that the host has no
            controller for (nothing is left behind).
    """
    if host.v2 is None:
        raise ContainmentUnavailable(
            "no cgroup v2 hierarchy is mounted: a session's end cannot be the kernel's business",
            "mount cgroup2 (e.g. `mount -t cgroup2 none /sys/fs/cgroup/unified`), Linux 5.14+",
        )
    base = host.v2.base
    name = f"{runner_tag()}-{_clean(label)}-{secrets.token_hex(4)}"
    try:
        base.mkdir(exist_ok=True)
        path = base / name
        path.mkdir()
    except OSError as exc:
        raise ContainmentUnavailable(
            f"cannot create a session cgroup under {base}: {exc}",
            "run the runner as root, or delegate it a cgroup v2 subtree (systemd: Delegate=yes)",
        ) from exc
    if not (path / "cgroup.kill").exists():
        _remove(path)
        raise ContainmentUnavailable(
            f"{base} has no cgroup.kill: this kernel cannot end a cgroup at once",
            "run on Linux 5.14 or later",
        )
    if limits is None:
        return SessionCgroup(path)
    try:
        enable_delegated(host, limits)
        return SessionCgroup(path, limit_groups(host, path, limits))
    except BaseException:
        _remove(path)
        raise


def sweep_cgroups(host: CgroupHost | None = None) -> list[Path]:
    """End and remove the session cgroups of runners that no longer run (blocking).

    Each is killed, waited for (at most `EMPTY_TIMEOUT_S`) and removed. A cgroup
    of a live runner, or whose name has no runner tag, is left alone.

    Returns:
        The cgroups removed, for the caller to say so.
    """
    host = host or find_cgroups()
    if host.v2 is None:
        return []
    return [*_sweep(host.v2.base), *sweep_v1(host)]


_SWEPT: set[Path] = set()
"""The runner cgroup bases this process has swept (`sweep_once`), under `_SWEPT_LOCK`."""
_SWEPT_LOCK: Final = threading.Lock()


def sweep_once(host: CgroupHost) -> None:
    """`sweep_cgroups` the first time this process asks for ``host``'s base (blocking).

    An explicit process-wide record, on purpose: what it sweeps is the host's, left by
    runners that are gone, and a runner's own cgroups end with their sandboxes, so one
    sweep per process and base is the rule (docs/confinement.md: "the next runner's first
    sandbox sweeps"), whichever batch or loop
    of the process asks first. Thread-safe: concurrent sandboxes ask from worker threads;
    the first sweeps under the lock and the others wait until it is done, so none opens
    its sandbox before the leftovers are ended.
    """
    if host.v2 is None:
        return
    with _SWEPT_LOCK:
        if host.v2.base in _SWEPT:
            return
        _SWEPT.add(host.v2.base)
        _sweep(host.v2.base)
        sweep_v1(host)


def _sweep(base: Path) -> list[Path]:
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        tag = entry.name.split("-", 1)[0]  # <runner tag>-<label>-<random>
        if (not TAG.fullmatch(tag) or not runner_gone(tag, entry=entry.path)
                or not entry.is_dir(follow_symlinks=False)):
            continue
        path = Path(entry.path)
        _kill(path)
        deadline = time.monotonic() + EMPTY_TIMEOUT_S
        while _populated(path) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if _remove(path):
            removed.append(path)
    return removed


def _kill(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (path / "cgroup.kill").write_text("1")


def _populated(path: Path) -> bool:
    try:
        events = (path / "cgroup.events").read_text()
    except FileNotFoundError:
        return False
    return "populated 1" in events.splitlines()


def _remove_once(path: Path) -> bool:
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:  # EBUSY while a process is still in it
        return False
    return True


def _remove(path: Path) -> bool:
    for _ in range(REMOVE_TRIES):
        if _remove_once(path):
            return True
        time.sleep(POLL_S)
    return False


def _clean(label: str) -> str:
    kept = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
    return kept[:64] or "sandbox"
