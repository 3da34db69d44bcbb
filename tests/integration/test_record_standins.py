"""Stream faults, each run as a kind through `record`: the real driver under real bwrap.

Every test writes a stand-in harness (a single self-contained file run by
/usr/bin/python3 or /bin/sh, its stream embedded: RC-02), runs
``headwater-campaign record`` on a tiny synthetic corpus with ``--harness`` set
to it, and checks what docs/cli.md says a user sees: the exit status (0
recorded, 12 refused, 1 any other state), the ledger's final state, the
transcript's Sessions row, that only recorded sessions become events, and that
nothing observed is lost (non-recorded sessions keep their calls in the ledger).
Stand-ins ignore the provider, so ``--provider-url http://127.0.0.1:9``.

Expected values come from the rules and the streams written here: a Read of a
sealed file has the digest of the corpus file's bytes (the seal copies a file
that does not name the probe unchanged), any other call the digest of its
result text, the answer RC-13 applied by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from recorder._driver import POST_RESULT_GRACE_S
from sandbox._config import sweep_config_root
from tests import contract_check
from tests.campaign.corpora import doc, probe_doc, write_files
from tests.integration import kit
from tests.standin import write_standin

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
BUG_INPUTS = REPO / "tests" / "fixtures" / "bug_inputs"
PROBE = "HW-PRB-0001"
NOTES = "# notes\nregister: HW-DR-0051 (retired), HW-DR-0052 (current)\n"
MODEL = "claude-test-model"


def sha(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


# --- a corpus, streams, and the record command ------------------------------------------------

def make_corpus(root: Path, *, checker: str | None = None,
                extra: dict[str, str | bytes] | None = None) -> Path:
    config = "tiers:\n  campaign: {arms: [present], repetitions: 1}\n"
    config += f"tools: [Read, Bash, Write]\nmodel: {MODEL}\n"
    if checker:
        config += f"checker: {json.dumps(checker)}\n"
    return write_files(root, {
        ".headwater/probe.yml": config,
        "docs/probes/p1.md": probe_doc(PROBE, "Status of a decision", answers=["HW-DR-0052"],
                                       examines=["docs/notes.md"],
                                       task="Which decision is current? End with its id alone "
                                            "on the last line.\n"),
        "docs/notes.md": doc("HW-NOTE-0001", NOTES),
        "docs/decisions/HW-DR-0052.md": doc("HW-DR-0052", "# Decision 52\n"),
        ".mcp.json": json.dumps({"mcpServers": {"docs": {"command": "/bin/true"}}}),
        **(extra or {}),
    })


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


STANDIN_WORKSPACE = "/ws"
"""The batch's workspace path these streams were written for: their init lines' cwd."""


def init(**changes: Any) -> bytes:
    body: dict[str, Any] = {
        "type": "system", "subtype": "init", "cwd": STANDIN_WORKSPACE,
        "tools": ["Read", "Bash", "Task"],
        "mcp_servers": [], "model": MODEL, "permissionMode": "dontAsk", "skills": [],
        "plugins": [], "memory_paths": {}, "claude_code_version": "2.1.197"}
    body.update(changes)
    return line(body)


def assistant(block: dict[str, Any], *, msg: str, parent: str | None = None) -> bytes:
    return line({"type": "assistant", "parent_tool_use_id": parent,
                 "message": {"id": msg, "model": MODEL, "content": [block]}})


def tool_use(tid: str, name: str, tool_input: dict[str, Any], *, msg: str) -> bytes:
    return assistant({"type": "tool_use", "id": tid, "name": name, "input": tool_input}, msg=msg)


def tool_result(tid: str, text: str) -> bytes:
    return line({"type": "user", "parent_tool_use_id": None, "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                     "content": text}]}})


def say(text: str, *, msg: str) -> bytes:
    return assistant({"type": "text", "text": text}, msg=msg)


def result(*, cost: str = "0.0123", is_error: bool = False, subtype: str = "success",
           text: str = "") -> bytes:
    raw = json.dumps({"type": "result", "subtype": subtype, "is_error": is_error,
                      "api_error_status": None, "num_turns": 2, "result": text,
                      "total_cost_usd": "COST"})
    return raw.replace('"COST"', cost).encode() + b"\n"


READ = tool_use("t1", "Read", {"file_path": "docs/notes.md"}, msg="m1") + tool_result("t1", NOTES)
ANSWERED = say("Found it.\nHW-DR-0052", msg="m2")
SESSION = init() + READ + ANSWERED + result()
"""A complete, well-formed session: one Read, the answer, cost $0.0123."""


def bug_input(name: str) -> bytes:
    """A bug input moved to this corpus: /ws/notes.md -> docs/notes.md, no memory paths."""
    data = (BUG_INPUTS / f"{name}.jsonl").read_bytes()
    return (data.replace(b"/ws/notes.md", b"docs/notes.md")
            .replace(b'{"auto":"/cfg/projects/-ws/memory/"}', b"{}"))


def record(corpus: Path, batch: Path, harness: Path, *args: str,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HW_STANDIN_KEY": "sk-standin-not-a-secret"}
    return subprocess.run(
        [sys.executable, "-m", "campaign", "record", "--corpus", str(corpus), "--probe", PROBE,
         "--arm", "present", "--batch-dir", str(batch), "--harness", str(harness),
         "--provider-url", "http://127.0.0.1:9", "--api-key-env", "HW_STANDIN_KEY",
         "--workspace-path", STANDIN_WORKSPACE, *args],
        capture_output=True, text=True, env=env, timeout=timeout, check=False)


def finals(batch: Path) -> list[dict[str, Any]]:
    return kit.final_list(batch)


def transcript(batch: Path) -> tuple[str, dict[str, Any], list[dict[str, Any]], list[list[str]]]:
    text = (batch / "transcripts" / "present.md").read_text()
    assert contract_check.violations(text) == []
    identity, events, rows = contract_check.parse(text)
    return text, identity, events, rows


def check_session(run: subprocess.CompletedProcess[str], batch: Path, *, state: str,
                  status: int) -> dict[str, Any]:
    """The exit status, the ledger's final state, the Sessions row, events only if recorded."""
    assert run.returncode == status, run.stdout + run.stderr
    final = finals(batch)[-1]
    assert final["state"] == state, final["reason"]
    _, _, events, rows = transcript(batch)
    assert rows[-1][:3] == [PROBE, final["session"], state]
    recorded = [r for r in finals(batch) if r["state"] == "recorded"]
    assert [(e["probe"], e["session"]) for e in events] == [
        (r["probe"], r["session"]) for r in recorded]
    if state != "recorded":
        assert "event" not in final
    return final


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return make_corpus(tmp_path / "corpus")


