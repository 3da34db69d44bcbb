"""Bad input stops the CLI with exit 2 and a message, before any session (docs/cli.md).

Each case comes from a fresh-eyes review that found a traceback (exit 1) or a
silent acceptance instead.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from recorder import PINNED_RELEASE

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example" / "corpus"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HW_KEY": "k"}
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def test_concurrency_zero_is_a_usage_error(tmp_path: Path) -> None:
    proc = _cli("run", str(EXAMPLE), "--concurrency", "0", "--batch-dir", str(tmp_path / "b"))
    assert proc.returncode == 2 and "at least 1" in proc.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("under", ["file", "/proc", "/sys"])
def test_a_batch_dir_that_cannot_be_one_is_one_line_and_exit_2(tmp_path: Path,
                                                                under: str) -> None:
    # Found as a traceback and exit 1: the path and why, one line, exit 2.
    if under == "file":
        (tmp_path / "f").write_text("x")
        batch = tmp_path / "f" / "b"
    else:
        batch = Path(under) / "headwater-b"
    proc = _cli("demo", "--batch-dir", str(batch))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(batch) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_tier_that_contradicts_the_plan_file_is_refused(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    out = _cli("plan", str(EXAMPLE), "--tier", "regression", "--format", "yaml")
    assert out.returncode == 0
    plan.write_text(out.stdout)
    proc = _cli("run", str(EXAMPLE), "--plan", str(plan), "--tier", "campaign",
                "--batch-dir", str(tmp_path / "b"))
    assert proc.returncode == 2 and "differs from the tier of --plan" in proc.stderr


def test_malformed_mcp_json_is_bad_input(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    shutil.copytree(EXAMPLE, corpus)
    (corpus / ".mcp.json").write_text("{bad")
    proc = _cli("plan", str(corpus))
    assert proc.returncode == 2 and ".mcp.json" in proc.stderr


def test_record_refuses_a_directory_that_is_not_a_batch(tmp_path: Path) -> None:
    d = tmp_path / "notabatch"
    d.mkdir()
    (d / "something.txt").write_text("x")
    proc = _cli("record", "--corpus", str(EXAMPLE), "--probe", "HW-PRB-0001", "--arm", "present",
                "--batch-dir", str(d), "--api-key-env", "HW_KEY")
    assert proc.returncode == 2 and "not a batch" in proc.stderr
    assert sorted(p.name for p in d.iterdir()) == ["something.txt"]  # as it was: no .lock


@pytest.mark.parametrize("arm", ["bogus", "no-hook"])
def test_record_refuses_an_arm_outside_the_tier(tmp_path: Path, arm: str) -> None:
    proc = _cli("record", "--corpus", str(EXAMPLE), "--probe", "HW-PRB-0001", "--arm", arm,
                "--batch-dir", str(tmp_path / "b"), "--api-key-env", "HW_KEY")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_batch_in_use_is_refused(tmp_path: Path) -> None:
    # Two runners on one ledger would both take the name r1: the second stops first.
    batch = tmp_path / "b"
    batch.mkdir()
    fd = os.open(batch / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = _cli("record", "--corpus", str(EXAMPLE), "--probe", "HW-PRB-0001",
                    "--arm", "present", "--batch-dir", str(batch), "--api-key-env", "HW_KEY")
    finally:
        os.close(fd)
    assert proc.returncode == 2 and "in use by another" in proc.stderr
    assert not (batch / "ledger.jsonl").exists()


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [("--session-timeout", "0", "more than zero"), ("--watchdog", "-3", "not a duration"),
     ("--post-result-grace", "soon", "not a duration"), ("--seed", "-5", "0 or more"),
     ("--retries", "-1", "0 or more"), ("--max-cost-cents", "0", "at least 1"),
     ("--est-session-cents", "-2", "at least 1"), ("--max-wall", "0h", "more than zero"),
     ("--concurrency", "two", "not a whole number"), ("--max-processes", "0", "at least 8"),
     ("--max-memory", "lots", "not a size"), ("--max-tmp", "0", "at least 1 byte"),
     ("--concurrency", "65", "at most 64"), ("--max-memory", "1", "least a session can "
                                               "start with, 64 MiB"),
     ("--max-writes", "1000", "1000 bytes, below the least a session can start with, 1 MiB"),
     ("--max-tmp", "512k", "1 MiB"), ("--max-processes", "1", "at least 8, the least"),
     ("--max-open-files", "19", "at least 20, the least")],
)
def test_numbers_are_checked_at_the_command_line(tmp_path: Path, flag: str, value: str,
                                                 said: str) -> None:
    proc = _cli("run", str(EXAMPLE), flag, value, "--batch-dir", str(tmp_path / "b"))
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(("text", "seconds"), [("90", 90.0), ("45m", 2700.0), ("8h", 28800.0),
                                               ("1.5s", 1.5)])
def test_durations_take_seconds_or_a_unit(text: str, seconds: float) -> None:
    from campaign.cli._types import duration_s

    assert duration_s(text) == seconds


@pytest.mark.parametrize(("text", "count"), [("1048576", 1048576), ("64k", 65536),
                                             ("512M", 512 * 1024**2), ("2GiB", 2 * 1024**3),
                                             ("3 mb", 3 * 1024**2)])
def test_sizes_take_bytes_or_a_binary_unit(text: str, count: int) -> None:
    from campaign.cli._types import size_bytes

    assert size_bytes(text) == count


def test_the_limits_given_are_the_sessions_limits() -> None:
    """``--max-*`` flags become `BatchOptions` (recorded in config.yaml) and the sandbox's
    `Limits`; the ones not given keep their defaults."""
    from campaign.cli._args import RunArgs, batch_options
    from campaign.cli._parser import parse_command
    from sandbox import DEFAULT_LIMITS

    args = parse_command(["run", str(EXAMPLE), "--max-processes", "64",
                          "--max-tmp", "64M", "--max-connections", "8"]).args
    assert isinstance(args, RunArgs)
    limits = batch_options(args, corpus=EXAMPLE, tier="campaign", harness_path=Path("/bin/true"),
                           model="m").session_limits()
    assert (limits.pids, limits.tmp_bytes, limits.connections) == (64, 64 * 1024**2, 8)
    assert (limits.memory_bytes, limits.write_bytes, limits.open_files) == (
        DEFAULT_LIMITS.memory_bytes, DEFAULT_LIMITS.write_bytes, DEFAULT_LIMITS.open_files)


def test_version_names_the_runner_and_the_pinned_harness() -> None:
    proc = _cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("headwater-campaign ")
    assert f"Claude Code {PINNED_RELEASE}" in proc.stdout


def test_a_read_only_command_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    done = subprocess.run(
        f"{sys.executable} -m campaign seal --corpus {EXAMPLE} --probe HW-PRB-0002 --arm present "
        f"--out {tmp_path / 'ws'} --explain | head -1; echo status=${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120,
        check=False)
    assert "status=0" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "unexpected error" not in done.stderr


def test_check_transcript_takes_several_files_and_answers_for_each(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    bad = tmp_path / "bad.md"
    bad.write_text("no headings at all\n")
    missing = tmp_path / "missing.md"

    from tests.recorder.oracle import write_transcript
    from tests.recorder.test_check import transcript

    write_transcript(good, transcript())

    proc = _cli("check-transcript", str(good), str(missing))
    assert proc.returncode == 4
    answers = [line.split(": ", 1)[1] for line in proc.stdout.splitlines()
               if line.startswith("/")]
    assert answers == ["well-formed", "could not verify"]

    assert _cli("check-transcript", str(good), str(bad), str(missing)).returncode == 1
    assert _cli("check-transcript", str(good)).returncode == 0


@pytest.mark.parametrize("command", ["plan", "run", "seal", "record"])
def test_a_missing_corpus_is_reported_with_the_commands_own_usage(command: str) -> None:
    extra = {"seal": ["--probe", "P", "--out", "/nonexistent/x"],
             "record": ["--probe", "P", "--arm", "present", "--batch-dir", "/nonexistent/b"],
             }.get(command, [])
    proc = _cli(command, *extra)
    assert proc.returncode == 2
    assert f"usage: headwater-campaign {command}" in proc.stderr
    assert "the corpus is required" in proc.stderr


def test_plan_names_files_under_the_shelf_that_are_not_probes(tmp_path: Path) -> None:
    # A probe moved into a folder of the shelf, or saved as .txt, dropped out of the plan
    # unsaid.
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, corpus)
    (corpus / "docs" / "probes" / "sub").mkdir()
    probe = next((corpus / "docs" / "probes").glob("*.md"))
    moved = probe.with_name("HW-PRB-0099.md")
    (corpus / "docs" / "probes" / "sub" / moved.name).write_text(
        probe.read_text().replace(probe.stem, moved.stem))
    (corpus / "docs" / "probes" / "draft.txt").write_text("## Task\n\nnot a probe\n")
    proc = _cli("plan", str(corpus))
    assert proc.returncode == 0, proc.stderr
    assert (f"note: docs/probes/sub/{moved.name} is in a folder of the shelf, so it is not a "
            "probe (probes are docs/probes/*.md)") in proc.stderr
    assert "note: docs/probes/draft.txt is on the shelf but not a .md file" in proc.stderr
    assert "note: docs/probes/" + probe.name not in proc.stderr  # a probe is not noted


def test_plan_names_symlinks_and_other_entries_that_are_not_regular_files(
        tmp_path: Path) -> None:
    # Only regular files are sealed: a symlink or a named pipe drops out of every workspace,
    # and plan says so by name, with the symlink's target and the other entry's kind.
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, corpus)
    (corpus / "docs" / "guide.md").symlink_to("/etc/hostname")
    os.mkfifo(corpus / "docs" / "pipe")
    proc = _cli("plan", str(corpus))
    assert proc.returncode == 0, proc.stderr
    assert "note: docs/guide.md is a symlink to /etc/hostname: not itself part" in proc.stderr
    assert "note: docs/pipe is a named pipe: not itself part of the tree" in proc.stderr


def test_a_corpus_with_many_irregular_entries_is_noted_within_a_bound(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, corpus)
    for i in range(25):
        (corpus / f"link{i:02}").symlink_to("nowhere")
    proc = _cli("plan", str(corpus))
    notes = [line for line in proc.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 21 and notes[-1] == (
        "note: and 5 more entries that are not regular files like these")


def test_a_symlink_target_with_a_newline_cannot_forge_a_note(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, corpus)
    (corpus / "docs" / "odd").symlink_to("x\nnote: forged\x1b]0;t\x07")
    proc = _cli("plan", str(corpus))
    assert "note: docs/odd is a symlink to x\\nnote: forged\\x1b]0;t\\x07: not" in proc.stderr
    assert "\x1b" not in proc.stderr and "\nnote: forged" not in proc.stderr
