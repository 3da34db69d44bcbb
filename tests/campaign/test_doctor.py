"""``doctor``: three answers per check, each broken one with its fix.

Exit statuses from docs/cli.md: 0 every check verified ok, 12 any verified
broken, 4 none broken but some could not be verified. The same sandbox and
skills checks stop a batch with exit 12 before any session or copy.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from campaign.cli._doctor_view import LABELS, exit_status, print_report
from campaign.doctor import check_gateway, check_harness_release, doctor_checks
from recorder import COVERED_RELEASES, PINNED_RELEASE
from sandbox import Check, PreflightReport
from tests.integration import kit

KEY = "sk-doctor-placeholder-77aa"
CHECKS = ("bwrap", "host-layout", "session-user", "storage", "user-namespaces", "cgroups",
          "sandbox", "seccomp", "landlock", "harness", "skills", "harness-release", "limits",
          "credentials",
          "batch-root", "network", "gateway")  # fmt: skip


def _lines(stdout: str) -> dict[str, tuple[str, str]]:
    """check name -> (answer, detail), from doctor's output."""
    found: dict[str, tuple[str, str]] = {}
    for line in stdout.splitlines():
        match = re.match(r"^\s*(verified ok|verified broken|could not verify)  ([\w-]+): (.*)$",
                         line)  # fmt: skip
        if match:
            found[match[2]] = (match[1], match[3])
    return found


def _run_doctor(*args: str, **env: str) -> tuple[int, str, dict[str, tuple[str, str]]]:
    done = kit.cli("doctor", *args, env=kit.base_env(**env))
    return done.returncode, done.stdout, _lines(done.stdout)


@pytest.mark.bwrap
@pytest.mark.harness
def test_doctor_on_this_host_verifies_every_check(harness: Path, bwrap: str) -> None:
    status, stdout, lines = _run_doctor("--api-key-env", "HW_KEY", HW_KEY=KEY)
    assert tuple(lines) == CHECKS, stdout
    not_ok = {name: answer for name, (answer, _) in lines.items() if answer != "verified ok"}
    assert set(not_ok) <= {"network"}, stdout  # the network check is another engineer's work
    assert status == (0 if not not_ok else 4), stdout
    assert KEY not in stdout
    assert "not printed" in lines["credentials"][1]


@pytest.mark.bwrap
@pytest.mark.harness
def test_missing_credentials_are_broken_with_the_fix(harness: Path, tmp_path: Path) -> None:
    status, stdout, lines = _run_doctor(HOME=str(tmp_path))
    assert status == 12
    assert lines["credentials"][0] == "verified broken"
    assert str(tmp_path / ".claude" / ".credentials.json") in lines["credentials"][1]
    assert "fix: log in with Claude Code" in stdout
    # A machine where the demo just ran is told that only real batches need them.
    assert "only a real batch needs credentials" in lines["credentials"][1]
    if all(v == "verified ok" for name, (v, _) in lines.items() if name != "credentials"):
        assert "`demo` and `run --provider scripted` can run here" in stdout
    status, stdout, lines = _run_doctor("--api-key-env", "HW_UNSET_KEY", HOME=str(tmp_path))

    assert (status, lines["credentials"][0]) == (12, "verified broken")
    assert "HW_UNSET_KEY" in lines["credentials"][1]


@pytest.mark.bwrap
@pytest.mark.harness
def test_a_host_skill_directory_that_shadows_a_listed_skill_is_broken(
    harness: Path, tmp_path: Path
) -> None:
    """The harness, started confined, lists `simplify` among its skills (the init line of
    2.1.197 and of the pin, 2.1.332)."""
    (tmp_path / ".claude" / "skills" / "simplify").mkdir(parents=True)
    (tmp_path / ".claude" / "skills" / "my-own-skill").mkdir()
    status, stdout, lines = _run_doctor("--api-key-env", "HW_KEY", HOME=str(tmp_path), HW_KEY=KEY)
    assert status == 12, stdout
    answer, detail = lines["skills"]
    assert answer == "verified broken"
    assert "named simplify" in detail and "my-own-skill" not in detail
    assert "RC-07" in detail