@pytest.fixture
def sealed_notes(corpus: Path) -> str:
    """RC-10: a Read of docs/notes.md carries the digest of its bytes as sealed."""
    return sha((corpus / "docs" / "notes.md").read_bytes())


# --- the faults --------------------------------------------------------------------------------

def test_a_well_formed_session_is_recorded(tmp_path: Path, corpus: Path, sealed_notes: str,
                                           bwrap: str) -> None:
    harness = write_standin(tmp_path / "claude", stdout=SESSION)
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="recorded", status=0)
    assert final["event"] == {
        "probe": PROBE, "session": "r1",
        "calls": [{"tool": "Read", "argument": "docs/notes.md", "result": sealed_notes}],
        "produced": [], "answer": "HW-DR-0052"}


def test_no_result_line_then_a_recorded_session_costs_what_its_gateway_priced(
        tmp_path: Path, corpus: Path, sealed_notes: str, bwrap: str) -> None:
    """BC-01: no result line -> no-result, exit 1, its Read kept in the ledger, no event; the
    harness's cost unknown. RC-14 with the gateway: the cost is what the provider's usage
    prices, and these stand-ins sent the provider nothing (no request passed their gateways),
    so cost_cents = 0 exactly, no lower bound even for r1; the harness's own $0.0123 of r2 is
    kept beside it and the prose says how far the two differ. served_version is r2's model
    (no row of the gateway names one: the stream's)."""
    batch = tmp_path / "b"
    harness = write_standin(tmp_path / "claude", stdout=bug_input("BC-01"))
    final = check_session(record(corpus, batch, harness), batch, state="no-result", status=1)
    assert final["calls"] == [{"tool": "Read", "argument": "docs/notes.md",
                               "result": sealed_notes}]
    assert (final.get("cost_usd"), final["cost_known"], final["retryable"]) == (None, False, True)
    write_standin(harness, stdout=SESSION)
    check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    text, identity, events, rows = transcript(batch)
    assert [row[:3] for row in rows] == [[PROBE, "r1", "no-result"], [PROBE, "r2", "recorded"]]
    assert [e["session"] for e in events] == ["r2"]
    assert identity["cost_cents"] == 0
    assert identity["served_version"] == MODEL
    assert "lower bound" not in text
    assert "the harness's own total_cost_usd sums to $0.0123" in text


def test_a_harness_silent_on_stdout_is_told_by_its_stderr(tmp_path: Path, corpus: Path,
                                                          bwrap: str) -> None:
    """Nothing on stdout: the reason quotes the last stderr line, so a sandbox that never
    started (bwrap refused a namespace) reads apart from a harness that said nothing."""
    harness = write_standin(tmp_path / "claude", stdout=b"", exit_code=1,
                            stderr=b"starting\nbwrap: pretend: No space left on device\n")
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="refused-init", status=12)
    assert final["reason"].endswith(
        '; nothing was printed on stdout, and stderr ends "bwrap: pretend: No space left on '
        'device"'), final["reason"]
    again = subprocess.run([sys.executable, "-m", "campaign", "retranscribe", str(tmp_path / "b")],
                           capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0, again.stderr
    rederived = [json.loads(x) for x in (tmp_path / "b" / "ledger.jsonl").read_text().splitlines()
                 if '"rederived"' in x]
    assert [r["reason"] for r in rederived] == [final["reason"]]  # stderr is not in the stream


def test_last_line_cut_without_newline_is_truncated(tmp_path: Path, corpus: Path,
                                                    sealed_notes: str, bwrap: str) -> None:
    """The result line cut mid-way, no newline: truncated (not a line), exit 1, calls kept."""
    cut = SESSION[: SESSION.rindex(b'"total_cost_usd"')]
    harness = write_standin(tmp_path / "claude", stdout=cut)
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="truncated", status=1)
    assert final["calls"] == [{"tool": "Read", "argument": "docs/notes.md",
                               "result": sealed_notes}]
    assert final["cost_known"] is False


def test_stream_stops_while_the_process_lives_is_timed_out(tmp_path: Path, corpus: Path,
                                                           bwrap: str) -> None:
    """No stdout for --watchdog seconds while the harness lives: timed-out, exit 1, the
    harness stopped (the run ends long before its 60 s sleep), the call seen so far kept."""
    harness = write_standin(tmp_path / "claude", stdout=init() + READ, sleep_s=60)
    started = time.monotonic()
    run = record(corpus, tmp_path / "b", harness, "--watchdog", "2")
    assert time.monotonic() - started < 40
    final = check_session(run, tmp_path / "b", state="timed-out", status=1)
    assert "watchdog" in final["reason"]
    assert [c["tool"] for c in final["calls"]] == ["Read"]


