"""Host preflight (RC-05): three answers, bwrap's own message, and never "ok" by default.

Tests that are about one check call `preflight(euid=None)` (no session-user
check, probes as the invoking user); the session-user tests pass an euid.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from recorder import PINNED_RELEASE
from sandbox import (
    Check,
    Confinement,
    HostLayout,
    PreflightFailed,
    PreflightReport,
    bwrap_argv,
    bwrap_options,
    measure_host_layout,
    preflight,
    raise_for,
)
from sandbox._init import session_init_command
from sandbox._landlock import scoped_command
from sandbox._seccomp import session_filter
from sandbox.checks._host_checks import userns_causes
from sandbox.checks._preflight import userns_sysctls
from sandbox.users import SESSION_USER, session_pool

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "bug_inputs"
BC15 = FIXTURES / "BC-15_fake_bwrap.sh"
MERGED_USR = HostLayout(
    symlinks=(
        ("/bin", "usr/bin"),
        ("/lib", "usr/lib"),
        ("/lib64", "usr/lib64"),
        ("/sbin", "usr/sbin"),
    ),
    directories=(),
)


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, body: str) -> Path:
    """Put a fake `bwrap` first on PATH, as BC-15 does."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return _script(bindir / "bwrap", body)


def _verdicts(report: PreflightReport) -> dict[str, str]:
    return {check.name: check.verdict for check in report.checks}


def _check(report: PreflightReport, name: str) -> Check:
    return next(check for check in report.checks if check.name == name)


def _fails_the_full_sandbox_only(mode: str) -> str:
    """A fake bwrap: answers --version, passes the bare userns probe, fails a session argv
    (its mounts on an ``--args`` fd)."""
    return (
        f'[ "$1" = --version ] && {{ echo "bubblewrap 0.8.0"; exit 0; }}\n'
        f'case "$*" in *--args*) BC15_MODE={mode} exec /bin/sh {BC15};; esac\nexit 0\n'
    )


ALL_OK = {
    "bwrap": "ok",
    "host-layout": "ok",
    "session-user": "ok",
    "storage": "ok",
    "user-namespaces": "ok",
    "cgroups": "ok",
    "sandbox": "ok",
    "seccomp": "ok",
    "landlock": "ok",
}


@pytest.mark.bwrap
def test_preflight_is_ok_on_this_host(bwrap: str) -> None:
    report = preflight(bwrap=bwrap)
    assert _verdicts(report) == ALL_OK
    assert report.ok
    assert not report.broken
    assert report.problems == ()
    assert "bubblewrap" in report.checks[0].detail
    if os.geteuid() == 0:
        pool = session_pool()
        assert pool is not None
        assert f"from a pool of {pool.describe()}" in report.checks[2].detail
        userns = _check(report, "user-namespaces").detail
        assert any(f"as {u.name} (unprivileged)" in userns for u in pool.users)
        assert "loop-mounted" in _check(report, "storage").detail
    raise_for(report)


# The messages are BC-15_fake_bwrap.sh's, written out here from the fixture's text.
@pytest.mark.parametrize(
    ("mode", "message", "cause"),
    [
        ("uidmap", "bwrap: setting up uid map: Permission denied", "user namespaces are denied"),
        (
            "userns",
            "bwrap: No permissions to creating new namespace, likely because the kernel "
            "does not allow non-privileged user namespaces.",
            "user namespaces are denied",
        ),
        (
            "proc",
            "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
            "/proc cannot be mounted",
        ),
        (
            "loopback",
            "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted",
            "network namespace",
        ),
    ],
)
def test_preflight_reports_broken_with_bwraps_own_message_and_the_likely_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str, cause: str
) -> None:
    """BC-15: bwrap answers --version but cannot start a sandbox on this 'host'.

    Namespace denials fail the bare user-namespace probe already; /proc and
    loopback failures only the session's full argv.
    """
    userns = mode in ("uidmap", "userns")
    _on_path(
        monkeypatch,
        tmp_path,
        f'[ "$1" = --version ] && {{ echo "bubblewrap 0.8.0"; exit 0; }}\n'
        f"BC15_MODE={mode} exec /bin/sh {BC15}\n"
        if userns
        else _fails_the_full_sandbox_only(mode),
    )
    report = preflight(harness=Path("/usr/bin/true"), layout=MERGED_USR, euid=None)
    assert _verdicts(report) == {
        "bwrap": "ok",
        "host-layout": "ok",
        "user-namespaces": "broken" if userns else "ok",
        "cgroups": "ok",
        "sandbox": "unverified" if userns else "broken",
        "seccomp": "unverified",
        "landlock": "unverified",
        "harness": "unverified",
    }
    assert report.broken
    assert not report.ok
    sandbox = _check(report, "user-namespaces" if userns else "sandbox")
    assert message in sandbox.detail
    assert cause in sandbox.detail
    assert sandbox.fix
    with pytest.raises(PreflightFailed, match=message.split(": ", 1)[1][:30]) as caught:
        raise_for(report)
    assert caught.value.report is report


