"""Replays under the real sandbox through the pinned CLI; the captures' files name no host path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from census import (
    INIT_KIND,
    Replay,
    load_situations,
    replay_all,
    settle_host,
    take_census,
    unsignalled,
    write_captures,
)
from recorder import PINNED_RELEASE

SITUATIONS = Path(__file__).resolve().parent.parent / "fixtures" / "census" / "situations"


def _replay(name: str = "s1", signal_sent: str | None = None, error: str | None = None) -> Replay:
    return Replay(name=name, argv=("/opt/harness/claude", "-p", "Hi"),
                  sandbox_argv=("<cgroup>/cgroup.procs", "<harness>"), network="confined",
                  stdout=b'{"type":"result"}\n', stdout_cut=False, stderr_tail="",
                  returncode=0, signal_sent=signal_sent, timed_out=False, duration_s=1.0,
                  unmatched=0, error=error)


def test_a_situation_that_ended_before_its_signal_is_named() -> None:
    situations = load_situations(SITUATIONS, ["k2_direct_sigterm", "k_sigkill", "c_bash",
                                              "k_sigterm"])
    replays = [_replay("k2_direct_sigterm"), _replay("k_sigkill", "SIGKILL after 10 s"),
               _replay("c_bash"), _replay("k_sigterm", error="SpawnFailed: no bwrap")]
    assert unsignalled(situations, replays) == ["k2_direct_sigterm"]


def test_the_captures_keep_the_stream_as_printed_and_how_it_ran(tmp_path: Path) -> None:
    result = _replay()
    write_captures([result], tmp_path)
    assert (tmp_path / "s1.jsonl").read_bytes() == b'{"type":"result"}\n'
    meta = json.loads((tmp_path / "s1.meta.json").read_text())
    assert meta["argv"] == ["/opt/harness/claude", "-p", "Hi"]
    assert (meta["exit_status"], meta["signal"], meta["network"]) == (0, None, "confined")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_situations_replayed_under_bwrap_print_the_kinds_of_their_captures(
        bwrap: str, harness: Path) -> None:
    """a_read_answer and c_bash through the pinned CLI under the real sandbox: the init line,
    assistant and user lines and results, and c_bash's background command's second result
    (as its captures on 2.1.197 and 2.1.332 show)."""
    from sandbox import run_sync

    situations = load_situations(SITUATIONS, ["a_read_answer", "c_bash"])
    host = settle_host(bwrap=bwrap)
    replays = run_sync(lambda: replay_all(situations, harness=harness, host=host))
    assert [r.ran for r in replays] == [True, True], [r.stderr_tail for r in replays]
    census = take_census(PINNED_RELEASE, [(r.name, r.stdout) for r in replays])
    kinds = census["kinds"]
    assert {INIT_KIND, "assistant", "user", "result"} <= set(kinds)
    assert kinds[INIT_KIND]["keys"]["claude_code_version"]["situations"] == "all"
    assert kinds["result"]["subtypes"]["success"]["lines"] == 3  # c_bash prints two
    init = next(json.loads(line) for line in replays[0].stdout.splitlines()
                if b'"subtype":"init"' in line)
    assert init["cwd"] == "/workspace"
    assert init["claude_code_version"] == PINNED_RELEASE
    for result in replays:
        assert not any(str(Path("/tmp")) + "/headwater-census" in arg
                       for arg in result.sandbox_argv)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_situation_s_mounts_are_bound_read_only_where_its_arguments_name_them(
        bwrap: str, harness: Path) -> None:
    """g3_mcp_config_flag's MCP server is its fixture bound at /opt/mcp/echo.py: the init
    line names it connected, as the capture does."""
    from sandbox import run_sync

    situations = load_situations(SITUATIONS, ["g3_mcp_config_flag"])
    host = settle_host(bwrap=bwrap)
    replays = run_sync(lambda: replay_all(situations, harness=harness, host=host))
    init = next(json.loads(line) for line in replays[0].stdout.splitlines()
                if b'"subtype":"init"' in line)
    # 2.1.332 adds a "source" to each server; the name and status are the capture's
    assert [(s["name"], s["status"]) for s in init["mcp_servers"]] == [("echo", "connected")]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_pinned_cli_meets_a_cut_stream_and_recovers_from_it(
        bwrap: str, harness: Path) -> None:
    """f_cut_once under the real sandbox: the scripted provider resets the first answer's
    connection after three events; the CLI meets it as a broken stream and recovers (2.1.197
    by a silent non-streaming retry, 2.1.332 after an api_retry line), so the session ends
    with the script's text and no error."""
    from sandbox import run_sync

    situations = load_situations(SITUATIONS, ["f_cut_once"])
    host = settle_host(bwrap=bwrap)
    replays = run_sync(lambda: replay_all(situations, harness=harness, host=host))
    assert replays[0].ran, replays[0].stderr_tail
    lines = [json.loads(line) for line in replays[0].stdout.splitlines()]
    assert replays[0].returncode == 0, replays[0].stderr_tail
    assert lines[-1]["type"] == "result"
    assert lines[-1]["is_error"] is False
    assert lines[-1]["result"] == "Recovered fine."
    assert {line.get("subtype") for line in lines if line["type"] == "system"} <= {
        "init", "api_retry"}
    # The cut was met: a streamed retry says so in an api_retry line; a silent non-streaming
    # retry leaves the answer's line with a real stop_reason, which a streamed line never has.
    retried = any(line.get("subtype") == "api_retry" for line in lines)
    fell_back = any(line["type"] == "assistant" and line["message"].get("stop_reason")
                    for line in lines)
    assert retried or fell_back


def test_a_replay_through_another_release_writes_no_census(
        bwrap: str, harness: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The pinned CLI replayed under another release's name (the help's own mistake to make:
    ``--harness`` of the wrong install) exits 1 and writes nothing: the census it took is not
    of that release, and its file would replace that release's committed census."""
    from census import main

    other = "2.1.197"  # a covered release that is not the pin (the pin is 2.1.332)
    assert other != str(PINNED_RELEASE)
    out = tmp_path / f"{other}.json"
    status = main([other, "--harness", str(harness), "--bwrap", bwrap,
                   "--only", "a_read_answer", "--out", str(out)])
    assert status == 1
    assert f"the harness is not {other}" in capsys.readouterr().out
    assert not out.exists()


def test_ctrl_c_during_the_replays_exits_130_writing_nothing_and_leaving_nothing(
        bwrap: str, harness: Path, tmp_path: Path) -> None:
    """SIGINT (a terminal's Ctrl-C) while a situation waits for its stop signal: the command
    says it was interrupted, exits 130 without a traceback, writes no census, and leaves no
    scratch directory of its own."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "census.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-m", "census", PINNED_RELEASE, "--harness", str(harness),
         "--bwrap", bwrap, "--only", "k_sigkill", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(scratch)}, cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 30
    while not any(p.name.startswith("headwater-census-") for p in scratch.iterdir()):
        assert time.monotonic() < deadline and child.poll() is None, "the replay never started"
        time.sleep(0.1)
    time.sleep(2)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "census: interrupted" in err and "Traceback" not in err
    assert not out.exists()
    assert not any(p.name.startswith("headwater-census-") for p in scratch.iterdir())