GRACE_S = 30.0
"""docs/batch.md "Session states": the post-result grace, ``--post-result-grace S``, 30 s."""
WATCHDOG_S = 600.0
"""docs/cli.md "Defaults": the no-output watchdog, 600 s."""


def test_the_drivers_default_grace_is_the_designs() -> None:
    assert POST_RESULT_GRACE_S == GRACE_S


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_harness_that_hangs_after_its_result_is_recorded_after_the_grace(
        tmp_path: Path, corpus: Path, sealed_notes: str, bwrap: str) -> None:
    """A valid stream with its result line, then the stand-in sleeps for an hour: the runner
    ends it after the post-result grace (not the watchdog) and records it from what it
    printed; nothing of it is left running."""
    harness = write_standin(tmp_path / "claude", stdout=SESSION, sleep_s=3600)
    started = time.monotonic()
    run = record(corpus, tmp_path / "b", harness, timeout=280)
    elapsed = time.monotonic() - started
    final = check_session(run, tmp_path / "b", state="recorded", status=0)
    assert final["end"] == "post-result-grace"
    assert "post-result grace" in final["reason"]
    assert final["event"]["answer"] == "HW-DR-0052"
    assert final["event"]["calls"] == [{"tool": "Read", "argument": "docs/notes.md",
                                        "result": sealed_notes}]
    assert final["duration_s"] >= GRACE_S and elapsed < WATCHDOG_S / 4
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert str(harness) not in ps.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_second_result_during_the_grace_restarts_it_and_decides(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """A first result, then 10 s later (inside the grace) a new turn and a second result, then
    the stand-in hangs: the grace restarts at the second result, and the session is decided by
    the last result (its cost, its final message)."""
    first = init() + READ + say("first", msg="m2") + result(cost="0.004", text="first")
    second = say("Later.\nHW-DR-0052", msg="m3") + result(cost="0.0051")
    harness = write_standin(tmp_path / "claude", stdout=first, later=[(10.0, second)],
                            sleep_s=3600)  # fmt: skip
    run = record(corpus, tmp_path / "b", harness, timeout=280)
    final = check_session(run, tmp_path / "b", state="recorded", status=0)
    assert final["end"] == "post-result-grace"
    assert (final["cost_usd"], final["event"]["answer"]) == ("0.0051", "HW-DR-0052")
    assert 10.0 + GRACE_S <= final["duration_s"] < WATCHDOG_S / 4


def test_harness_exits_while_a_descendant_holds_stdout(tmp_path: Path, corpus: Path,
                                                       bwrap: str) -> None:
    """The stand-in exits after its stream while a forked child keeps stdout open for 60 s:
    the session is recorded from what was written, promptly, and nothing is left running
    (bwrap's pid namespace ends with the harness)."""
    harness = write_standin(tmp_path / "claude", stdout=SESSION, hold_stdout_s=60)
    started = time.monotonic()
    run = record(corpus, tmp_path / "b", harness)
    assert time.monotonic() - started < 30
    check_session(run, tmp_path / "b", state="recorded", status=0)
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert str(harness) not in ps.stdout


def test_non_json_lines_are_counted_kept_warned_and_in_the_prose(tmp_path: Path, corpus: Path,
                                                                 bwrap: str) -> None:
    """BC-05: two non-JSON lines: recorded (never a refusal), the answer unaffected, the ledger
    counts them and keeps their text, `record` warns, and the prose states the count."""
    harness = write_standin(tmp_path / "claude", stdout=bug_input("BC-05"))
    run = record(corpus, tmp_path / "b", harness)
    final = check_session(run, tmp_path / "b", state="recorded", status=0)
    assert final["anomalies"] == 2
    assert [(a["line"], a["excerpt"]) for a in final["anomaly_lines"]] == [
        (1, "Now using node v20.11.1 (npm v10.2.4)"),
        (4, "[log_7f3a21] sending request {method: 'post', url: "
            "'https://api.example.invalid/v1/messages'}")]
    assert final["event"]["answer"] == "HW-DR-0052"
    assert "warning: 2 stdout line(s) were not JSON" in run.stderr
    assert "Non-JSON stdout lines (anomalies, kept aside, never merged): 2." in transcript(
        tmp_path / "b")[0]


def test_lines_of_several_megabytes(tmp_path: Path, corpus: Path, sealed_notes: str,
                                    bwrap: str) -> None:
    """BC-03's 1.4 MB image line and a 6 MB Bash result line are read whole: their digests
    taken, the lines after them read, the session recorded."""
    big = "x" * (6 << 20)
    image = (BUG_INPUTS / "BC-03.jsonl").read_bytes().split(b"\n")[2] + b"\n"  # its tool_result
    stream = (init() + tool_use("toolu_1", "Read", {"file_path": "docs/notes.md"}, msg="m1")
              + image + tool_use("t2", "Bash", {"command": "yes x"}, msg="m2")
              + tool_result("t2", big) + ANSWERED + result())
    harness = write_standin(tmp_path / "claude", stdout=stream)
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="recorded", status=0)
    assert final["event"]["calls"] == [
        {"tool": "Read", "argument": "docs/notes.md", "result": sealed_notes},
        {"tool": "Bash", "argument": "yes x", "result": sha(big)}]
    assert final["event"]["answer"] == "HW-DR-0052"