def test_preflight_with_the_bc15_fixture_itself_as_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(monkeypatch, tmp_path, f"exec /bin/sh {BC15}\n")  # fails even --version
    report = preflight(layout=MERGED_USR, euid=None)
    assert _verdicts(report) == {
        "bwrap": "broken",
        "host-layout": "ok",
        "user-namespaces": "broken",
        "cgroups": "ok",
        "sandbox": "unverified",
        "seccomp": "unverified",
        "landlock": "unverified",
    }
    assert "setting up uid map: Permission denied" in _check(report, "user-namespaces").detail


def test_preflight_without_bwrap_is_broken_and_the_sandbox_unverified() -> None:
    report = preflight(bwrap="/nonexistent/bwrap", harness=Path("/usr/bin/true"), euid=None)
    assert _verdicts(report) == {
        "bwrap": "broken",
        "host-layout": "ok",
        "user-namespaces": "unverified",
        "cgroups": "ok",
        "sandbox": "unverified",
        "seccomp": "unverified",
        "landlock": "unverified",
        "harness": "unverified",
    }
    assert "bubblewrap" in report.checks[0].fix
    with pytest.raises(PreflightFailed):
        raise_for(report)


def test_preflight_that_times_out_is_unverified_never_ok(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hung bwrap (and a grandchild holding its pipes) is killed and reported unverified."""
    _on_path(monkeypatch, tmp_path, "sleep 30\n")
    started = time.monotonic()
    report = preflight(layout=MERGED_USR, timeout_s=0.3, euid=None)
    assert time.monotonic() - started < 10
    assert _verdicts(report) == {
        "bwrap": "unverified",
        "host-layout": "ok",
        "user-namespaces": "unverified",
        "cgroups": "ok",
        "sandbox": "unverified",
        "seccomp": "unverified",
        "landlock": "unverified",
    }
    assert not report.ok
    assert not report.broken
    assert report.unverified
    with pytest.raises(PreflightFailed):
        raise_for(report)
    raise_for(report, allow_unverified=True)


def test_preflight_sandbox_timeout_is_unverified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(
        monkeypatch,
        tmp_path,
        '[ "$1" = --version ] && { echo "bubblewrap 0.8.0"; exit 0; }\n'
        'case "$*" in *--args*) sleep 30;; esac\n',
    )
    report = preflight(layout=MERGED_USR, harness=Path("/usr/bin/true"), timeout_s=0.3, euid=None)
    assert _verdicts(report) == {
        "bwrap": "ok",
        "host-layout": "ok",
        "user-namespaces": "ok",
        "cgroups": "ok",
        "sandbox": "unverified",
        "seccomp": "unverified",
        "landlock": "unverified",
        "harness": "unverified",
    }


def test_preflight_probes_with_the_session_argv_and_an_args_fd_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe uses the same mount plan as a session: bwrap_argv, given layout, --args FD."""
    record = tmp_path / "argv"
    payload = tmp_path / "payload"
    _on_path(
        monkeypatch,
        tmp_path,
        f"""[ "$1" = --version ] && {{ echo "bubblewrap 0.8.0"; exit 0; }}
case "$*" in *process_vm_readv*|*/proc/1/mem*) exit 0;; esac  # the seccomp and landlock
# probes; the sandbox check's mounts (--proc among them) come on its --args fd: record it
prev=; for a in "$@"; do
  [ "$prev" = --args ] && fd=$a; [ "$prev" = --seccomp ] && sfd=$a; prev=$a
done
[ -n "$fd" ] || exit 0
cat /dev/fd/"$fd" > {payload}.read
case "$(tr '\\0' ' ' < {payload}.read)" in *--proc*) ;; *) exit 0;; esac
mv {payload}.read {payload}
for a in "$@"; do printf '%s\\0' "$a"; done > {record}
cat /dev/fd/"$sfd" > {payload}.seccomp
""",
    )
    layout = HostLayout(symlinks=(("/lib64", "usr/lib64"),), directories=("/bin", "/lib"))
    report = preflight(layout=layout, euid=None)
    # A bwrap that runs nothing cannot answer the seccomp probe: could not verify, never ok.
    assert {**_verdicts(report), "seccomp": "?", "landlock": "?"} == {
        "bwrap": "ok", "host-layout": "ok", "user-namespaces": "ok", "cgroups": "ok",
        "sandbox": "ok", "seccomp": "?", "landlock": "?"}, report.problems
    assert _check(report, "seccomp").verdict == "unverified"
    assert _check(report, "landlock").verdict == "unverified"
    argv = record.read_bytes().decode().split("\0")[:-1]
    sent = payload.read_bytes()
    options = sent.decode().split("\0")[:-1]
    options = options[: options.index("--setenv")]
    # Rebuild the confinement from the recorded paths, then ask bwrap_argv for the whole list.
    binds = [options[i + 1] for i, a in enumerate(options) if a == "--bind"]
    harness = options[options.index("/opt/harness/claude") - 1]
    conf = Confinement(
        workspace=Path(binds[0]),
        harness=Path(harness),
        log_dir=Path(binds[1]),
        config_dir=Path(binds[2]),
        host_layout=layout,
    )
    fd = int(argv[argv.index("--args") + 1])
    command = argv[argv.index("--") + 1 :]
    # The session's init shell (lifeline, pid-2 guard) then `true`, as for a session.
    assert command in [session_init_command(scoped_command([true]), lifeline=True, bridge=False)
                       for true in ("/usr/bin/true", "/bin/true")]
    seccomp_fd = int(argv[argv.index("--seccomp") + 1])
    assert argv == bwrap_argv(conf, command, bwrap="unused", args_fd=fd,
                              seccomp_fd=seccomp_fd)[1:]  # fmt: skip
    assert options == bwrap_options(conf)
    assert (tmp_path / "payload.seccomp").read_bytes() == session_filter()  # a session's filter
    assert options[options.index("--symlink") :][:3] == ["--symlink", "usr/lib64", "/lib64"]
    assert options[options.index("/bin") - 1 :][:3] == ["--ro-bind", "/bin", "/bin"]
    assert sent[len(b"\0".join(o.encode() for o in options)) + 1 :].startswith(
        b"--setenv\x00HOME\x00")
    assert b"ANTHROPIC_API_KEY" not in sent


@pytest.mark.bwrap
def test_preflight_names_a_failing_mount_when_the_layout_is_wrong_for_the_host(bwrap: str) -> None:
    """BC-16 case 1: on a merged-/usr host, mounting only /usr leaves no ELF loader at /lib64."""
    if not measure_host_layout().symlinks:
        pytest.skip("this host is not merged-/usr; the wrong layout would not fail here")
    report = preflight(bwrap=bwrap, layout=HostLayout(symlinks=(), directories=()), euid=None)
    assert _verdicts(report) == {
        "bwrap": "ok",
        "host-layout": "ok",
        "user-namespaces": "ok",
        "cgroups": "ok",
        "sandbox": "broken",
        "seccomp": "unverified",
        "landlock": "unverified",
    }
    assert "execvp" in _check(report, "sandbox").detail
    assert "/lib64" in _check(report, "sandbox").detail


def test_preflight_layout_with_a_symlink_out_of_usr_is_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(monkeypatch, tmp_path, 'echo "bubblewrap 0.8.0"\n')
    outside = HostLayout(symlinks=(("/bin", "/opt/bin"),), directories=())
    report = preflight(layout=outside, euid=None)
    layout = report.checks[1]
    assert (layout.name, layout.verdict) == ("host-layout", "broken")
    assert "/bin" in layout.detail
    assert report.broken


@pytest.mark.bwrap
def test_preflight_runs_the_harness_version_inside_the_sandbox(bwrap: str, tmp_path: Path) -> None:
    """The stand-in prints a version only when it runs from the harness mount, confined."""
    harness = _script(
        tmp_path / "stand-in",
        '[ "$0" = /opt/harness/claude ] && [ ! -e /root ] '
        '&& { echo "9.9.9 (Stand-in)"; exit 0; }\nexit 3\n',
    )
    report = preflight(bwrap=bwrap, harness=harness)
    assert _verdicts(report)["harness"] == "ok", report.problems
    assert report.harness_version == "9.9.9 (Stand-in)"


@pytest.mark.bwrap
def test_preflight_reports_a_failing_harness_with_its_message(bwrap: str, tmp_path: Path) -> None:
    harness = _script(tmp_path / "stand-in", 'echo "cannot start: missing runtime" >&2\nexit 1\n')
    report = preflight(bwrap=bwrap, harness=harness)
    assert _verdicts(report)["harness"] == "broken"
    assert "cannot start: missing runtime" in report.checks[-1].detail
    assert report.harness_version is None


def test_preflight_missing_harness_is_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(monkeypatch, tmp_path, 'echo "bubblewrap 0.8.0"\n')
    report = preflight(layout=MERGED_USR, harness=tmp_path / "no-such-claude", euid=None)
    assert _verdicts(report)["harness"] == "broken"


@pytest.mark.bwrap
@pytest.mark.harness
def test_preflight_runs_the_pinned_cli_inside_the_sandbox(bwrap: str, harness: Path) -> None:
    report = preflight(bwrap=bwrap, harness=harness)
    assert report.ok, report.problems
    assert report.harness_version is not None
    assert report.harness_version.startswith(f"{PINNED_RELEASE} ")


def test_userns_sysctls_names_the_settings_that_deny(tmp_path: Path) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "user").mkdir()
    (tmp_path / "kernel" / "unprivileged_userns_clone").write_text("0\n")
    (tmp_path / "user" / "max_user_namespaces").write_text("15000\n")
    (tmp_path / "kernel" / "apparmor_restrict_unprivileged_userns").write_text("1\n")
    assert userns_sysctls(tmp_path) == [
        "kernel.unprivileged_userns_clone=0",
        "kernel.apparmor_restrict_unprivileged_userns=1",
    ]
    assert userns_sysctls(tmp_path / "absent") == []


