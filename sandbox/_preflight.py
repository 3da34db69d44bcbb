"""Host preflight (RC-05): can this host confine a session? Three answers per check.

Each check answers ``ok``, ``broken`` or ``unverified``: a check that could
not run (a timeout, a prerequisite that failed) is ``unverified``, never
``ok``. The sandbox is probed with the very argv `bwrap_argv` builds for a
session, so a mount that would fail a session fails here first (BC-16).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from ._argv import HARNESS_MOUNT, Confinement, bwrap_argv
from ._config import Credentials
from ._env import session_environment, setenv_payload
from ._errors import PreflightFailed
from ._layout import HostLayout, measure_host_layout

if TYPE_CHECKING:
    from collections.abc import Sequence

Verdict = Literal["ok", "broken", "unverified"]
"""``ok``: verified to work; ``broken``: verified not to work; ``unverified``: could not tell."""

BWRAP_VERSION_TIMEOUT_S: Final = 10.0
"""``bwrap --version`` prints and exits at once; 10 s only absorbs a loaded host."""
SANDBOX_PROBE_TIMEOUT_S: Final = 20.0
"""A trivial command in the sandbox takes well under 1 s; more means a hung mount or namespace."""
HARNESS_VERSION_TIMEOUT_S: Final = 60.0
"""The pinned CLI is a ~240 MB binary; a cold page cache can take tens of seconds to load it."""
REAP_TIMEOUT_S: Final = 5.0
"""Bound on collecting output after SIGKILL of a timed-out check; teardown must not hang."""
STDERR_TAIL_CHARS: Final = 2000
"""How much of bwrap's own message a check quotes."""
_PIPE_CAPACITY_BYTES: Final = 65536
"""Linux default pipe buffer (pipe(7)): a payload this small is written before the spawn."""
_TRUE_CANDIDATES: Final = ("/usr/bin/true", "/bin/true")
_PROC_SYS: Final = Path("/proc/sys")
_USERNS_SYSCTLS: Final = (
    # (file under /proc/sys, the value that denies unprivileged user namespaces)
    ("kernel/unprivileged_userns_clone", "0"),
    ("user/max_user_namespaces", "0"),
    ("kernel/apparmor_restrict_unprivileged_userns", "1"),
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
        "a mount source is missing on the host",
        "create the path bwrap names, or fix the confinement paths",
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


@dataclass(frozen=True, slots=True)
class Check:
    """One preflight answer.

    Attributes:
        name: ``"bwrap"``, ``"host-layout"``, ``"sandbox"`` or ``"harness"``.
        verdict: ``ok``, ``broken`` or ``unverified``.
        detail: What was seen, for a human: a version, bwrap's own message, a cause.
        fix: What to do when not ok; empty when ok.
    """

    name: str
    verdict: Verdict
    detail: str
    fix: str = ""


@dataclass(frozen=True, slots=True)
class PreflightReport:
    """Every check preflight ran, in order (RC-05).

    Attributes:
        checks: The answers; never empty when built by `preflight`.
    """

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """True when there are checks and every one is ``ok``."""
        return bool(self.checks) and all(check.verdict == "ok" for check in self.checks)

    @property
    def broken(self) -> bool:
        """True when any check is verified ``broken`` (doctor exit 12)."""
        return any(check.verdict == "broken" for check in self.checks)

    @property
    def unverified(self) -> bool:
        """True when any check could not run (doctor exit 4 when nothing is broken)."""
        return any(check.verdict == "unverified" for check in self.checks)

    @property
    def problems(self) -> tuple[str, ...]:
        """One line per check that is not ok: ``name: verdict: detail (fix: ...)``."""
        return tuple(
            f"{c.name}: {c.verdict}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "")
            for c in self.checks
            if c.verdict != "ok"
        )

    @property
    def harness_version(self) -> str | None:
        """The harness's ``--version`` line as run inside the sandbox, when that check is ok."""
        found = [c for c in self.checks if c.name == "harness" and c.verdict == "ok"]
        return found[0].detail if found else None


def preflight(
    *,
    bwrap: str = "bwrap",
    harness: Path | None = None,
    layout: HostLayout | None = None,
    timeout_s: float | None = None,
) -> PreflightReport:
    """Check that this host can confine sessions, before any spend or credential copy (RC-05).

    Checks, in order: ``bwrap`` (found on PATH, and its ``--version``);
    ``host-layout`` (how /bin, /lib, /lib64, /sbin are, measured or given);
    ``sandbox`` (``true`` run under the exact `bwrap_argv` of a session, with
    an environment passed through ``--args FD``: proves user namespaces,
    /proc and every mount); ``harness``, when ``harness`` is given (its
    ``--version`` run inside the sandbox, bound at the harness mount). A
    check whose prerequisite failed is ``unverified``. Every subprocess is
    started with an empty environment and bounded by a timeout, after which
    its process group is killed. Never raises for a host problem: see `raise_for`.

    Args:
        bwrap: The bwrap executable, a name looked up on PATH or a path.
        harness: Host path of the harness executable, or None to skip that check.
        layout: The host layout; None measures ``/``.
        timeout_s: Overrides every per-check timeout, in seconds (tests).

    Returns:
        The report; ``report.ok`` only when every check is verified ok.
    """
    bwrap_check, executable = _check_bwrap(bwrap, timeout_s or BWRAP_VERSION_TIMEOUT_S)
    layout_check, layout = _check_layout(layout)
    checks = [bwrap_check, layout_check]
    if executable is None or layout is None:
        checks.append(
            Check("sandbox", "unverified", "not run: bwrap or the host layout is unknown")
        )
    else:
        checks.append(_check_sandbox(executable, layout, timeout_s or SANDBOX_PROBE_TIMEOUT_S))
    if harness is not None:
        if checks[-1].verdict != "ok" or executable is None or layout is None:
            checks.append(Check("harness", "unverified", "not run: the sandbox does not start"))
        else:
            timeout = timeout_s or HARNESS_VERSION_TIMEOUT_S
            checks.append(_check_harness(executable, layout, harness, timeout))
    return PreflightReport(tuple(checks))


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


def _check_bwrap(bwrap: str, timeout_s: float) -> tuple[Check, str | None]:
    executable = shutil.which(bwrap)
    if executable is None:
        return Check(
            "bwrap",
            "broken",
            f"{bwrap!r} not found on PATH",
            "install bubblewrap, e.g. `apt-get install bubblewrap`",
        ), None
    run = _run_bounded([executable, "--version"], timeout_s=timeout_s)
    if run.timed_out:
        return Check(
            "bwrap", "unverified", f"`{executable} --version` did not finish in {timeout_s} s"
        ), executable
    if run.returncode != 0:
        return _failed("bwrap", f"`{executable} --version`", run), executable
    return Check("bwrap", "ok", f"{executable}: {run.stdout.strip()}"), executable


def _check_layout(layout: HostLayout | None) -> tuple[Check, HostLayout | None]:
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
            "report this host layout: RC-02 mounts these only as symlinks into /usr",
        ), layout
    return Check("host-layout", "ok", detail), layout