def test_line_over_the_cap_is_line_too_long(tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """A stdout line over the reader's 64 MiB cap: line-too-long, exit 1, the reason names the
    line number and its size; what came before it is kept."""
    harness = tmp_path / "claude"
    prefix = (init() + READ).decode()
    harness.write_text("#!/bin/sh\ncat <<'EOF'\n" + prefix + "EOF\n"
                       "head -c 70000000 /dev/zero | tr '\\0' 'a'\necho\n")
    harness.chmod(0o755)
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="line-too-long", status=1)
    assert "stdout line 4 is " in final["reason"] and "over the line cap of 67108864 bytes" in (
        final["reason"])
    assert [c["tool"] for c in final["calls"]] == ["Read"]


def test_u2028_and_multibyte_characters_split_across_reads(tmp_path: Path, corpus: Path,
                                                           bwrap: str) -> None:
    """U+2028 raw inside JSON strings (legal JSON, not a line end for the reader or RC-13) and
    3-byte characters whose bytes are cut between the stand-in's writes: the lines are whole,
    the Bash command kept verbatim, the answer read off the last "\\n" line."""
    command = "echo '\u20ac\u2028\u2014'"
    text = "R\u00e9ponse v\u00e9rifi\u00e9e\u2028" + "\u20ac" * 3000 + "\nHW-DR-0052"
    for pad in range(9):  # make both of the stand-in's cut points fall inside a character
        stream = (init(pad="x" * pad) + tool_use("t2", "Bash", {"command": command},
                                                         msg="m1")
                  + tool_result("t2", "\u20ac\u2028\u2014") + say(text, msg="m2") + result())
        step = -(-len(stream) // 3)
        if all(0x80 <= stream[cut] < 0xC0 for cut in (step, 2 * step)):
            break
    else:
        pytest.fail("no padding puts both cuts inside a character")
    assert b"\xe2\x80\xa8" in stream  # raw U+2028, not escaped
    harness = write_standin(tmp_path / "claude", stdout=stream)
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="recorded", status=0)
    assert final["anomalies"] == 0
    assert final["event"]["calls"] == [
        {"tool": "Bash", "argument": command, "result": sha("\u20ac\u2028\u2014")}]
    assert final["event"]["answer"] == "HW-DR-0052"


def test_hook_lines_before_init_are_allowed(tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """BC-07: SessionStart hook events before the init line: recorded."""
    harness = write_standin(tmp_path / "claude", stdout=bug_input("BC-07"))
    check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                  state="recorded", status=0)


def test_an_assistant_line_before_init_refuses(tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """any JSON line other than a hook event before the init line refuses (exit 12);
    the refusal names the rule, the line and the type."""
    harness = write_standin(tmp_path / "claude", stdout=ANSWERED + SESSION)
    run = record(corpus, tmp_path / "b", harness)
    final = check_session(run, tmp_path / "b", state="refused-init", status=12)
    assert final["reason"].startswith("line 1 before the init line: type = 'assistant'")
    assert "line 1 before the init line" in run.stdout


def test_several_init_and_result_lines_last_result_wins(tmp_path: Path, corpus: Path,
                                                        bwrap: str) -> None:
    """FACTS 0 (c_bash): result, a second init, a new turn, a second result. Every init is
    checked; the last result decides the state, the cost and the final message."""
    stream = (init() + READ + say("first", msg="m2") + result(cost="0.004", text="first")
              + init() + say("Later.\nHW-DR-0052", msg="m3") + result(cost="0.0051"))
    harness = write_standin(tmp_path / "claude", stdout=stream)
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state="recorded", status=0)
    assert (final["cost_usd"], final["event"]["answer"]) == ("0.0051", "HW-DR-0052")
    second_refused = init() + READ + result(cost="0.004") + init(permissionMode="plan") + result()
    write_standin(harness, stdout=second_refused)
    run = record(corpus, tmp_path / "b", harness)
    final = check_session(run, tmp_path / "b", state="refused-init", status=12)
    assert "permissionMode = 'plan': " in final["reason"]


@pytest.mark.parametrize(("name", "state", "status", "retryable"),
                         [("BC-10a", "harness-error", 1, True),
                          ("BC-10b", "harness-error", 1, False)])
def test_is_error_wins_over_subtype_and_exit_code(tmp_path: Path, corpus: Path, bwrap: str,
                                                  name: str, state: str, status: int,
                                                  retryable: bool) -> None:
    """BC-10a/b: is_error true under subtype success (rate limit text: retryable), and
    error_during_execution with exit 0: harness-error, exit 1, the realized cost recorded."""
    harness = write_standin(tmp_path / "claude", stdout=bug_input(name), exit_code=0)
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state=state, status=status)
    assert final["retryable"] is retryable
    assert final["cost_known"] is True
    assert Decimal(final["cost_usd"]) == {"BC-10a": Decimal(0), "BC-10b": Decimal("0.0071")}[name]


BC08 = [json.loads(x) for x in (BUG_INPUTS / "BC-08_variants.jsonl").read_text().splitlines()
        if x.strip()]
BC08_EXPECTED = json.loads((BUG_INPUTS / "BC-08_expected.json").read_text())


@pytest.mark.parametrize("variant", BC08, ids=[v["_variant"] for v in BC08])
def test_init_shape_drift(tmp_path: Path, corpus: Path, bwrap: str,
                          variant: dict[str, Any]) -> None:
    """BC-08: each drifted init line heads a complete session; its verdict decides: refuse ->
    refused-init (12) naming the drifted field, accept -> recorded (0), declared server failed
    -> env-fault (1). The corpus's .mcp.json declares only `docs`. Memory paths under the
    fixture's /cfg were inside its config dir; the stand-in cannot know the session's, so they
    are dropped (the verdict rests on the other fields)."""
    verdict = BC08_EXPECTED[variant["_variant"]]["verdict"]
    state, status = {"refuse": ("refused-init", 12), "accept": ("recorded", 0),
                     "accept_with_env_fault": ("env-fault", 1)}[verdict]
    if isinstance(variant.get("memory_paths"), dict):
        variant = {**variant, "memory_paths": {
            k: v for k, v in variant["memory_paths"].items() if not v.startswith("/cfg/")}}
    harness = write_standin(tmp_path / "claude", stdout=line(variant) + READ + ANSWERED + result())
    final = check_session(record(corpus, tmp_path / "b", harness), tmp_path / "b",
                          state=state, status=status)
    if state == "refused-init":
        assert final["reason"].startswith("" + BC08_FIELD[variant["_variant"]])