@pytest.mark.bwrap
@pytest.mark.harness
def test_host_skill_directories_that_shadow_nothing_are_verified_ok(
    harness: Path, tmp_path: Path
) -> None:
    (tmp_path / ".claude" / "skills" / "my-own-skill").mkdir(parents=True)
    _, stdout, lines = _run_doctor("--api-key-env", "HW_KEY", HOME=str(tmp_path), HW_KEY=KEY)
    answer, detail = lines["skills"]
    assert answer == "verified ok", stdout
    assert re.search(r"the harness lists \d+ skills; the host's 1 skill directories", detail)


@pytest.mark.bwrap
@pytest.mark.harness
def test_a_default_batch_root_inside_home_is_broken(harness: Path) -> None:
    """With $HOME at /, both the checkout's batches/ and the /var/tmp fallback are inside it."""
    status, _, lines = _run_doctor("--api-key-env", "HW_KEY", HOME="/", HW_KEY=KEY)
    assert status == 12
    assert lines["batch-root"][0] == "verified broken"
    assert "RC-06" in lines["batch-root"][1]


@pytest.mark.bwrap
@pytest.mark.harness
def test_a_batch_stops_with_12_before_any_session_when_a_skill_is_shadowed(
    harness: Path, bwrap: str, tmp_path: Path
) -> None:
    (tmp_path / "home" / ".claude" / "skills" / "simplify").mkdir(parents=True)
    corpus = kit.write_corpus(tmp_path / "corpus", {"DOC-1": "doctor: a task never run"})
    batch = tmp_path / "batch"
    done = kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir", str(batch),
                   "--api-key-env", "HW_KEY", "--provider-url", "http://127.0.0.1:9",
                   "--harness", str(harness),
                   env=kit.base_env(HOME=str(tmp_path / "home"), HW_KEY=KEY))  # fmt: skip
    assert done.returncode == 12, done.stdout + done.stderr
    assert "skills: broken" in done.stderr
    assert not (batch / "ledger.jsonl").exists()
    assert not (batch / "sessions").exists()


def test_without_bwrap_doctor_cannot_verify_the_network_and_says_why() -> None:
    """doctor's network answer is the sandbox's network preflight, run for real: with no bwrap
    it cannot verify (never a pass) and points at the bwrap check."""
    report = doctor_checks(bwrap="/nonexistent/bwrap", harness=None, host_skill_dirs=(),
                           api_key_env=None)  # fmt: skip
    (network,) = (c for c in report.checks if c.name == "network")
    assert network.verdict == "unverified", network
    assert "/nonexistent/bwrap" in network.detail and "bwrap check" in network.detail
    assert tuple(c.name for c in report.checks) == CHECKS


@pytest.mark.parametrize(
    ("verdicts", "status"),
    [(["ok", "ok"], 0), (["ok", "unverified"], 4), (["unverified", "broken"], 12), ([], 4)],
)
def test_exit_status_follows_the_three_answers(verdicts: list[str], status: int) -> None:
    checks = tuple(Check(f"c{i}", v, "d") for i, v in enumerate(verdicts))  # type: ignore[arg-type]
    report = PreflightReport(checks)
    assert exit_status(report) == status