def _resolves_under_usr(link: str, target: str) -> bool:
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    return resolved == "/usr" or resolved.startswith("/usr/")


def _check_sandbox(executable: str, layout: HostLayout, timeout_s: float) -> Check:
    true = next((path for path in _TRUE_CANDIDATES if os.path.exists(path)), None)
    if true is None:
        return Check(
            "sandbox", "unverified", f"no `true` to run: none of {_TRUE_CANDIDATES} exists"
        )
    run = _run_confined(executable, layout, Path(true).resolve(), [true], timeout_s)
    if run.timed_out:
        return Check(
            "sandbox", "unverified", f"`{true}` in the sandbox did not finish in {timeout_s} s"
        )
    if run.returncode != 0:
        return _failed("sandbox", f"`{true}` in the sandbox", run)
    return Check(
        "sandbox", "ok", f"`{true}` ran under the session's mounts, namespaces and --args env"
    )


def _check_harness(executable: str, layout: HostLayout, harness: Path, timeout_s: float) -> Check:
    if not harness.is_file():
        return Check(
            "harness",
            "broken",
            f"{harness} is not a file",
            "install it (`make harness`) or pass --harness",
        )
    run = _run_confined(
        executable, layout, harness.resolve(), [HARNESS_MOUNT, "--version"], timeout_s
    )
    if run.timed_out:
        return Check(
            "harness",
            "unverified",
            f"`{harness} --version` in the sandbox did not finish in {timeout_s} s",
        )
    version = run.stdout.strip().splitlines()[:1]
    if run.returncode != 0 or not version:
        return _failed("harness", f"`{harness} --version` in the sandbox", run)
    return Check("harness", "ok", version[0])


