"""The session users of a root runner: one unprivileged user per session that runs at once.

Namespaces keep a root runner's sessions apart, but the kernel counts much per
uid and host-wide: inotify instances (``fs.inotify.max_user_instances``) and
watches, key quotas, ``RLIMIT_NPROC``, ``RLIMIT_SIGPENDING``,
``RLIMIT_MSGQUEUE``, pipe buffers (``fs.pipe-user-pages-soft``), epoll
watches, fanotify groups. Sessions sharing one uid share those counts, so one
session could take all 128 inotify instances of the host's sessions. Rule: no
two sessions that may run at once share a uid. So a root runner has a *pool*
of session users, and each sandbox runs as one it leases for its whole life
(`sandbox.users._lease`).

The pool is ``headwater-session`` (`SESSION_USER`, the one user of earlier
versions, so existing hosts keep working), then ``headwater-session-1``,
``headwater-session-2``, ... (`pool_user_name`), at most `MAX_POOL_USERS`.
It is host-wide: every runner of the host uses the same users, and the leases
keep their sessions apart too. Each is a system user with a user group of its
own, no home and no login shell (`useradd_argv`). A root runner running C
sessions at once makes sure at least C exist (`ensure_session_pool`, before
its preflight; ``make session-user`` makes the first `DEFAULT_POOL_SIZE`).
A runner that is not root needs no pool: its sessions run as itself.
"""

from __future__ import annotations

import os
import pwd
import shutil
from dataclasses import dataclass
from typing import Final

from .._capture import run_bounded_sync
from .._errors import SessionUserUnusable
from ._privileges import SESSION_USER, SessionUser

__all__ = [
    "DEFAULT_POOL_SIZE",
    "MAX_POOL_USERS",
    "SessionPool",
    "ensure_session_pool",
    "pool_user_name",
    "session_pool",
    "session_user",
    "useradd_argv",
]

MAX_POOL_USERS: Final = 64
"""Bound on the pool: at most this many sessions of a root runner's host run at once, each as
its own user. Far above what one host's cores and memory take (a session holds ~150 MB);
raise it with care: every user is a line of /etc/passwd and an ACL entry on shared parents."""
DEFAULT_POOL_SIZE: Final = 2
"""Users ``make session-user`` creates: the default ``--concurrency``."""
USERADD_TIMEOUT_S: Final = 30.0
"""useradd edits /etc/passwd under a lock; 30 s only absorbs a contended lock."""
_SBIN_PATH: Final = "/usr/sbin:/usr/bin:/sbin:/bin"


def pool_user_name(index: int) -> str:
    """The name of pool user ``index`` (0-based): `SESSION_USER`, then ``headwater-session-N``.

    Raises:
        ValueError: ``index`` is negative or not below `MAX_POOL_USERS`.
    """
    if not 0 <= index < MAX_POOL_USERS:
        raise ValueError(f"a pool user's index is 0..{MAX_POOL_USERS - 1}, got {index}")
    return SESSION_USER if index == 0 else f"{SESSION_USER}-{index}"


def useradd_argv(name: str) -> tuple[str, ...]:
    """How a root runner creates pool user ``name``: a system user with its own group, no home,
    no login (also what ``make session-user`` runs)."""
    return ("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
            "--shell", "/usr/sbin/nologin", "--user-group", name)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SessionPool:
    """The host's session users, in pool order (`session_pool`). Facts, checked when read.

    Attributes:
        users: ``users[i]`` is named ``pool_user_name(i)``; never empty; uids and gids
            pairwise distinct and none 0.
    """

    users: tuple[SessionUser, ...]

    def __len__(self) -> int:
        return len(self.users)

    def __repr__(self) -> str:
        return f"<SessionPool {', '.join(f'{u.name}={u.uid}' for u in self.users)}>"

    def describe(self) -> str:
        """The pool in words, e.g. ``2 users: headwater-session (uid 999, gid 995), ...``."""
        each = ", ".join(f"{u.name} (uid {u.uid}, gid {u.gid})" for u in self.users)
        return f"{len(self.users)} user{'s' if len(self.users) != 1 else ''}: {each}"


