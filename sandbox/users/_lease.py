"""Leases of session users: a sandbox of a root runner runs as a pool user no other one runs as.

Rule: each sandbox (a session, with its findings checker; a preflight probe)
holds one pool user (`sandbox.users._pool`) exclusively, across every runner
process of the host, from before its directories are handed over until its
cgroup is empty and its files are the runner's again; no process of that uid
runs when the lease is handed out. So no two sandboxes that run at once share
a uid, and nothing the kernel counts per uid (inotify instances, key quotas,
``RLIMIT_NPROC``, ...) is shared between sessions.

How:

* **the lock**: one file per pool user, ``<LEASE_ROOT>/<name>.lock`` (a
  root-owned 0700 directory), held with ``flock(LOCK_EX)`` on a descriptor of
  the runner's only (``O_CLOEXEC``: no child inherits it). The kernel
  releases it when the descriptor is closed, so the lease of a runner killed
  with SIGKILL frees itself (flock(2)).
* **no leftover**: a user whose lock is free but whose uid still has a
  process (``/proc/<pid>/status``, any of its real, effective, saved or
  filesystem uids; proc(5)) is not handed out: that is a killed runner's
  session the sweep has not ended yet, or a process no runner started. The
  sweep of killed runners' cgroups runs before a runner's first lease (at
  start-up, `sandbox.sweep_killed_runners`; in `open_confined` before it
  leases), so a provable session's leftover is ended first; anything else is
  left alone and its user skipped.
* **its keys**: a lease is released only once its uid holds no more keys
  than when it was handed out (``/proc/key-users``; bounded, `KEYS_SETTLE_S`):
  the session's keyrings outlive its last process by the seconds the kernel
  takes to free bwrap's user namespace, and count against the uid's quota.
* **waiting**: when every pool user is leased, the caller waits (polling
  every `POLL_S`) until one is free: a batch never fails because another
  runner is busy. The pool does not grow here: a root runner made at least
  as many users as it runs sessions at once before its preflight
  (`sandbox.users._pool.ensure_session_pool`), so only other runners' sessions
  make it wait. When every free user has leftover processes for `STRAY_BOUND_S`
  (no lease will ever end), the wait ends with `SessionUserUnusable` naming
  them.

A runner that is not root has no pool: its sandboxes run as itself, and the
"lease" of ``None`` is ``None``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import stat
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import anyio

from .._errors import PoolBusy, SessionUserUnusable
from .._hostfs import PROC
from ..cgroup import EMPTY_TIMEOUT_S

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping

    from ._pool import SessionPool
    from ._privileges import SessionUser

__all__ = [
    "LEASE_ROOT",
    "POLL_S",
    "STRAY_BOUND_S",
    "Lease",
    "hold_lease",
    "lease_user",
    "try_lease",
    "uid_keys",
    "uid_processes",
]

LEASE_ROOT: Final = Path("/run/headwater-campaign/leases")
"""The lock files of the pool users, one per user; host-wide state, gone at reboot with the
leases it holds (/run is a tmpfs on systemd hosts)."""
LEASE_DIR_MODE: Final = 0o700
"""Mode of `LEASE_ROOT` and its parent: only root (the runners) reaches the locks."""
LOCK_FILE_MODE: Final = 0o600
POLL_S: Final = 0.2
"""Seconds between tries while every pool user is leased: a session lasts seconds to
minutes, so a fifth of a second of delay is nothing; the try reads /proc once."""
STRAY_BOUND_S: Final = EMPTY_TIMEOUT_S
"""Seconds a waiter accepts that every free pool user still has processes: as long as a
cgroup kill may take to empty a cgroup, the sweep's bound."""
KEYS_SETTLE_S: Final = 10.0
"""Seconds a lease waits at most, before it is released, for its uid's keys to be back to what
they were when it was handed out. A session's keyrings live in bwrap's user namespace, which
the kernel frees a little after its last process (about 2 s here for 200 keys); until then
they count against the uid's quota (``kernel.keys.maxkeys``), and a session leased the user
meanwhile got EDQUOT (`tests/integration/test_key_quota_lease_attack.py`)."""
_KEYS_POLL_S: Final = 0.05
_STATUS_READ: Final = 16384
"""Bytes read of a ``/proc/<pid>/status`` (about 1.5 KB; ``Uid:`` is in its first 1 KB)."""
logger = logging.getLogger(__name__)