BC08_FIELD = {"b_memory_team_outside_cfg": "memory_paths.team = '/home/hostuser/team-mem/'",
              "c_memory_paths_unknown_shape": "memory_paths = '/cfg/projects/-ws/memory/'",
              "d_plugins_object_nonbuiltin": "plugins[0].path = '/cfg/plugins/lsp'",
              "e_plugins_string_list": "plugins[0] = 'lsp@some-marketplace'",
              "f_permission_mode_new_value": "permissionMode = 'auto'",
              "g_mcp_undeclared_needs_auth": "mcp_servers[1].name = 'search'",
              "i_skills_key_absent": "skills is missing",
              "k_additional_directory": "additional_directories[0] = '/home/hostuser/src'",
              "l_messaging_socket_outside_tmp": "messaging_socket_path = '/run/user/1000/x.sock'",
              "m_sandbox_enabled": "sandbox_enabled = True",
              "n_new_release_without_a_widening_field": "sandbox_enabled is missing"}
"""Per refused variant: the field and value the refusal must name (RC-07)."""

WIDENING_CLEAN = {"claude_code_version": "2.1.332", "additional_directories": [],
                  "sandbox_enabled": False, "capabilities": ["interrupt_receipt_v1"],
                  "original_cwd": STANDIN_WORKSPACE,
                  "messaging_socket_path": "/tmp/cc-socks/1.sock"}
"""The widening fields of a 2.1.332 init line in a confined session, granting nothing."""


def test_an_init_line_granting_an_extra_directory_is_refused(tmp_path: Path, corpus: Path,
                                                            bwrap: str) -> None:
    """RC-07: a complete session whose init line grants a directory beyond the workspace is
    refused-init (12), naming the directory, where it was recorded (0) while unknown keys
    were ignored; the same line granting none is recorded."""
    granted = init(**{**WIDENING_CLEAN, "additional_directories": ["/home/hostuser/src"]})
    harness = write_standin(tmp_path / "claude", stdout=granted + READ + ANSWERED + result())
    run = record(corpus, tmp_path / "b", harness)
    final = check_session(run, tmp_path / "b", state="refused-init", status=12)
    assert final["reason"].startswith(
        "additional_directories[0] = '/home/hostuser/src': a directory beyond the workspace: "
        "the driver grants none (docs/glossary.md: RC-07)"), final["reason"]
    write_standin(harness, stdout=init(**WIDENING_CLEAN) + READ + ANSWERED + result())
    check_session(record(corpus, tmp_path / "c", harness), tmp_path / "c",
                  state="recorded", status=0)


UNKNOWN = {"betas": [], "scratchpad_path": "/tmp/pad", "bad\nkey\x1b[2J": 1}
"""Init keys no decision names: two the 2.1.332 binary can print, one a forged key that would
start a line and clear a terminal if written raw."""