def test_report_answers_and_problems() -> None:
    ok = Check("bwrap", "ok", "bubblewrap 0.8.0")
    unverified = Check("sandbox", "unverified", "timed out")
    broken = Check("harness", "broken", "exit 1", "reinstall")
    assert PreflightReport((ok,)).ok
    assert not PreflightReport(()).ok
    mixed = PreflightReport((ok, unverified, broken))
    assert (mixed.ok, mixed.broken, mixed.unverified) == (False, True, True)
    assert mixed.problems == (
        "sandbox: unverified: timed out",
        "harness: broken: exit 1 (fix: reinstall)",
    )
    with pytest.raises(PreflightFailed, match="harness: broken: exit 1"):
        raise_for(mixed, allow_unverified=True)


def test_userns_causes_name_the_sysctl_or_apparmor(tmp_path: Path) -> None:
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "apparmor_restrict_unprivileged_userns").write_text("1\n")
    assert userns_causes(tmp_path) == [
        "AppArmor (kernel.apparmor_restrict_unprivileged_userns=1: only programs with an "
        "AppArmor profile that allows userns may create one)"
    ]
    (tmp_path / "kernel" / "apparmor_restrict_unprivileged_userns").write_text("0\n")
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "max_user_namespaces").write_text("0\n")
    assert userns_causes(tmp_path) == ["the sysctl user.max_user_namespaces=0"]


