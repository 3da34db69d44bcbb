"""Errors raised by `sandbox`.

* SandboxError
  x PreflightFailed            - the host cannot confine a session (RC-05); nothing was started
  x CredentialsMissing         - the credentials the caller named are absent (RC-03)
  x ConfinementUnavailable     - this sandbox cannot be confined as the rules require; nothing ran
    x SessionUserUnusable      - a root runner cannot drop to the session user (no root inside)
      x PoolBusy               - every session user stayed leased for as long as the caller waits
    x ContainmentUnavailable   - no cgroup of its own, or no seccomp filter, for the sandbox
    x StoreUnavailable         - no file system of its own for the session (sandbox.storage)
  x StoreNotRemoved            - a session's store stayed mounted or on disk (sandbox.storage)
  x SpawnFailed                - a child could not be started (its executable); nothing ran

Argument mistakes (a relative path, an empty command, a NUL in an environment
value) are programming errors and raise `ValueError`, not a `SandboxError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._report import PreflightReport


class SandboxError(Exception):
    """Base class for every error raised by `sandbox`."""


class PreflightFailed(SandboxError):
    """Raised by `raise_for` when preflight found the host unable to confine (RC-05).

    Raised before any harness call and before any credential copy; the CLI
    turns it into exit status 12. The whole report travels with it, so the
    caller can print every check, not only the first problem.

    The message is the headline, then one line per check that is not ok with
    its fix (what the CLI prints).

    Attributes:
        report: The `PreflightReport` that was not ok.
    """

    def __init__(self, report: PreflightReport, headline: str = (
            "confinement preflight failed; nothing was started or spent (no session may run "
            "unconfined; docs/glossary.md: RC-05):")) -> None:
        lines = [f"{c.name}: {c.verdict}: {c.detail}" + (f"\n    fix: {c.fix}" if c.fix else "")
                 for c in report.checks if c.verdict != "ok"] or ["no check passed"]
        super().__init__(headline + "\n  " + "\n  ".join(lines))
        self.report = report
        self.headline = headline


class CredentialsMissing(SandboxError):
    """Raised by `host_credentials` when the named credentials are absent (RC-03).

    The message names the variable or the file that was looked for, never a
    secret value.

    Attributes:
        detail: What was looked for and where, e.g. ``"ANTHROPIC_API_KEY is not set"``.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(f"credentials missing: {detail}")
        self.detail = detail


class ConfinementUnavailable(SandboxError):
    """A sandbox cannot be confined as the rules require: nothing of it ran, nothing was spent.

    Raised by `sandbox.open_confined` before the spawn; a session is then
    ``refused-confinement``, a preflight check ``broken``.

    Attributes:
        detail: What is wrong.
        fix: What to do about it.
    """

    def __init__(self, detail: str, fix: str, *, what: str = "cannot confine the sandbox") -> None:
        super().__init__(f"{what}: {detail} (fix: {fix})")
        self.detail = detail
        self.fix = fix


class ContainmentUnavailable(ConfinementUnavailable):
    """The sandbox could not get its own cgroup, or its seccomp filter, on this host.

    Raised by `sandbox.cgroup._cgroup` and `sandbox._seccomp` (through `open_confined`):
    without them the end of a session would not be the kernel's business, or a
    process inside could trace bwrap's pid 1.
    """


class SessionUserUnusable(ConfinementUnavailable):
    """Raised when a root runner cannot run its sessions as the unprivileged session user.

    Raised before bwrap starts, so nothing ran as root inside a sandbox; the
    preflight reports it as a broken check, a session as ``refused-confinement``.

    Attributes:
        detail: What is wrong, e.g. ``"the user headwater-session does not exist"``.
        fix: What to do about it.
    """

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail, fix, what="cannot drop privileges for the session")


class PoolBusy(SessionUserUnusable):
    """Raised by `sandbox.users._lease.hold_lease` when no pool user came free within its bound.

    Not a broken host: other sandboxes (of this or another runner) hold every
    session user. A session never sees it (it waits as long as it takes); a
    bounded caller, such as ``doctor``'s probes, answers "could not verify".

    Attributes:
        users: How many users the pool has.
        waited_s: Seconds waited.
    """

    def __init__(self, users: int, waited_s: float) -> None:
        super().__init__(
            f"all {users} session users stayed leased by other sandboxes for {waited_s:.0f} s",
            "wait for the other runners' sessions to end, or add session users "
            "(`make session-user SESSION_USERS=N`, or a run with a higher --concurrency)",
        )
        self.users = users
        self.waited_s = waited_s


class SpawnFailed(SandboxError):
    """A child could not be started: its executable is missing or not executable.

    Raised by `sandbox._process.spawn` (and everything built on it) before any
    child exists, so nothing ran and nothing was spent. A child that starts
    and then fails is data (its exit status), not this error.

    Attributes:
        executable: ``argv[0]`` of the command, or what could not be prepared.
        reason: The operating system's explanation.
    """

    def __init__(self, executable: str, reason: str) -> None:
        super().__init__(f"cannot start {executable!r}: {reason}")
        self.executable = executable
        self.reason = reason