def test_print_report_prints_the_answer_and_the_fix_of_what_is_not_ok(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_report(PreflightReport((Check("a", "ok", "fine", "unused"),
                                  Check("b", "broken", "bad", "do this"),
                                  Check("c", "unverified", "unknown"))))  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    answers = [line.strip().split("  ")[0] for line in out if not line.strip().startswith("fix")]
    assert answers == [LABELS["ok"], LABELS["broken"], LABELS["unverified"]]
    assert out[2].strip() == "fix: do this"
    assert not any("unused" in line for line in out)


@pytest.mark.bwrap
@pytest.mark.harness
def test_doctor_into_a_closed_pipe_keeps_its_status(harness: Path, bwrap: str,
                                                    tmp_path: Path) -> None:
    # `doctor | head && run` must not take a broken host for a pass: exit 12 stays 12.
    import subprocess
    import sys

    env = kit.base_env(HOME=str(tmp_path))  # no credentials here: verified broken, exit 12
    for _ in range(3):
        done = subprocess.run(f"{sys.executable} -m campaign doctor | true; "
                              "echo status=${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                              capture_output=True, text=True, env=env, timeout=300, check=False,
                              cwd=kit.REPO)  # fmt: skip
        assert "status=12" in done.stdout, done.stdout + done.stderr


def test_a_covered_release_is_verified_ok_and_named() -> None:
    check = check_harness_release(f"{PINNED_RELEASE} (Claude Code)")
    assert check.name == "harness-release" and check.verdict == "ok"
    assert f"Claude Code {PINNED_RELEASE}: a release the harness census covers" in check.detail


def test_an_uncovered_release_is_a_warning_never_a_pass() -> None:
    """The rule: a release the census does not cover is not a pass (doctor exits 4); the
    warning names it, the covered releases, what it means and the census that checks it."""
    check = check_harness_release("2.1.999 (Claude Code)")
    assert check.verdict == "unverified"
    assert check.detail.startswith("warning: Claude Code 2.1.999 is not a release the "
                                   "harness census covers (covered: ")
    assert all(release in check.detail for release in COVERED_RELEASES)
    assert "the recorder was not checked against what this release prints" in check.detail
    assert "`make census CENSUS_VERSION=2.1.999`" in check.fix
    assert exit_status(PreflightReport((Check("bwrap", "ok", "x"), check))) == 4


@pytest.mark.parametrize("line", ["Claude Code (2.1.332)", "2.1.332-beta (Claude Code)", ""])
def test_an_unreadable_version_could_not_be_verified(line: str) -> None:
    check = check_harness_release(line)
    assert check.verdict == "unverified"
    assert f"printed {line!r}, which does not start with a release number" in check.detail


def test_without_a_harness_version_the_release_is_not_checked() -> None:
    check = check_harness_release(None)
    assert (check.verdict, check.detail) == ("unverified", "not run: see the harness check")


def test_doctor_prints_the_uncovered_warning_as_could_not_verify(
        capsys: pytest.CaptureFixture[str]) -> None:
    print_report(PreflightReport((check_harness_release("2.1.999 (Claude Code)"),)))
    out = capsys.readouterr().out
    assert re.search(r"could not verify  harness-release: warning: Claude Code 2\.1\.999 ", out)
    assert "fix: `make census CENSUS_VERSION=2.1.999` checks this release" in out


GATEWAY_ANSWERS = [
    Check("gateway", "ok", "a throwaway gateway swapped its placeholder; another key and "
          "another path refused and counted"),
    Check("gateway", "broken", "the placeholder reached the upstream", "report it"),
    Check("gateway", "unverified", "the throwaway upstream could not listen"),
]


@pytest.mark.parametrize("answer", GATEWAY_ANSWERS, ids=lambda c: c.verdict)
def test_doctor_reports_the_gateway_checks_answer_as_its_last(answer: Check) -> None:
    """docs/host.md: ``gateway`` is doctor's last check, its answer as the gateway gave it."""
    report = doctor_checks(bwrap="/nonexistent/bwrap", harness=None, host_skill_dirs=(),
                           api_key_env=None, gateway=lambda: answer)  # fmt: skip
    assert report.checks[-1] == answer
    assert tuple(c.name for c in report.checks) == CHECKS


def test_the_gateway_checks_answer_counts_like_any_other() -> None:
    """Every other check ok: the gateway's ok exits 0, broken 12, could not verify 4."""
    others = tuple(Check(name, "ok", "fine") for name in CHECKS[:-1])
    for answer, status in zip(GATEWAY_ANSWERS, (0, 12, 4), strict=True):
        gateway = check_gateway(functools.partial(lambda given: given, answer))
        assert exit_status(PreflightReport((*others, gateway))) == status


def test_a_gateway_check_answering_under_another_name_is_never_a_pass() -> None:
    answer = check_gateway(lambda: Check("network", "ok", "fine"))
    assert (answer.name, answer.verdict) == ("gateway", "unverified")
    assert "'network'" in answer.detail


@pytest.mark.bwrap
@pytest.mark.harness
def test_doctor_prints_the_gateway_check(harness: Path, bwrap: str) -> None:
    """The real check, run by the real command: its line is there, with one of the three
    answers, and no key in the output."""
    _, stdout, lines = _run_doctor("--api-key-env", "HW_KEY", HW_KEY=KEY)
    assert "gateway" in lines, stdout
    assert lines["gateway"][0] in {"verified ok", "verified broken", "could not verify"}
    assert KEY not in stdout