def test_an_unknown_init_key_is_listed_in_the_ledger_the_prose_and_show(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """RC-07: keys the recorder has not decided are no refusal (recorded, 0) and are listed:
    in the final record as printed, in the prose as quoted literals with the number of
    sessions that printed each, and by show, escaped."""
    batch = tmp_path / "b"
    harness = write_standin(tmp_path / "claude",
                            stdout=init(**WIDENING_CLEAN, **UNKNOWN) + READ + ANSWERED + result())
    final = check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    assert final["unknown_init_keys"] == ["betas", "scratchpad_path", "bad\nkey\x1b[2J"]
    write_standin(harness, stdout=init(betas=[]) + READ + ANSWERED + result())
    check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    assert finals(batch)[-1]["unknown_init_keys"] == ["betas"]
    write_standin(harness, stdout=SESSION)
    check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    assert "unknown_init_keys" not in finals(batch)[-1]  # none: the key is absent
    assert ('Init keys the recorder has not decided: "bad\\nkey\\u001b[2J" (1 session), '
            '"betas" (2 sessions), "scratchpad_path" (1 session). Listed, not refused: a '
            "release the census has not read prints them (docs/glossary.md: RC-07); "
            "docs/recorder.md says how each known key is decided.") in prose_lines(batch)
    shown = kit.cli("show", str(batch), "present", PROBE, "r1", env=kit.base_env())
    assert shown.returncode == 0, shown.stderr
    assert ("  init keys not decided (3): betas, scratchpad_path, bad\\nkey\\x1b[2J: "
            "the recorder has not decided them") in shown.stdout, shown.stdout
    assert "\x1b" not in shown.stdout


def test_stderr_flood_before_stdout(tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """BC-13: 256 KiB of stderr before any stdout (more than a pipe buffer): drained while
    stdout is read; the session completes; the last 64 KiB of stderr kept with the session.
    The stand-in is BC-13_fake_claude.sh with BC-01 embedded (it cannot cat a file beside it
    inside the sandbox)."""
    script = (BUG_INPUTS / "BC-13_fake_claude.sh").read_text()
    embedded = "cat <<'EOF'\n" + bug_input("BC-01").decode() + "EOF"
    harness = tmp_path / "claude"
    harness.write_text(script.replace('cat "$HERE/BC-01.jsonl"', embedded))
    harness.chmod(0o755)
    batch = tmp_path / "b"
    final = check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    assert final["event"]["answer"] == "HW-DR-0052"
    tail = next(batch.glob(f"sessions/present/{PROBE}/r1/stderr.tail")).read_bytes()
    # 262144 w's folded at 100: the last line holds 262144 % 100 = 44, with no newline.
    assert len(tail) == 64 * 1024 and tail.endswith(b"\n[mcp:docs] warn: " + b"w" * 44)


# --- findings (RC-11): a configured checker, run confined over the workspace -------------------

CHECKER = r'''#!/usr/bin/python3
import json, os, stat, sys
ws = sys.argv[-1]
for root, _, names in os.walk(ws):
    for name in names:
        full = os.path.join(root, name)
        path = os.path.relpath(full, ws)
        try:  # regular files only, as docs/recorder.md asks: no symlink, FIFO or socket
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, errors="replace") as f:
            if stat.S_ISREG(os.fstat(fd).st_mode) and "HW-DR-0051" in f.read():
                print(json.dumps({"path": path, "rule": "mentions-retired"}))
try:
    open(os.path.join(ws, "checker-was-here"), "w")
    print(json.dumps({"path": "docs/notes.md", "rule": "workspace-writable"}))
except OSError:
    pass
for host in sys.argv[1:-1]:
    if os.path.exists(host):
        print(json.dumps({"path": "docs/notes.md", "rule": "sees-host:" + host}))
'''


def record_report_with_checker(tmp_path: Path, checker: str, checker_text: str,
                               standin: str) -> tuple[subprocess.CompletedProcess[str],
                                                      dict[str, Any], dict[str, Any]]:
    """Record one session of ``standin`` (its ``STREAM`` the Read, a Write of report.md and
    the answer) on a corpus whose checker is ``checker`` (a corpus path) with
    ``checker_text``: the run, the final record and its produced artifacts by path."""
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus", checker=checker, extra={checker: checker_text})
    (corpus / checker).chmod(0o755)
    stream = (init() + READ
              + tool_use("w", "Write", {"file_path": "report.md", "content": "x"}, msg="m3")
              + tool_result("w", "File created") + ANSWERED + result())  # fmt: skip
    harness = tmp_path / "claude"
    harness.write_text(standin.replace("STREAM", repr(stream)))
    harness.chmod(0o755)
    try:
        run = record(corpus, batch, harness, "--post-result-grace", "2")
        (final,) = finals(batch)
        return run, final, {a["path"]: a for a in final.get("event", {}).get("produced", [])}
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()


def assert_report_checked(run: subprocess.CompletedProcess[str], final: dict[str, Any],
                          produced: dict[str, Any]) -> None:
    """What `record_report_with_checker` must give when the check was not undone: the session
    recorded, the check without a note, and report.md with exactly the rule the suite's
    checker reports over it (``mentions-retired``)."""
    assert run.returncode == 0, run.stdout + run.stderr
    assert final["state"] == "recorded", final["reason"]
    assert "findings_note" not in final, final["findings_note"]
    assert produced["report.md"].get("findings") == ["mentions-retired"], produced


def test_findings_from_a_confined_checker(tmp_path: Path, bwrap: str) -> None:
    """RC-11: the checker runs over the workspace after the session; each produced file inside
    the workspace gets the rules reported over it (docs/notes.md, named by --produced, mentions
    HW-DR-0051; out.md, named by a Write the stand-in never performed, does not exist: path
    only). The checker sees the workspace read-only and none of the host paths it is given
    (the batch's plan.yaml, the stand-in harness, the corpus). The workspace's ancestors exist
    inside only as the empty skeleton bwrap makes for the mount point."""
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus", extra={".headwater/check.py": CHECKER},
                         checker=f".headwater/check.py {batch / 'plan.yaml'} {tmp_path / 'claude'} "
                                 f"{tmp_path / 'corpus'}")
    (corpus / ".headwater" / "check.py").chmod(0o755)
    stream = (init() + READ + tool_use("w", "Write", {"file_path": "out.md", "content": "x"},
                                       msg="m2")
              + tool_result("w", "File created") + ANSWERED + result())
    harness = write_standin(tmp_path / "claude", stdout=stream)
    final = check_session(record(corpus, batch, harness, "--produced", "docs/notes.md"), batch,
                          state="recorded", status=0)
    produced = final["event"]["produced"]
    assert [(a["path"], a.get("findings", "ABSENT")) for a in produced] == [
        ("out.md", "ABSENT"), ("docs/notes.md", ["mentions-retired"])]
    # The notes' own id is in its front matter; HW-DR-0051 is no corpus id here.
    assert produced[1]["cites"] == ["HW-DR-0052", "HW-NOTE-0001"]
    assert "findings_note" not in final
    _, _, events, _ = transcript(batch)
    assert events[0]["produced"][1]["findings"] == ["mentions-retired"]


def test_a_failing_checker_writes_no_findings_and_says_so(tmp_path: Path, bwrap: str) -> None:
    """RC-11/RC-12: a checker that exits non-zero is no verdict: no findings key anywhere (not
    an empty list: that would be a pass), a note in the ledger and the prose, a warning."""
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus", checker=".headwater/check.sh",
                         extra={".headwater/check.sh": "#!/bin/sh\necho oops >&2\nexit 3\n"})
    (corpus / ".headwater" / "check.sh").chmod(0o755)
    harness = write_standin(tmp_path / "claude", stdout=SESSION)
    run = record(corpus, batch, harness, "--produced", "docs/notes.md")
    final = check_session(run, batch, state="recorded", status=0)
    assert final["event"]["produced"] == [{"path": "docs/notes.md",
                                           "result": sha((corpus / "docs/notes.md").read_bytes()),
                                           "cites": ["HW-DR-0052", "HW-NOTE-0001"]}]
    assert final["findings_note"].startswith("findings checker failed: exit status 3")
    assert "findings checker failed" in run.stderr
    assert "findings checker failed: exit status 3" in transcript(batch)[0]
    assert (batch / "sessions" / "present" / PROBE / "r1" / "checker.stderr.tail").read_bytes() \
        == b"oops\n"


