"""The host checks behind the preflight (RC-05), each one answer of three.

The probes (`sandbox.checks._probes`) start every subprocess with an empty
environment, bounded by a named timeout after which its process group is
killed. The sandbox probes use the very argv a session gets (`bwrap_argv`),
run as the user sessions run as (`sandbox.users._privileges`), so what would fail
a session fails here first (BC-16).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import pwd
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._argv import HARNESS_MOUNT
from .._capture import Run
from .._capture import run_bounded_sync as run_bounded
from .._errors import SessionUserUnusable
from .._layout import HostLayout, measure_host_layout
from .._report import Check as Check
from .._report import Verdict as Verdict
from ..users import (
    LEASE_ROOT,
    MAX_POOL_USERS,
    SESSION_USER,
    SessionPool,
    SessionUser,
    drop_argv,
    session_pool,
)
from ._probes import STDERR_TAIL_CHARS, probe_spec, run_confined

if TYPE_CHECKING:
    from collections.abc import Iterator

BWRAP_VERSION_TIMEOUT_S: Final = 10.0
"""``bwrap --version`` prints and exits at once; 10 s only absorbs a loaded host."""
SANDBOX_PROBE_TIMEOUT_S: Final = 20.0
"""A trivial command in the sandbox takes well under 1 s; more means a hung mount or namespace."""
HARNESS_VERSION_TIMEOUT_S: Final = 60.0
"""The pinned CLI is a ~240 MB binary; a cold page cache can take tens of seconds to load it."""
_TRUE_CANDIDATES: Final = ("/usr/bin/true", "/bin/true")
_PROC_SYS: Final = Path("/proc/sys")
_USERNS_SYSCTLS: Final = (
    # (file under /proc/sys, the value that denies unprivileged user namespaces, the cause)
    ("kernel/unprivileged_userns_clone", "0", "the sysctl kernel.unprivileged_userns_clone=0"),
    ("user/max_user_namespaces", "0", "the sysctl user.max_user_namespaces=0"),
    (
        "kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "AppArmor (kernel.apparmor_restrict_unprivileged_userns=1: only programs with an "
        "AppArmor profile that allows userns may create one)",
    ),
)
_USERNS_FIX: Final = (
    "allow unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` "
    "(Debian/Ubuntu kernels), `sysctl -w user.max_user_namespaces=15000`, and on Ubuntu 23.10+ "
    "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile for bwrap; "
    "in a container, allow unshare(CLONE_NEWUSER) in its seccomp/AppArmor policy"
)
_CAUSES: Final = (
    # (pattern in bwrap's stderr, likely cause, fix); first match wins
    (
        r"uid map|gid map|new namespace|user namespace|unshare",
        "unprivileged user namespaces are denied",
        _USERNS_FIX,
    ),
    (
        r"mount proc",
        "/proc cannot be mounted in a new pid namespace (a container whose /proc is masked)",
        "run on the host, or give the container an unmasked /proc"
        " (docker: --security-opt systempaths=unconfined)",
    ),
    (
        r"loopback|RTM_NEWADDR",
        "the network namespace cannot be set up",
        "allow network namespaces for unprivileged users, or use --network host",
    ),
    (
        r"Can't find source path",
        "a mount source is missing on the host, or the session user cannot reach it",
        "create the path bwrap names, or let the session user search its parent directories",
    ),
    (
        r"execvp",
        "the command cannot be executed inside: a mount it needs is missing "
        "(e.g. the ELF loader under /lib64 when /lib64 is neither bound nor a recreated symlink)",
        "compare the host-layout check with what the command needs",
    ),
    (
        r"Can't (?:bind|mount|create|mkdir|make symlink|remount)",
        "bwrap could not set up one of the mounts",
        "check the mount bwrap names",
    ),
)


def check_bwrap(bwrap: str, timeout_s: float) -> tuple[Check, str | None]:
    """``bwrap``: found on PATH and answers ``--version``; returns the executable too."""
    executable = shutil.which(bwrap)
    if executable is None:
        return Check(
            "bwrap",
            "broken",
            f"{bwrap!r} not found on PATH",
            "install bubblewrap, e.g. `apt-get install bubblewrap`",
        ), None
    run = run_bounded([executable, "--version"], timeout_s=timeout_s)
    if run.timed_out:
        return Check(
            "bwrap", "unverified", f"`{executable} --version` did not finish in {timeout_s} s"
        ), executable
    if run.returncode != 0:
        return failed("bwrap", f"`{executable} --version`", run), executable
    return Check("bwrap", "ok", f"{executable}: {run.stdout.strip()}"), executable


def check_layout(layout: HostLayout | None) -> tuple[Check, HostLayout | None]:
    """``host-layout``: how /bin, /lib, /lib64, /sbin are; broken if a link leaves /usr."""
    if layout is None:
        try:
            layout = measure_host_layout()
        except OSError as exc:
            return Check(
                "host-layout", "unverified", f"cannot inspect /bin, /lib, /lib64, /sbin: {exc}"
            ), None
    parts = [f"{link} -> {target} (--symlink)" for link, target in layout.symlinks]
    parts += [f"{directory} directory (--ro-bind)" for directory in layout.directories]
    detail = ", ".join(parts) or "none of /bin, /lib, /lib64, /sbin exists"
    outside = [link for link, target in layout.symlinks if not _resolves_under_usr(link, target)]
    if outside:
        return Check(
            "host-layout",
            "broken",
            f"{detail}; {', '.join(outside)} point outside /usr "
            "and would dangle in the sandbox (only /usr and /etc are mounted)",
            "report this host layout: the sandbox mounts these only as symlinks into /usr "
            "(docs/glossary.md: RC-02)",
        ), layout
    return Check("host-layout", "ok", detail), layout


def _resolves_under_usr(link: str, target: str) -> bool:
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    return resolved == "/usr" or resolved.startswith("/usr/")


def check_session_user(euid: int | None = None) -> tuple[Check, SessionPool | None, bool]:
    """``session-user``: who sessions run as; returns ``(check, pool, usable)``.

    A runner that is not root: itself, no pool (ok). A root runner: the pool
    (`sandbox.users._pool.session_pool`), each user verified unprivileged (uid and
    gid not 0) and distinct (from the others of the pool, and no other
    account of /etc/passwd with its uid), and setpriv there; broken otherwise,
    with the fix. ``usable`` is False when broken. Could not verify when the
    account database cannot be read.
    """
    runner = os.geteuid() if euid is None else euid
    try:
        pool = session_pool(euid=runner)
        drop = drop_argv(pool.users[0] if pool is not None else None)
        shared = _shared_uids(pool)
    except SessionUserUnusable as exc:
        return Check("session-user", "broken", exc.detail, exc.fix), None, False
    except OSError as exc:
        return Check("session-user", "unverified", f"cannot read the accounts: {exc}"), None, False
    if pool is None:
        detail = f"the runner is uid {runner}, not root: sessions run as it; no drop is needed"
        return Check("session-user", "ok", detail), None, True
    if shared:
        return Check(
            "session-user", "broken",
            f"pool {pool.describe()}; but {shared}: its sessions would share that account's "
            "counts and files", "give each session user a uid of its own (usermod -u)",
        ), None, False  # fmt: skip
    detail = (
        f"the runner is root: each session runs as a session user of its own, leased for its "
        f"life (locks in {LEASE_ROOT}), from a pool of {pool.describe()}; each unprivileged "
        f"(uid and gid not 0, no supplementary groups), each with its own uid and gid, dropped "
        f"to with `{' '.join(drop[:1])}` before bwrap starts; a run with --concurrency above "
        f"{len(pool)} creates more (at most {MAX_POOL_USERS})"
    )
    return Check("session-user", "ok", detail), pool, True


def _shared_uids(pool: SessionPool | None) -> str:
    """Other accounts with a pool user's uid, in words; empty when none (blocking)."""
    if pool is None:
        return ""
    ours = {u.uid: u.name for u in pool.users}
    names = {u.name for u in pool.users}
    others = [f"{entry.pw_name} has the uid {entry.pw_uid} of {ours[entry.pw_uid]}"
              for entry in pwd.getpwall()
              if entry.pw_uid in ours and entry.pw_name not in names]  # fmt: skip
    return "; ".join(others)