@final
class Lease:
    """One pool user held exclusively (module docstring) until `release`.

    Attributes:
        user: The leased user.
    """

    def __init__(self, user: SessionUser, fd: int, *, keys: int = 0,
                 proc: Path = PROC) -> None:
        self.user = user
        self._fd: int | None = fd
        self._keys = keys
        self._proc = proc

    def __repr__(self) -> str:
        return f"<Lease {self.user.name} uid={self.user.uid} {'held' if self.held else 'released'}>"

    @property
    def held(self) -> bool:
        """Whether the lock is still held (`release` not called)."""
        return self._fd is not None

    def settle(self, timeout_s: float = KEYS_SETTLE_S) -> bool:
        """Wait (blocking, at most ``timeout_s``) until the uid holds no more keys than when the
        lease was handed out; True when it does. Call before `release`, once the sandbox is over."""
        deadline = time.monotonic() + timeout_s
        while uid_keys(self.user.uid, self._proc) > self._keys:
            if time.monotonic() >= deadline:
                logger.warning("%s still holds keys %.0f s after its sandbox ended",
                               self.user.name, timeout_s)  # fmt: skip
                return False
            time.sleep(_KEYS_POLL_S)
        return True

    def release(self) -> None:
        """Let the user go (closing the lock's descriptor unlocks it); idempotent.

        Call only once no process of the sandbox is left and its files are handed back.
        """
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def uid_keys(uid: int, proc: Path = PROC) -> int:
    """Keys the kernel counts for ``uid`` (``proc/key-users``: ``uid: usage nkeys/...``); 0 when
    it has none or the kernel keeps no keys."""
    try:
        text = (proc / "key-users").read_text()
    except OSError:
        return 0
    for row in text.splitlines():
        head, _, rest = row.partition(":")
        if head.strip() == str(uid):
            with contextlib.suppress(IndexError, ValueError):
                return int(rest.split()[1].split("/")[0])
    return 0


