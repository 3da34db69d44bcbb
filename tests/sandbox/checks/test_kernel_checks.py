"""The preflight's ``cgroups`` and ``seccomp`` checks (`sandbox.checks`): three answers.

Each check must go red when its mechanism is taken away: a kernel whose
``cgroup.kill`` ends nothing, a host without a home for a limit's controller,
a filter that allows everything, a machine with no table; and it names which
hierarchies it found.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from sandbox._errors import PreflightFailed
from sandbox._layout import measure_host_layout
from sandbox.cgroup import CgroupHost, _cgroup, find_cgroups
from sandbox.checks import preflight, raise_for
from sandbox.checks._kernel_checks import check_cgroups, check_landlock, check_seccomp
from sandbox.users import session_user

pytestmark = pytest.mark.bwrap


def test_cgroups_on_this_host_are_verified_and_named() -> None:
    check = check_cgroups(timeout_s=20)
    host = find_cgroups()
    assert host.v2 is not None
    assert (check.name, check.verdict) == ("cgroups", "ok"), check
    assert f"v2 at {host.v2.mount}" in check.detail and "cgroup.kill" in check.detail
    for name, home in host.limits.items():
        assert home is not None and f"{name} via v{home.version} {home.mount}" in check.detail


def test_a_kill_that_ends_nothing_is_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cgroup, "_kill", lambda path: None)
    check = check_cgroups(timeout_s=1)
    assert check.verdict == "broken" and "not ended by cgroup.kill" in check.detail, check
    # (The sleep is then reaped by its own context, and the emptied cgroup removed.)


def test_no_home_for_a_limit_is_broken_and_says_which(tmp_path: Path) -> None:
    host = find_cgroups()
    check = check_cgroups(CgroupHost(v2=host.v2, limits={"pids": None, "memory": host.v2}),
                          timeout_s=20)  # fmt: skip
    assert check.verdict == "broken" and "no hierarchy for pids" in check.detail, check
    assert "v1 pids" in check.fix


def test_no_cgroup_v2_is_broken_with_the_fix() -> None:
    check = check_cgroups(CgroupHost(v2=None, limits={}), timeout_s=20)
    assert check.verdict == "broken" and "no cgroup v2 hierarchy" in check.detail
    assert "cgroup2" in check.fix


def _seccomp(bwrap: str) -> str:
    return check_seccomp(bwrap, measure_host_layout(), session_user(), 30).verdict


def test_seccomp_on_this_host_is_verified(bwrap: str) -> None:
    assert _seccomp(bwrap) == "ok"


def test_a_filter_that_allows_everything_is_broken(
    bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    allow_all = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)  # ret SECCOMP_RET_ALLOW
    monkeypatch.setattr("sandbox.confined._open.session_filter", lambda: allow_all)
    assert _seccomp(bwrap) == "broken"


def test_a_machine_without_a_table_is_broken(bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("platform.machine", lambda: "riscv64")
    check = check_seccomp(bwrap, measure_host_layout(), session_user(), 30)
    assert check.verdict == "broken" and "riscv64" in check.detail


def test_a_host_without_a_home_for_the_limits_stops_every_batch(
    bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preflight before every batch is broken, so run/demo/record exit 12 (PreflightFailed)
    before any session: no v2 hierarchy, or neither v2 nor v1 for a limit's controller."""
    real = find_cgroups()
    for host in (CgroupHost(v2=None, limits={}),
                 CgroupHost(v2=real.v2, limits={"pids": None, "memory": None})):
        monkeypatch.setattr("sandbox.checks._kernel_checks.find_cgroups", lambda host=host: host)
        report = preflight(bwrap=bwrap)
        verdicts = {check.name: check.verdict for check in report.checks}
        assert verdicts["cgroups"] == "broken" and report.broken
        with pytest.raises(PreflightFailed, match="cgroups: broken"):
            raise_for(report)


def _landlock(bwrap: str) -> str:
    return check_landlock(bwrap, measure_host_layout(), session_user(), 30).verdict


def test_landlock_on_this_host_is_verified(bwrap: str) -> None:
    check = check_landlock(bwrap, measure_host_layout(), session_user(), 30)
    assert check.verdict == "ok", check
    assert "EACCES" in check.detail


def test_a_sandbox_without_the_domain_is_broken(
    bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen red the other way: with the domain in place the probe is refused (ok above)."""
    monkeypatch.setattr("sandbox.confined._command.scoped_command", lambda command: list(command))
    check = check_landlock(bwrap, measure_host_layout(), session_user(), 30)
    assert check.verdict == "broken" and "mem ok" in check.detail, check


def test_a_kernel_without_landlock_is_broken_and_stops_every_batch(
    bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sandbox.checks._kernel_checks.host_abi", lambda: None)
    check = check_landlock(None, None, session_user(), 30)
    assert check.verdict == "broken" and "lsm=" in (check.fix or ""), check
    report = preflight(bwrap=bwrap)
    assert {c.name: c.verdict for c in report.checks}["landlock"] == "broken"
    with pytest.raises(PreflightFailed, match="landlock: broken"):
        raise_for(report)


def test_no_interpreter_for_the_domain_is_broken(
    bwrap: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("sandbox.checks._kernel_checks.LANDLOCK_PYTHON",
                        str(tmp_path / "python3"))
    check = check_landlock(bwrap, measure_host_layout(), session_user(), 30)
    assert check.verdict == "broken" and "python3" in check.detail, check


def test_landlock_not_probed_when_the_sandbox_does_not_start() -> None:
    check = check_landlock(None, None, session_user(), 30)
    assert check.verdict == "unverified" and "not run" in check.detail, check