@pytest.mark.parametrize(
    ("sysctl", "value", "named"),
    [
        ("kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor"),
        ("kernel/unprivileged_userns_clone", "0", "the sysctl kernel.unprivileged_userns_clone=0"),
    ],
)
def test_a_userns_denial_names_apparmor_or_the_sysctl_as_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sysctl: str, value: str, named: str
) -> None:
    proc_sys = tmp_path / "proc-sys"
    (proc_sys / sysctl).parent.mkdir(parents=True)
    (proc_sys / sysctl).write_text(value + "\n")
    monkeypatch.setattr("sandbox.checks._host_checks._PROC_SYS", proc_sys)
    _on_path(
        monkeypatch,
        tmp_path,
        f'[ "$1" = --version ] && {{ echo "bubblewrap 0.8.0"; exit 0; }}\n'
        f"BC15_MODE=uidmap exec /bin/sh {BC15}\n",
    )
    report = preflight(layout=MERGED_USR, euid=None)
    userns = report.checks[2]
    assert (userns.name, userns.verdict) == ("user-namespaces", "broken")
    assert "setting up uid map: Permission denied" in userns.detail
    assert f"likely cause: unprivileged user namespaces are denied by {named}" in userns.detail
    assert "sysctl" in userns.fix


@pytest.mark.bwrap
def test_a_runner_that_is_not_root_runs_sessions_as_itself(bwrap: str) -> None:
    report = preflight(bwrap=bwrap, euid=1000)
    assert _verdicts(report) == ALL_OK
    assert "not root" in report.checks[2].detail
    assert "no drop" in report.checks[2].detail
    # What it gives up is said, never passed off as the same (blind mountinfo, disk bound).
    storage = _check(report, "storage").detail
    assert "staging directory" in storage and "/proc/self/mountinfo" in storage
    assert "is sampled there" in storage and "RLIMIT_FSIZE" in storage