@dataclass(frozen=True, slots=True)
class _Run:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False


def _failed(name: str, what: str, run: _Run) -> Check:
    message = run.stderr.strip()[-STDERR_TAIL_CHARS:] or "(no message)"
    cause, fix = _likely_cause(message)
    facts = userns_sysctls()
    if facts:
        cause += f" (host: {', '.join(facts)})"
    return Check(
        name, "broken", f"{what} exited {run.returncode}: {message}; likely cause: {cause}", fix
    )


def _likely_cause(stderr: str) -> tuple[str, str]:
    """Return the likely cause and fix for bwrap's own message (BC-15)."""
    for pattern, cause, fix in _CAUSES:
        if re.search(pattern, stderr, re.IGNORECASE):
            return cause, fix
    return "not recognised; see bwrap's message", "run the command by hand to see more"


def userns_sysctls(proc_sys: Path = _PROC_SYS) -> list[str]:
    """List the host settings that deny unprivileged user namespaces.

    E.g. ``["user.max_user_namespaces=0"]``.

    Settings the kernel does not have, or that cannot be read, are skipped.
    """
    found: list[str] = []
    for name, denying in _USERNS_SYSCTLS:
        with contextlib.suppress(OSError):
            if (proc_sys / name).read_text().strip() == denying:
                found.append(f"{name.replace('/', '.')}={denying}")
    return found


def _run_confined(
    executable: str, layout: HostLayout, harness: Path, command: Sequence[str], timeout_s: float
) -> _Run:
    """Run ``command`` under a session's exact `bwrap_argv`, in throwaway directories."""
    with tempfile.TemporaryDirectory(prefix="headwater-preflight-") as scratch:
        root = Path(scratch).resolve()
        dirs = {name: root / name for name in ("workspace", "log", "config")}
        for path in dirs.values():
            path.mkdir(mode=0o700)
        conf = Confinement(
            workspace=dirs["workspace"],
            harness=harness,
            log_dir=dirs["log"],
            config_dir=dirs["config"],
            host_layout=layout,
        )
        env = session_environment(
            config_dir=dirs["config"],
            log_dir=dirs["log"],
            provider_url=None,
            credentials=Credentials(None, None, None),
        )
        payload = setenv_payload(env)
        read_fd, write_fd = os.pipe()
        try:
            _write_all(write_fd, payload)
            os.close(write_fd)
            write_fd = -1
            argv = bwrap_argv(conf, command, bwrap=executable, args_fd=read_fd)
            return _run_bounded(argv, timeout_s=timeout_s, pass_fds=(read_fd,))
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)


def _write_all(fd: int, payload: bytes) -> None:
    if len(payload) >= _PIPE_CAPACITY_BYTES:
        raise ValueError(f"preflight payload of {len(payload)} bytes would block on the pipe")
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _run_bounded(argv: Sequence[str], *, timeout_s: float, pass_fds: Sequence[int] = ()) -> _Run:
    """Run ``argv`` with an empty environment; on timeout, SIGKILL its whole process group."""
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    except OSError as exc:
        return _Run(returncode=None, stdout="", stderr=f"cannot execute {argv[0]}: {exc}")
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        # Kill the group, not only the child: a grandchild holding our pipes would
        # otherwise keep communicate() waiting for EOF (CPython issue #81605 / bpo-37424).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        try:
            stdout, stderr = process.communicate(timeout=REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # an escaped descendant still holds the pipes
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait(timeout=REAP_TIMEOUT_S)
            stdout, stderr = b"", b""
        return _Run(None, _text(stdout), _text(stderr), timed_out=True)
    return _Run(process.returncode, _text(stdout), _text(stderr))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
