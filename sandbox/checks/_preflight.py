"""Host preflight (RC-05): can this host confine a session? Three answers per check.

Each check answers ``ok``, ``broken`` or ``unverified``: a check that could
not run (a timeout, a prerequisite that failed) is ``unverified``, never
``ok``. The sandbox is probed with the very argv `bwrap_argv` builds for a
session, run as the user sessions run as, so a mount or a privilege drop
that would fail a session fails here first (BC-16). The checks themselves
live in `sandbox.checks._host_checks`.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Final, Literal

from .._errors import PoolBusy, PreflightFailed, SessionUserUnusable
from .._report import PreflightReport as PreflightReport
from ..cgroup import find_cgroups, sweep_once
from ..storage import check_storage
from ..users import hold_lease
from ._host_checks import (
    BWRAP_VERSION_TIMEOUT_S,
    HARNESS_VERSION_TIMEOUT_S,
    SANDBOX_PROBE_TIMEOUT_S,
    Check,
    Verdict,
    check_bwrap,
    check_harness,
    check_layout,
    check_sandbox,
    check_session_user,
    check_userns,
    userns_sysctls,
)
from ._kernel_checks import check_cgroups, check_landlock, check_seccomp

if TYPE_CHECKING:
    from pathlib import Path

    from .._layout import HostLayout
    from ..users import SessionUser

__all__ = ["Check", "PreflightReport", "Verdict", "preflight", "raise_for", "userns_sysctls"]

AS_SESSIONS: Final[Literal["as-sessions"]] = "as-sessions"
"""`preflight`'s default ``euid``: probe as the sessions of this runner will run."""


def preflight(
    *,
    bwrap: str = "bwrap",
    harness: Path | None = None,
    layout: HostLayout | None = None,
    timeout_s: float | None = None,
    euid: int | Literal["as-sessions"] | None = AS_SESSIONS,
    lease_wait_s: float | None = None,
) -> PreflightReport:
    """Check that this host can confine sessions, before any spend or credential copy (RC-05).

    Checks, in order: ``bwrap`` (found on PATH, and its ``--version``);
    ``host-layout`` (how /bin, /lib, /lib64, /sbin are, measured or given);
    ``session-user`` (who sessions run as: a root runner drops to a user of
    its session pool before bwrap, `sandbox.users._privileges`, `sandbox.users._pool`);
    ``storage`` (a root runner makes, loop-mounts and removes one session
    store; for a runner that is not root, what it gives up: `sandbox.storage`);
    ``user-namespaces`` (``true`` in a bare ``bwrap --unshare-user``, run as
    that user; a failure names the sysctl or AppArmor setting that denies
    them); ``cgroups`` (a process in a sandbox's own cgroup is ended by
    ``cgroup.kill``; where the limits' controllers are,
    `sandbox.checks._kernel_checks`); ``sandbox`` (``true`` under the exact recipe of
    a session, `open_confined`, as that user, with an environment passed
    through ``--args FD``: proves /proc and every mount); ``seccomp`` (a probe
    in that sandbox is refused ptrace and process_vm_readv);
    ``harness``, when ``harness`` is given (its ``--version`` run inside the
    sandbox, bound at the harness mount). A
    check whose prerequisite failed is ``unverified``. Every subprocess is
    started with an empty environment and bounded by a timeout, after which
    its process group is killed. Never raises for a host problem: see `raise_for`.

    A root runner's probes run as one pool user, leased for all of them
    (`sandbox.users._lease.hold_lease`), after the sweep of killed runners' cgroups
    (a leftover it ends does not hold its user). With every user leased by
    other sandboxes for ``lease_wait_s``, the probes are ``unverified``; a
    lease that cannot be had at all makes ``session-user`` broken.

    Side effect, as for a session: when the runner is root, the session user
    gets search permission (an ACL entry) on the directories leading to the
    harness, if it lacks it (`sandbox.users._privileges.hand_over`).

    Args:
        bwrap: The bwrap executable, a name looked up on PATH or a path.
        harness: Host path of the harness executable, or None to skip that check.
        layout: The host layout; None measures ``/``.
        timeout_s: Overrides every per-check timeout, in seconds (tests).
        euid: Whose sessions to probe for: `AS_SESSIONS` (the default) this
            runner's effective uid, with the ``session-user`` check; an int
            the same for that uid (tests); None probes as the invoking user
            with no ``session-user`` check (unit tests of the other checks).
        lease_wait_s: Seconds to wait at most for a free pool user; None waits
            as long as it takes (a batch: it never fails because another
            runner is busy; ``doctor`` passes a bound).

    Returns:
        The report; ``report.ok`` only when every check is verified ok.
    """
    bwrap_check, executable = check_bwrap(bwrap, timeout_s or BWRAP_VERSION_TIMEOUT_S)
    layout_check, layout = check_layout(layout)
    checks = [bwrap_check, layout_check]
    pool, usable = None, True
    if euid is not None:
        user_check, pool, usable = check_session_user(None if euid == AS_SESSIONS else euid)
        checks += [user_check, check_storage(None if euid == AS_SESSIONS else euid)]
    with ExitStack() as stack:
        user, busy = None, ""
        if pool is not None:
            sweep_once(find_cgroups())  # before the lease: a leftover it ends frees its user
            try:
                user = stack.enter_context(hold_lease(pool, timeout_s=lease_wait_s))
            except PoolBusy as exc:
                busy = f"not run: {exc.detail}"
            except SessionUserUnusable as exc:
                checks[-1] = Check("session-user", "broken", exc.detail, exc.fix)
                usable = False
        checks += _probes(executable, layout, harness, user, usable=usable, busy=busy,
                          timeout_s=timeout_s)  # fmt: skip
    return PreflightReport(tuple(checks))