def test_a_root_runner_without_the_session_user_is_broken_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> object:
        raise KeyError(name)

    monkeypatch.setattr("sandbox.users._pool.pwd.getpwnam", missing)
    report = preflight(layout=MERGED_USR, harness=Path("/usr/bin/true"), euid=0)
    verdicts = _verdicts(report)
    assert verdicts["session-user"] == "broken"
    assert {verdicts["user-namespaces"], verdicts["sandbox"], verdicts["harness"]} == {
        "unverified"
    }
    check = report.checks[2]
    assert SESSION_USER in check.detail
    assert "make session-user" in check.fix
    with pytest.raises(PreflightFailed, match="session-user: broken"):
        raise_for(report)


def test_a_root_runner_without_setpriv_is_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(
        "sandbox.users._privileges.shutil.which",
        lambda name, **kw: None if name == "setpriv" else real_which(name, **kw),
    )
    report = preflight(layout=MERGED_USR, euid=0)
    if "does not exist" in report.checks[2].detail:
        pytest.skip("no session user on this host")
    assert _verdicts(report)["session-user"] == "broken"
    assert "setpriv" in report.checks[2].detail
    assert "util-linux" in report.checks[2].fix


@pytest.mark.bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="the privilege drop happens for a root runner")
def test_a_root_runners_probes_run_as_the_session_user_through_private_parents(
    bwrap: str, tmp_path: Path
) -> None:
    """The stand-in 'harness' prints its uid inside: the session user's, not 0.

    It lives under pytest's private (0700, root's) tmp directories: the preflight,
    like a session, gives the session user search permission on the way (an ACL).
    """
    harness = _script(tmp_path / "stand-in", "id -u\n")
    report = preflight(bwrap=bwrap, harness=harness)
    assert _verdicts(report) == {**ALL_OK, "harness": "ok"}, report.problems
    pool = session_pool()
    assert pool is not None
    assert report.harness_version in {str(u.uid) for u in pool.users}
    assert report.harness_version != "0"


@pytest.mark.bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="the privilege drop happens for a root runner")
def test_a_harness_the_session_user_may_not_execute_is_broken_with_the_fix(
    bwrap: str, tmp_path: Path
) -> None:
    harness = _script(tmp_path / "stand-in", "echo 1.0\n")
    harness.chmod(0o700)
    report = preflight(bwrap=bwrap, harness=harness)
    check = report.checks[-1]
    assert (check.name, check.verdict) == ("harness", "broken")
    assert re.search(f"not readable and executable by {SESSION_USER}(-[0-9]+)? ", check.detail)
    assert check.fix == f"chmod o+rx {harness.resolve()}"


def test_a_root_runner_whose_store_cannot_be_made_is_broken_with_the_fix(tmp_path: Path) -> None:
    """Every session would be refused its confinement: the preflight says so before any spend."""
    from sandbox.storage._check import check_storage

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    check = check_storage(0, root=not_a_dir)
    assert check.verdict == "broken" and check.fix, check