def check_userns(executable: str, user: SessionUser | None, timeout_s: float) -> Check:
    """``user-namespaces``: ``true`` in a bare ``bwrap --unshare-user``, as the session's user."""
    true = _true()
    if true is None:
        return Check("user-namespaces", "unverified", f"no `true`: none of {_TRUE_CANDIDATES}")
    who = user.name if user is not None else f"uid {os.geteuid()}"
    argv = [*drop_argv(user), executable, "--unshare-user", "--ro-bind", "/", "/", "--", true]
    run = run_bounded(argv, timeout_s=timeout_s)
    if run.timed_out:
        return Check("user-namespaces", "unverified", f"bwrap did not finish in {timeout_s} s")
    if run.returncode != 0:
        return failed("user-namespaces", f"`bwrap --unshare-user {true}` as {who}", run)
    return Check(
        "user-namespaces", "ok", f"bwrap created a user namespace as {who} (unprivileged)"
    )


def check_sandbox(
    executable: str, layout: HostLayout, user: SessionUser | None, timeout_s: float
) -> Check:
    """``sandbox``: ``true`` under a session's exact argv, env through ``--args FD``."""
    true = _true()
    if true is None:
        return Check("sandbox", "unverified", f"no `true` to run: none of {_TRUE_CANDIDATES}")
    spec = probe_spec(bwrap=executable, layout=layout, executable=Path(true).resolve(),
                      command=[true], user=user)  # fmt: skip
    try:
        run = run_confined(spec, timeout_s=timeout_s)
    except SessionUserUnusable as exc:
        return Check("sandbox", "broken", exc.detail, exc.fix)
    if run.timed_out:
        return Check(
            "sandbox", "unverified", f"`{true}` in the sandbox did not finish in {timeout_s} s"
        )
    if run.returncode != 0:
        return failed("sandbox", f"`{true}` in the sandbox", run)
    who = user.name if user is not None else "the runner's user"
    return Check(
        "sandbox",
        "ok",
        f"`{true}` ran as {who} under the session's mounts, namespaces, --args env, own cgroup, "
        "seccomp filter and Landlock domain",
    )


