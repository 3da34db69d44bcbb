"""``doctor``: every check a batch needs, and what only ``doctor`` checks; three answers each.

The checks that run before every batch are `campaign.batch.sandbox_checks` (the sandbox's
preflight and the skills check). ``doctor`` adds what needs the runner's view: the harness's
release against the releases the harness census covers (`check_harness_release`), the
per-session limits exercised in a sandbox (about a second), the credentials (never printed),
the default batch root outside ``$HOME`` (RC-06), network confinement (the sandbox's
network preflight) and the provider gateway (`check_gateway`). It prints nothing: the command
line prints the report.

Rule: ``doctor`` exits 0 only when every check is verified ok, 12 when any is verified
broken, 4 otherwise (a check that could not verify is never printed as a pass).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from campaign.batch import default_root, is_under_home, sandbox_checks
from recorder import COVERED_RELEASES, PINNED_RELEASE, coverage
from sandbox import (
    Check,
    CredentialsMissing,
    PoolBusy,
    PreflightReport,
    SessionUserUnusable,
    check_limits,
    check_session_user,
    hold_lease,
    host_credentials,
    measure_host_layout,
    network_preflight,
)
from sandbox.gateway import LOGIN_FIX, login_problem

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["DOCTOR_LEASE_WAIT_S", "check_batch_root", "check_credentials", "check_gateway",
           "check_harness_release", "doctor_checks"]

DOCTOR_LEASE_WAIT_S: Final = 60.0
"""Seconds ``doctor``'s probes wait at most for a free session user while other runners'
sessions hold the whole pool; then the probe is "could not verify" (a batch waits as long as
it takes instead)."""



def doctor_checks(
    *, bwrap: str, harness: Path | None, host_skill_dirs: Sequence[Path],
    api_key_env: str | None, gateway: Callable[[], Check] | None = None,
) -> PreflightReport:
    """Every check of ``doctor``, in order: `sandbox_checks`, the harness's release, limits,
    credentials, batch root, network, gateway. Its probes wait at most `DOCTOR_LEASE_WAIT_S`
    for a free session user.

    Args:
        gateway: What answers the ``gateway`` check (`check_gateway`'s ``run``); None: the
            sandbox's own, `sandbox.gateway.gateway_check`.
    """
    report = sandbox_checks(bwrap=bwrap, harness=harness, host_skill_dirs=host_skill_dirs,
                            lease_wait_s=DOCTOR_LEASE_WAIT_S)  # fmt: skip
    checks = [*report.checks, check_harness_release(report.harness_version),
              _limits(report, bwrap), check_credentials(api_key_env), check_batch_root()]
    checks.append(network_preflight(bwrap=bwrap, lease_wait_s=DOCTOR_LEASE_WAIT_S))
    checks.append(check_gateway(gateway))
    return PreflightReport(tuple(checks))


def check_gateway(run: Callable[[], Check] | None = None) -> Check:
    """``gateway``: the provider gateway exercised on host loopback (docs/gateway.md).

    The answer is `sandbox.gateway.gateway_check`'s (or ``run``'s), one of three: ok when a
    throwaway gateway forwarded a request with its placeholder carrying the real credential
    and not the placeholder, and refused and counted another key and another path; broken
    when it did otherwise (the detail says what); could not verify when the throwaway
    listener or upstream could not be set up. No key is printed. A ``run`` that answers
    under another name is a bug of the check, answered could not verify, never a pass.
    """
    check = (run or _sandbox_gateway_check)()
    if check.name != "gateway":
        return Check("gateway", "unverified", f"the gateway's check answered as {check.name!r}:"
                     f" {check.detail}")  # fmt: skip
    return check


def _sandbox_gateway_check() -> Check:
    """`sandbox.gateway.gateway_check`, or could not verify in a build whose gateway has none."""
    from sandbox import gateway

    found = getattr(gateway, "gateway_check", None)
    if found is None:
        return Check("gateway", "unverified", "this build's provider gateway has no check "
                     "(sandbox.gateway.gateway_check is missing)",
                     "install a build whose gateway is complete")  # fmt: skip
    return cast("Check", found())


def check_harness_release(version_line: str | None) -> Check:
    """``harness-release``: the harness's release against the releases the census covers.

    A covered release is ``ok``. Any other is not a pass: the recorder was not checked
    against what that release prints (docs/census.md), so a line or key it changed may be
    read wrong without a refusal; ``unverified`` with a warning that names the release, the
    covered ones and the census command that checks it (a batch on it still runs, and its
    prose and ``status`` say so). A version line that does not start with a release number
    could not be verified.

    Args:
        version_line: The harness's ``--version`` line as run in the sandbox (e.g.
            ``"2.1.332 (Claude Code)"``; `sandbox.PreflightReport.harness_version`), or None
            when the harness check did not pass.
    """
    if version_line is None:
        return Check("harness-release", "unverified", "not run: see the harness check")
    release = version_line.split(" ", 1)[0]
    covered = ", ".join(COVERED_RELEASES)
    stands = coverage(release)
    if stands == "covered":
        return Check("harness-release", "ok", f"Claude Code {release}: a release the harness "
                     f"census covers (covered: {covered}; the pin: {PINNED_RELEASE})")
    if stands == "uncovered":
        return Check("harness-release", "unverified", f"warning: Claude Code {release} is not "
                     f"a release the harness census covers (covered: {covered}): the recorder "
                     "was not checked against what this release prints, so a line or key it "
                     "changed may be read wrong without a refusal; a batch on it runs, and its "
                     "transcripts and status say so",
                     f"`make census CENSUS_VERSION={release}` checks this release; `make "
                     f"harness` installs the pin, {PINNED_RELEASE}")  # fmt: skip
    return Check("harness-release", "unverified", f"the harness's --version printed "
                 f"{version_line!r}, which does not start with a release number "
                 "(MAJOR.MINOR.PATCH): its coverage by the harness census is unknown",
                 f"pass --harness PATH naming a Claude Code CLI; `make harness` installs the "
                 f"pin, {PINNED_RELEASE}")  # fmt: skip


def _limits(report: PreflightReport, bwrap: str) -> Check:
    """``limits`` (`sandbox.checks._limit_checks`), once a session's sandbox is known to start."""
    if any(c.name == "sandbox" and c.verdict != "ok" for c in report.checks):
        return Check("limits", "unverified", "not run: the sandbox does not start")
    _, pool, usable = check_session_user(None)
    if not usable:
        return Check("limits", "unverified", "not run: see the session-user check")
    try:
        with hold_lease(pool, timeout_s=DOCTOR_LEASE_WAIT_S) as user:
            return check_limits(bwrap, measure_host_layout(), user)
    except PoolBusy as exc:
        return Check("limits", "unverified", f"not run: {exc.detail}")
    except SessionUserUnusable as exc:
        return Check("limits", "unverified", f"not run: {exc} (see the session-user check)")