# --- what the runner keeps of each attempt, and show ------------------------------------------

def test_calls_the_permission_rules_denied_are_in_the_ledger_and_shown(tmp_path: Path,
                                                                     bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    denials = (b', "permission_denials": [{"tool_name": "Write", "tool_use_id": "w", '
               b'"tool_input": {"file_path": "docs/x.md"}}]}')
    harness = write_standin(tmp_path / "standin", stdout=init() + READ + ANSWERED
                            + result().rstrip(b"\n")[:-1] + denials + b"\n")
    batch = tmp_path / "batch"
    proc = record(corpus, batch, harness)
    assert proc.returncode == 0, proc.stderr
    (final,) = finals(batch)
    assert final["permission_denials"] == ["Write"]
    shown = kit.cli("show", str(batch), "present", PROBE, "r1", env=kit.base_env())
    assert "denied by the permission rules: 1 call (Write)" in shown.stdout, shown.stdout


def test_the_stream_is_kept_as_received_and_show_prints_calls_and_final_text(
    tmp_path: Path,
) -> None:
    import zstandard

    corpus = make_corpus(tmp_path / "corpus")
    stream = SESSION + b"[a stray non-JSON line after the result]"  # cut: no newline at the end
    harness = write_standin(tmp_path / "standin", stdout=stream)
    batch = tmp_path / "batch"
    proc = record(corpus, batch, harness)
    assert proc.returncode == 1, proc.stderr  # truncated: the last line has no newline
    attempt = batch / "sessions" / "present" / PROBE / "r1" / "attempt-1"
    with (attempt / "stdout.jsonl.zst").open("rb") as fp:
        assert zstandard.ZstdDecompressor().stream_reader(fp).read() == stream
    assert (attempt / "final.txt").read_text() == "Found it.\nHW-DR-0052"
    (final,) = finals(batch)
    assert final["stream"] == "sessions/present/HW-PRB-0001/r1/attempt-1/stdout.jsonl.zst"
    assert final["stream_bytes"] == len(stream)
    shown = kit.cli("show", str(batch), "present", PROBE, "r1", env=kit.base_env())
    assert shown.returncode == 0, shown.stderr
    assert "state: truncated" in shown.stdout
    assert "Read docs/notes.md -> sha256:" in shown.stdout
    assert "    | HW-DR-0052" in shown.stdout
    missing = kit.cli("show", str(batch), "present", PROBE, "r9", env=kit.base_env())
    assert missing.returncode == 2 and "no session present HW-PRB-0001 r9" in missing.stderr


def test_retranscribe_derives_the_same_events_again_and_holds_streams_to_the_recorded_policy(
    tmp_path: Path,
) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = write_standin(tmp_path / "standin", stdout=SESSION)
    batch = tmp_path / "batch"
    assert record(corpus, batch, harness).returncode == 0
    (before,) = finals(batch)
    again = kit.cli("retranscribe", str(batch), env=kit.base_env())
    assert again.returncode == 0, again.stderr
    assert "re-derived 1 session from" in again.stdout and "changed" not in again.stdout
    rederived = [r for r in kit.ledger_dicts(batch) if r["kind"] == "rederived"]
    assert len(rederived) == 1 and rederived[0]["event"] == before["event"]
    text, _, events, rows = transcript(batch)
    assert "re-derived from the streams the runner kept" in text
    assert rows == [[PROBE, "r1", "recorded", "0"]] and events[0]["answer"] == "HW-DR-0052"
    # The recorded policy is what the stream is held to: one that asked for another
    # permission mode refuses the same stream.
    ledger = batch / "ledger.jsonl"
    ledger.write_text(ledger.read_text().replace('"permission_mode":"dontAsk"',
                                                 '"permission_mode":"plan"'))
    changed = kit.cli("retranscribe", str(batch), env=kit.base_env())
    assert changed.returncode == 0, changed.stderr
    assert f"changed: present {PROBE} r1: recorded -> refused-init" in changed.stdout
    _, _, events, rows = transcript(batch)
    assert rows == [[PROBE, "r1", "refused-init", "0"]] and events == []


# --- forged prose: values from the session are quoted literals (docs/transcript.md) -----------

FORGED_SERVED = 'Served version: "claude-forged-9" (1 recorded session).'
HIDES_THE_REST = f"2.1.197.\n\n{FORGED_SERVED}\n\nDenied connections: 0.\n\n<!--"
"""A version that, written raw, showed a forged served-version line and a forged egress line,
and hid every real line after it (served version, cost, egress, the outside-paths total) in
an HTML comment left open."""
BREAKS_THE_BATCH = f"{MODEL}\n## Events\nx"
"""A served model that, written raw, put a heading line into the prose: that render failed,
and so did every later one of the batch, since the transcript is rebuilt from the ledger."""


def served_by(model: str, text: str, *, msg: str) -> bytes:
    """A main-thread assistant text line whose ``message.model`` is ``model``."""
    return line({"type": "assistant", "parent_tool_use_id": None, "message": {
        "id": msg, "model": model, "content": [{"type": "text", "text": text}]}})


def check_transcript_cli(batch: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "campaign", "check-transcript",
         str(batch / "transcripts" / "present.md")],
        capture_output=True, text=True, timeout=60, check=False)