def uid_processes(uid: int, proc: Path = PROC) -> list[int]:
    """Pids of the live processes with ``uid`` as any of their four uids (``Uid:`` in status).

    A process that goes while it is read is not counted, nor is a zombie
    (``State: Z``, or ``X``): it holds nothing the kernel counts for its uid
    but a pid. After every sandbox, bwrap's pid 1 is such a zombie for a
    while, reparented to the host's init, which may reap it a second or more
    later; counted, it kept its user from the next session (every lease then
    waited, scanning /proc). Blocking: reads every ``proc/<pid>/status``.
    """
    found: list[int] = []
    try:
        entries = [e.name for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return found
    prefix, wanted = os.fspath(proc) + "/", str(uid).encode()
    for name in entries:
        # os.open/os.read and byte searches, not open() and lines: this runs once per
        # session over every process of the host, and the file objects were most of its cost.
        try:
            fd = os.open(prefix + name + "/status", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            text = b"\n" + os.read(fd, _STATUS_READ)
        except OSError:
            continue
        finally:
            os.close(fd)
        if _field(text, b"State:")[:1] in ([b"Z"], [b"X"]):
            continue
        if wanted in _field(text, b"Uid:"):
            found.append(int(name))
    return found


def _field(text: bytes, key: bytes) -> list[bytes]:
    """The words after ``key`` on its line of a status text that starts with a newline; []."""
    at = text.find(b"\n" + key)
    if at < 0:
        return []
    start = at + 1 + len(key)
    end = text.find(b"\n", start)
    return text[start:end if end >= 0 else len(text)].split()


def try_lease(
    pool: SessionPool, *, root: Path = LEASE_ROOT, proc: Path = PROC
) -> tuple[Lease | None, Mapping[str, list[int]]]:
    """Lease the first free pool user, in pool order, if any is free now (blocking, no wait).

    A user is free when its lock can be taken at once and no process of its
    uid runs.

    Returns:
        ``(lease, strays)``: the lease, or None when none is free; ``strays``
        names the users that were not leased but had processes (name -> pids).

    Raises:
        SessionUserUnusable: the lease directory cannot be made, or is not the
            runner's own private directory, or a lock file cannot be opened
            (the fix names it).
    """
    directory = _lease_dir(root)
    strays: dict[str, list[int]] = {}
    for user in pool.users:
        lock = directory / f"{user.name}.lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                         LOCK_FILE_MODE)  # fmt: skip
        except OSError as exc:  # ELOOP: a symlink planted there; EACCES, ENOSPC, ...
            raise SessionUserUnusable(f"cannot open the lease of {user.name}, {lock}: {exc}",
                                      f"remove {lock}; root must be able to create it") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        pids = uid_processes(user.uid, proc)
        if pids:
            os.close(fd)
            strays[user.name] = pids
            continue
        return Lease(user, fd, keys=uid_keys(user.uid, proc), proc=proc), strays
    return None, strays


def _lease_dir(root: Path) -> Path:
    """``root``, made 0700 (and its parent) if missing, checked to be the runner's own."""
    try:
        for directory in (root.parent, root):
            with contextlib.suppress(FileExistsError):
                directory.mkdir(mode=LEASE_DIR_MODE)
        info = os.lstat(root)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
            if stat.S_IMODE(info.st_mode) != LEASE_DIR_MODE:  # mkdir's mode is the umask's
                os.chmod(root, LEASE_DIR_MODE)
            return root
        problem = f"{root} is not a directory of the runner's (uid {info.st_uid})"
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.ENOENT, errno.EROFS, errno.ENOTDIR):
            raise
        problem = f"cannot make {root}: {exc}"
    raise SessionUserUnusable(
        f"the session users' leases cannot be kept: {problem}",
        f"let root create {root} (mode 0700; remove whatever is there)",
    )


class _Wait:
    """The waiting rule shared by the two ways to lease (module docstring, "waiting")."""

    def __init__(self, pool: SessionPool, stray_bound_s: float) -> None:
        self._pool = pool
        self._bound_s = stray_bound_s
        self._stray_since: float | None = None
        self.started = time.monotonic()
        self._said = False

    def missed(self, strays: Mapping[str, list[int]]) -> None:
        """One try found no free user; raises when only leftovers are in the way too long."""
        now = time.monotonic()
        if len(strays) < len(self._pool):  # a lease is held: it will end
            self._stray_since = None
        elif self._stray_since is None:
            self._stray_since = now
        elif now - self._stray_since >= self._bound_s:
            named = "; ".join(f"{name}: pids {' '.join(map(str, pids[:8]))}"
                              for name, pids in strays.items())  # fmt: skip
            raise SessionUserUnusable(
                f"every session user has processes that no runner leases ({named}), for "
                f"{self._bound_s:.0f} s: a sandbox as one of them would share its counts",
                "end those processes (a killed runner's session outside this runner's cgroup "
                "tree), or add session users (`make session-user SESSION_USERS=N`)",
            )
        if not self._said:
            self._said = True
            logger.info("all %d session users are leased; waiting for one", len(self._pool))


@asynccontextmanager
async def lease_user(
    pool: SessionPool | None, *, root: Path = LEASE_ROOT, proc: Path = PROC,
    poll_s: float = POLL_S, stray_bound_s: float = STRAY_BOUND_S,
) -> AsyncIterator[SessionUser | None]:
    """Hold a pool user for the block: the first free one, waiting while none is.

    **Cancellation:** a cancelled wait holds nothing; the lease is released
    however the block ends (an exception, a cancellation).

    Args:
        pool: The host's pool; None (a runner that is not root) yields None at once.
        root: The lock files' directory (tests pass their own).
        proc: Where /proc is (tests).
        poll_s: Seconds between tries while every user is leased.
        stray_bound_s: `STRAY_BOUND_S`.

    Yields:
        The leased user, or None for a None pool.

    Raises:
        SessionUserUnusable: the lease directory is unusable, or only users
            with leftover processes were free for ``stray_bound_s``.
    """
    if pool is None:
        yield None
        return
    wait = _Wait(pool, stray_bound_s)
    while True:
        with anyio.CancelScope(shield=True):  # a lease taken in the thread is never lost
            lease, strays = await anyio.to_thread.run_sync(
                lambda: try_lease(pool, root=root, proc=proc))
        if lease is not None:
            break
        wait.missed(strays)
        await anyio.sleep(poll_s)
    try:
        yield lease.user
    finally:
        try:
            with anyio.CancelScope(shield=True):  # its keys gone first (`KEYS_SETTLE_S`)
                await anyio.to_thread.run_sync(lease.settle)
        finally:
            lease.release()


@contextlib.contextmanager
def hold_lease(
    pool: SessionPool | None, *, timeout_s: float | None = None, root: Path = LEASE_ROOT,
    proc: Path = PROC, poll_s: float = POLL_S, stray_bound_s: float = STRAY_BOUND_S,
) -> Iterator[SessionUser | None]:
    """`lease_user` for synchronous code (the preflight's bare bwrap probe); blocks while it waits.

    Args:
        pool: As for `lease_user`.
        timeout_s: Seconds to wait at most for a free user; None waits as long as it takes.
        root, proc, poll_s, stray_bound_s: As for `lease_user`.

    Raises:
        PoolBusy: no user came free within ``timeout_s``.
        SessionUserUnusable: as `lease_user`.
    """
    if pool is None:
        yield None
        return
    wait = _Wait(pool, stray_bound_s)
    while True:
        lease, strays = try_lease(pool, root=root, proc=proc)
        if lease is not None:
            break
        wait.missed(strays)
        waited = time.monotonic() - wait.started
        if timeout_s is not None and waited >= timeout_s:
            raise PoolBusy(len(pool), waited)
        time.sleep(poll_s)
    try:
        yield lease.user
    finally:
        try:
            lease.settle()
        finally:
            lease.release()