def _probes(executable: str | None, layout: HostLayout | None, harness: Path | None,
            user: SessionUser | None, *, usable: bool, busy: str,
            timeout_s: float | None) -> list[Check]:
    """The checks that run something as ``user``, in order, each unverified when its
    prerequisite failed (``busy``: no pool user came free)."""
    checks: list[Check] = []
    probe_s = timeout_s or SANDBOX_PROBE_TIMEOUT_S
    if busy:
        checks.append(Check("user-namespaces", "unverified", busy))
    elif executable is None or not usable:
        checks.append(Check("user-namespaces", "unverified", "not run: bwrap or the session user"))
    else:
        checks.append(check_userns(executable, user, probe_s))
    userns_ok = checks[-1].verdict == "ok"
    checks.append(check_cgroups(timeout_s=probe_s))
    if executable is None or layout is None or not usable or busy:
        checks.append(Check("sandbox", "unverified", busy or
                            "not run: bwrap, the host layout or the session user"))  # fmt: skip
    elif not userns_ok:
        checks.append(Check("sandbox", "unverified", "not run: user namespaces do not work"))
    elif checks[-1].verdict != "ok":
        checks.append(Check("sandbox", "unverified", "not run: no cgroup for the sandbox"))
    else:
        checks.append(check_sandbox(executable, layout, user, probe_s))
    if checks[-1].verdict != "ok" or executable is None or layout is None:
        checks.append(Check("seccomp", "unverified", "not run: the sandbox does not start"))
    else:
        checks.append(check_seccomp(executable, layout, user, probe_s))
    starts = _verdict(checks, "sandbox") == "ok" and executable is not None
    checks.append(check_landlock(executable if starts else None, layout, user, probe_s))
    if harness is not None:
        if _verdict(checks, "sandbox") != "ok" or executable is None or layout is None:
            checks.append(Check("harness", "unverified", "not run: the sandbox does not start"))
        else:
            timeout = timeout_s or HARNESS_VERSION_TIMEOUT_S
            checks.append(check_harness(executable, layout, harness, user, timeout))
    return checks


def _verdict(checks: list[Check], name: str) -> str | None:
    return next((check.verdict for check in checks if check.name == name), None)


def raise_for(report: PreflightReport, *, allow_unverified: bool = False) -> None:
    """Raise `PreflightFailed` unless ``report`` lets sessions start (RC-05, exit 12).

    Args:
        report: From `preflight`.
        allow_unverified: Accept checks that could not run; off by default,
            since a run must never start without verified confinement.

    Raises:
        PreflightFailed: a check is broken, or unverified and not allowed.
    """
    if report.broken or (report.unverified and not allow_unverified) or not report.checks:
        raise PreflightFailed(report)