def prose_lines(batch: Path) -> list[str]:
    text = transcript(batch)[0]  # the independent check first: clean
    assert check_transcript_cli(batch).returncode == 0
    for heading in ("## Run identity", "## Events", "## Sessions"):
        assert text.split("\n").count(heading) == 1 and text.splitlines().count(heading) == 1
    return text.split("\n## Run identity\n", 1)[0].rstrip("\n").split("\n")


def test_a_crafted_version_shows_no_forged_line_and_hides_nothing(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """The init line's claude_code_version carries a forged served-version line, a forged
    "Denied connections: 0." line and an HTML comment opener: the prose quotes it on its own
    line as a JSON literal (the newlines as \\n, "<" as \\u003c), so neither forged line nor
    the opener is there, and the real lines after it are. (The session was confined and
    denied nothing, so the one real egress line is "Denied connections: 0." too.)"""
    batch = tmp_path / "b"
    widening = {k: v for k, v in WIDENING_CLEAN.items() if k != "claude_code_version"}
    stream = (init(**widening, claude_code_version=HIDES_THE_REST) + READ
              + served_by(MODEL, "Found it.\nHW-DR-0052", msg="m2") + result())
    harness = write_standin(tmp_path / "claude", stdout=stream)
    check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    lines = prose_lines(batch)
    assert FORGED_SERVED not in lines
    assert not any("<" in x for x in lines)  # no comment opener, no HTML at all
    # the literal, then its coverage: not a release number (the prose says so and goes on)
    assert any(x.startswith(
        'Claude Code version: "2.1.197.\\n\\nServed version: \\"claude-forged-9\\" (1 '
        'recorded session).\\n\\nDenied connections: 0.\\n\\n\\u003c!--" (not a release '
        "number, so not covered by the harness census). ") for x in lines)
    assert f'Served version: "{MODEL}" (1 recorded session).' in lines
    assert any(x.startswith("Cost source: ") for x in lines)
    egress = [x for x in lines if x.startswith(("Egress proxy: ", "Denied connections: "))]
    assert [x.split(":")[0] for x in egress] == ["Egress proxy", "Denied connections"]
    assert egress[1] == "Denied connections: 0."
    assert lines[-1] == "Outside-workspace paths named: 0"


def test_a_crafted_model_breaks_neither_its_record_nor_the_next(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """The served model carries a newline and a heading: the session is recorded and its
    transcript passes both checks with no forged line; a second `record` into the same batch
    (its transcript rebuilt from the whole ledger, the crafted record included) works too."""
    batch = tmp_path / "b"
    stream = (init() + READ + served_by(BREAKS_THE_BATCH, "Found it.\nHW-DR-0052", msg="m2")
              + result())
    harness = write_standin(tmp_path / "claude", stdout=stream)
    final = check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    assert final["served_model"] == BREAKS_THE_BATCH  # the ledger keeps what was sent
    assert "x" not in prose_lines(batch)
    write_standin(harness, stdout=SESSION)
    check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    lines = prose_lines(batch)
    assert "x" not in lines
    assert (f'Served versions differ across this arm\'s sessions: "{MODEL}" (1 session), '
            f'"{MODEL}\\n## Events\\nx" (1 session); served_version names the most frequent '
            "(a tie goes to the lexicographically first).") in lines
    assert transcript(batch)[1]["served_version"] == MODEL  # the tie: MODEL sorts first


def test_record_into_a_batch_of_another_workspace_path_is_refused(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """RC-02: every session of a batch runs at the batch's one workspace path, so a ``record``
    that asks for another would mix two conditions in one batch: exit 2, naming both paths,
    and nothing more written."""
    harness = write_standin(tmp_path / "claude", stdout=SESSION)
    batch = tmp_path / "b"
    check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    before = (batch / "ledger.jsonl").read_bytes()
    run = record(corpus, batch, harness, "--workspace-path", "/elsewhere")
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"ran at {STANDIN_WORKSPACE}, this run's at /elsewhere" in run.stdout + run.stderr
    assert (batch / "ledger.jsonl").read_bytes() == before


def test_record_into_a_batch_whose_corpus_moved_outside_the_read_set_names_the_files(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """A refusal for a moved corpus names the files outside the read set that changed,
    appeared or went, from the listing a batch keeps (docs/batch.md, tree.json)."""
    harness = write_standin(tmp_path / "claude", stdout=SESSION)
    batch = tmp_path / "b"
    check_session(record(corpus, batch, harness), batch, state="recorded", status=0)
    assert (batch / "tree.json").is_file()
    before = (batch / "ledger.jsonl").read_bytes()
    (corpus / "added.txt").write_text("new\n")
    run = record(corpus, batch, harness)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "outside the read set, added.txt is new" in run.stdout + run.stderr
    assert (batch / "ledger.jsonl").read_bytes() == before


def test_record_notes_a_symlink_of_the_corpus_by_name_and_target(
        tmp_path: Path, corpus: Path, bwrap: str) -> None:
    """run, resume and record note what plan notes: a symlink is never sealed, so a user who
    meant it as a document learns it before the sessions run (docs/sealing.md)."""
    harness = write_standin(tmp_path / "claude", stdout=SESSION)
    (corpus / "docs" / "alias.md").symlink_to("notes.md")
    run = record(corpus, tmp_path / "b", harness)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "note: docs/alias.md is a symlink to notes.md: not itself part of the tree" in run.stderr