def check_harness(
    executable: str, layout: HostLayout, harness: Path, user: SessionUser | None, timeout_s: float
) -> Check:
    """``harness``: its ``--version`` run inside the sandbox from the harness mount."""
    if not harness.is_file():
        return Check(
            "harness",
            "broken",
            f"{harness} is not a file",
            "install it (`make harness`) or pass --harness",
        )
    spec = probe_spec(bwrap=executable, layout=layout, executable=harness.resolve(),
                      command=[HARNESS_MOUNT, "--version"], user=user)  # fmt: skip
    try:
        run = run_confined(spec, timeout_s=timeout_s)
    except SessionUserUnusable as exc:
        return Check("harness", "broken", exc.detail, exc.fix)
    if run.timed_out:
        return Check(
            "harness",
            "unverified",
            f"`{harness} --version` in the sandbox did not finish in {timeout_s} s",
        )
    version = run.stdout.strip().splitlines()[:1]
    if run.returncode != 0 or not version:
        return failed("harness", f"`{harness} --version` in the sandbox", run)
    return Check("harness", "ok", version[0])


def failed(name: str, what: str, run: Run) -> Check:
    """A broken check quoting bwrap's own message, its likely cause and the fix (BC-15)."""
    message = run.stderr.strip()[-STDERR_TAIL_CHARS:] or "(no message)"
    cause, fix = _likely_cause(message)
    facts = userns_causes()
    if facts and fix == _USERNS_FIX:
        cause = f"unprivileged user namespaces are denied by {' and by '.join(facts)}"
    elif facts:
        cause += f" (host: {'; '.join(facts)})"
    return Check(
        name, "broken", f"{what} exited {run.returncode}: {message}; likely cause: {cause}", fix
    )


def _likely_cause(stderr: str) -> tuple[str, str]:
    for pattern, cause, fix in _CAUSES:
        if re.search(pattern, stderr, re.IGNORECASE):
            return cause, fix
    return "not recognised; see bwrap's message", "run the command by hand to see more"


def userns_sysctls(proc_sys: Path | None = None) -> list[str]:
    """List the host settings that deny unprivileged user namespaces.

    E.g. ``["user.max_user_namespaces=0"]``. Settings the kernel does not
    have, or that cannot be read, are skipped.
    """
    return [name.replace("/", ".") + "=" + denying for name, denying, _ in _denying(proc_sys)]


def userns_causes(proc_sys: Path | None = None) -> list[str]:
    """The same settings as `userns_sysctls`, said as causes (a sysctl, or AppArmor)."""
    return [cause for _, _, cause in _denying(proc_sys)]


def _denying(proc_sys: Path | None) -> Iterator[tuple[str, str, str]]:
    root = _PROC_SYS if proc_sys is None else proc_sys
    for name, denying, cause in _USERNS_SYSCTLS:
        with contextlib.suppress(OSError):
            if (root / name).read_text().strip() == denying:
                yield name, denying, cause


def _true() -> str | None:
    return next((path for path in _TRUE_CANDIDATES if os.path.exists(path)), None)


__all__ = [
    "SESSION_USER",
    "Check",
    "Run",
    "Verdict",
    "check_bwrap",
    "check_harness",
    "check_layout",
    "check_sandbox",
    "check_session_user",
    "check_userns",
    "failed",
    "run_bounded",
    "run_confined",
    "userns_causes",
    "userns_sysctls",
]