def check_credentials(api_key_env: str | None) -> Check:
    """``credentials``: the key variable, or the host's ``.credentials.json`` with a login that
    has not expired (the gateway never refreshes one); never a value."""
    try:
        found = host_credentials(api_key_env=api_key_env, environ=os.environ)
    except CredentialsMissing as exc:
        return Check("credentials", "broken", f"{exc.detail} (only a real batch needs "
                     "credentials: `demo` and `run --provider scripted` give their sessions a "
                     "placeholder key for the scripted loopback provider)",
                     "log in with Claude Code on the host (it writes .credentials.json), or "
                     "pass --api-key-env NAME naming a variable that holds the key")  # fmt: skip
    if found.api_key_env is not None:
        return Check("credentials", "ok", f"an API key in ${found.api_key_env} (not printed)")
    try:
        problem = login_problem(found)
    except CredentialsMissing as exc:
        return Check("credentials", "broken", exc.detail,
                     "log in with Claude Code on the host again, or pass --api-key-env NAME")
    if problem is not None:  # the gateway never refreshes a login: every session would fail
        return Check("credentials", "broken", problem.removesuffix(f": {LOGIN_FIX}"),
                     LOGIN_FIX)
    return Check("credentials", "ok", f"{found.credentials_file} present, its login not "
                 "expired (not printed)")


def check_batch_root() -> Check:
    """``batch-root``: the default batch root resolves outside ``$HOME`` (RC-06)."""
    home_env = os.environ.get("HOME")
    home = Path(home_env).resolve() if home_env else None
    root = default_root(home=home)
    if is_under_home(root, home=home):
        return Check("batch-root", "broken", f"{root} is inside $HOME ({home}) "
                     "(docs/glossary.md: RC-06)",
                     "pass --batch-dir outside $HOME, e.g. under /var/tmp")  # fmt: skip
    return Check("batch-root", "ok", f"{root} (outside $HOME {home})")