def session_pool(*, euid: int | None = None) -> SessionPool | None:
    """The pool of this host: None for a runner that is not root (no drop, no pool).

    Reads ``pool_user_name(0)``, ``(1)``, ... up to the first that does not
    exist (a host whose other runners made more users shares them).

    Args:
        euid: The runner's effective uid; None reads ``os.geteuid()`` (tests pass one).

    Raises:
        SessionUserUnusable: the runner is root and `SESSION_USER` does not
            exist; or a pool user has uid or gid 0, or shares a uid or gid with
            another (its sessions' counts, or files, would be shared). The fix
            is in the message.
    """
    if (os.geteuid() if euid is None else euid) != 0:
        return None
    users: list[SessionUser] = []
    for index in range(MAX_POOL_USERS):
        name = pool_user_name(index)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            break
        users.append(_checked(SessionUser(name, entry.pw_uid, entry.pw_gid), users))
    if not users:
        raise SessionUserUnusable(
            f"the runner is root and the user {SESSION_USER} does not exist",
            f"`make session-user` (or `{' '.join(useradd_argv(SESSION_USER))}`); run, demo and "
            "record create it themselves",
        )
    return SessionPool(tuple(users))


def session_user(*, euid: int | None = None) -> SessionUser | None:
    """The pool's first user, `SESSION_USER`; None for a runner that is not root.

    For tests and tools that run one sandbox as a known user and hold no
    lease; a runner's sandboxes run as the user they lease (`sandbox.users._lease`).

    Raises:
        SessionUserUnusable: as `session_pool`.
    """
    pool = session_pool(euid=euid)
    return None if pool is None else pool.users[0]


def _checked(user: SessionUser, before: list[SessionUser]) -> SessionUser:
    if user.uid == 0 or user.gid == 0:
        raise SessionUserUnusable(
            f"{user.name} has uid {user.uid} gid {user.gid}: sessions would run as root",
            f"give {user.name} its own unprivileged uid and gid (usermod/groupmod)",
        )
    for other in before:
        if user.uid == other.uid or user.gid == other.gid:
            raise SessionUserUnusable(
                f"{user.name} (uid {user.uid}, gid {user.gid}) shares an id with {other.name} "
                f"(uid {other.uid}, gid {other.gid}): its sessions would share what the kernel "
                "counts per user",
                f"give {user.name} a uid and a group of its own (usermod/groupmod), or remove "
                "it and let the runner create it",
            )
    return user


def ensure_session_pool(size: int) -> tuple[SessionPool | None, tuple[SessionUser, ...]]:
    """Like `session_pool`, but a root runner first creates the pool users it lacks of ``size``.

    Missing users ``pool_user_name(0)`` .. ``(size - 1)`` are created with
    `useradd_argv`, in order; a user another runner created meanwhile is taken
    as it is. Blocking (useradd).

    Args:
        size: How many users the pool must have at least: the runner's
            ``--concurrency``; 1..`MAX_POOL_USERS`.

    Returns:
        ``(pool, created)``: ``created`` the users this call made (the caller
        says so); ``(None, ())`` for a runner that is not root.

    Raises:
        SessionUserUnusable: ``size`` is above `MAX_POOL_USERS` (the fix: a
            lower ``--concurrency``); useradd is missing, timed out or failed;
            or a user is unusable (`session_pool`).
    """
    if os.geteuid() != 0:
        return None, ()
    if not 1 <= size <= MAX_POOL_USERS:
        raise SessionUserUnusable(
            f"a root runner runs each session at once as a user of its own, and the pool holds "
            f"at most {MAX_POOL_USERS} users; {size} sessions at once were asked",
            f"pass --concurrency {MAX_POOL_USERS} or less",
        )
    created: list[SessionUser] = []
    for index in range(size):
        name = pool_user_name(index)
        if not _exists(name) and _useradd(name):
            entry = pwd.getpwnam(name)
            created.append(SessionUser(name, entry.pw_uid, entry.pw_gid))
    return session_pool(), tuple(created)


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _useradd(name: str) -> bool:
    """Create ``name``; False when another runner created it meanwhile (useradd exits 9)."""
    argv = useradd_argv(name)
    useradd = shutil.which(argv[0]) or shutil.which(argv[0], path="/usr/sbin")
    by_hand = f"create it by hand: `{' '.join(argv)}` (or `make session-user SESSION_USERS=N`)"
    if useradd is None:
        raise SessionUserUnusable(
            f"the runner is root, the session user {name} does not exist and useradd is not "
            "found", f"install passwd (useradd), or {by_hand}")  # fmt: skip
    run = run_bounded_sync([useradd, *argv[1:]], timeout_s=USERADD_TIMEOUT_S,
                           env={"PATH": _SBIN_PATH})  # fmt: skip
    if run.returncode is None:
        why = "timed out" if run.timed_out else run.stderr.strip()
        raise SessionUserUnusable(f"cannot run useradd for {name}: {why}", by_hand)
    if run.returncode != 0 and not _exists(name):
        raise SessionUserUnusable(
            f"useradd {name} exited {run.returncode}: {run.stderr.strip()}", by_hand)
    return run.returncode == 0
