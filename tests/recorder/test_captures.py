"""Golden tests over the real CLI 2.1.197 captures and the bug inputs.

Each expectation is read off the capture's script (NAME.script.json: the turns
the provider played), its command (NAME.cmd.txt: flags, exit code) and its
workspace after the run (NAME.ws.txt), then the rules (DESIGN.md RC-07..RC-13,
session states). The comment above each entry says where the values come from.
The captures mounted the workspace at /workspace and the config dir at
/home/agent; the bug inputs use /ws and /cfg and a .mcp.json declaring `docs`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest

from recorder._digest import digest_bytes, digest_text
from recorder._event import build_event
from recorder._initcheck import InitPolicy
from recorder._transform import Observation, StreamObserver

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CAPTURES = FIXTURES / "captures"
BUG_INPUTS = FIXTURES / "bug_inputs"
WS = Path("/workspace")
BC_WS = Path("/ws")
BC_POLICY = InitPolicy("dontAsk", frozenset({"docs"}), frozenset(), "/cfg")


def ws_files(name: str) -> dict[str, bytes | None]:
    """NAME.ws.txt: ``path size`` headers, then ``    | `` content lines (None: not shown)."""
    files: dict[str, tuple[int, list[str]]] = {}
    current = ""
    for line in (CAPTURES / f"{name}.ws.txt").read_text().split("\n"):
        header = re.fullmatch(r"(\S.*) (\d+)", line)
        if header and not line.startswith("    |"):
            current = header.group(1)
            files[current] = (int(header.group(2)), [])
        elif line.startswith("    |"):
            files[current][1].append(line[6:])
    shown = {path: "\n".join(lines).encode() for path, (_, lines) in files.items()}
    return {path: body if len(body) == files[path][0] else None for path, body in shown.items()}


def policy_for(name: str) -> InitPolicy:
    mcp = ws_files(name).get(".mcp.json")
    declared = frozenset(json.loads(mcp)["mcpServers"]) if mcp else frozenset()
    return InitPolicy("dontAsk", declared, frozenset(), "/home/agent")


def exit_status_of(name: str) -> int:
    match = re.search(r"^# exit code: (-?\d+)", (CAPTURES / f"{name}.cmd.txt").read_text(), re.M)
    assert match is not None
    return int(match.group(1))


def feed(data: bytes, *, policy: InitPolicy, workspace: Path, exit_status: int) -> Observation:
    """Split stdout as the line reader does: complete lines, and a tail without newline."""
    observer = StreamObserver(policy=policy, workspace=workspace)
    *lines, tail = data.split(b"\n")
    for line in lines:
        observer.feed(line)
    return observer.finish(end="exited", exit_status=exit_status, tail=tail or None)


def capture(name: str, *, data: bytes | None = None, policy: InitPolicy | None = None,
            workspace: Path = WS) -> Observation:
    return feed(data if data is not None else (CAPTURES / f"{name}.jsonl").read_bytes(),
                policy=policy or policy_for(name), workspace=workspace,
                exit_status=exit_status_of(name))


@dataclass(frozen=True)
class Golden:
    state: str
    calls: list[tuple[str, str, bool]] = field(default_factory=list)
    produced: tuple[str, ...] = ()
    served_model: str | None = "claude-opus-4-8"
    cost: str | None = None
    reason: tuple[str, ...] = ()
    """Substrings of the reason."""
    retryable: bool = False
    outside: frozenset[str] = frozenset()
    final_text: str | None = None


READ_X = ("Read", "docs/x.md", True)
GOLDEN: dict[str, Golden] = {
    # script: Read x.md; Grep TODO (path /workspace), Glob **/*.md, Grep TODO; Read x.md offset 2
    # limit 1, Read nope.md (missing); last turn served as claude-served-9. Grep/Glob allowed.
    "a_read_answer": Golden(
        "recorded",
        [READ_X, ("Grep", "TODO in /workspace", True), ("Glob", "**/*.md", True),
         ("Grep", "TODO", True), READ_X, ("Read", "nope.md", True)],
        served_model="claude-served-9", cost="0.0111325",
        final_text="I found two TODOs.\nFINAL ANSWER: 2"),
    # same script, Grep/Glob not allowed: their results are errors, but they arrive.
    "a2_grep_glob_hidden": Golden(
        "recorded",
        [READ_X, ("Grep", "TODO in /workspace", True), ("Glob", "**/*.md", True),
         ("Grep", "TODO", True), READ_X, ("Read", "nope.md", True)],
        served_model="claude-served-9", cost="0.0111325"),
    # script: Write new.txt, Edit new.txt, Edit src/app.py (unread), Read app.py, Edit app.py,
    # MultiEdit (no such tool), Read nb.ipynb, 2x NotebookEdit, Write docs/x.md (unread), Write
    # sub/dir/deep.txt. Every Edit/Write/MultiEdit/NotebookEdit path is produced, whatever its
    # result.
    "b_write_edit": Golden(
        "recorded",
        [("Write", "new.txt", True), ("Edit", "new.txt", True), ("Edit", "src/app.py", True),
         ("Read", "src/app.py", True), ("Edit", "src/app.py", True),
         ("MultiEdit", '{"edits":[{"new_string":"ONE","old_string":"one"}],'
                       '"file_path":"/workspace/new.txt"}', True),
         ("Read", "nb.ipynb", True), ("NotebookEdit", "nb.ipynb", True),
         ("NotebookEdit", "nb.ipynb", True), ("Write", "docs/x.md", True),
         ("Write", "sub/dir/deep.txt", True)],
        produced=("/workspace/new.txt", "/workspace/src/app.py", "/workspace/nb.ipynb",
                  "/workspace/docs/x.md", "/workspace/sub/dir/deep.txt"),
        cost="0.011000000000000003", final_text="Done editing."),
    # script: 7 Bash calls; the background one finishes after the first result, so a second init
    # and a second result follow (STREAM_JSON_FACTS 0). Bash writes name no produced path.
    "c_bash": Golden(
        "recorded",
        [("Bash", "cat docs/x.md", True), ("Bash", "echo hi > out.txt", True),
         ("Bash", "cat > here.txt <<'EOF'\nline1\nline2\nEOF\nwc -l here.txt", True),
         ("Bash", "ls", True), ("Bash", "echo to-stderr >&2; exit 3", True),
         ("Bash", "sleep 5", True), ("Bash", "sleep 1; echo bg-done", True)],
        cost="0.009000000000000001", final_text="(script exhausted)"),
    # script: main Agent "Read x" -> subagent Read docs/x.md; main "Main done: alpha".
    "d_subagent": Golden("recorded", [("Agent", "Read x", True), READ_X], cost="0.004",
                         final_text="Main done: alpha"),
    "d2_subagent_taskname": Golden("recorded", [("Task", "Read x", True), READ_X], cost="0.004",
                                   final_text="Main done: alpha"),
    # script: Bash ls, Write w.txt (denied in dontAsk), Read x.md; Read /etc/hostname, NoSuchTool.
    "e_denied": Golden(
        "recorded",
        [("Bash", "ls", True), ("Write", "w.txt", True), READ_X,
         ("Read", "/etc/hostname", True), ("NoSuchTool", '{"x":1}', True)],
        produced=("/workspace/w.txt",), cost="0.003", outside=frozenset({"/etc/hostname"})),
    # script: ten parallel Bash calls; results arrive ro_0, ro_2, ro_1, ... (completion order).
    "e3_readonly_bash": Golden(
        "recorded",
        [("Bash", c, True) for c in ["ls", "cat docs/x.md", "grep -n TODO docs/x.md",
                                     "echo hi > out.txt", "rm docs/y.md", "python3 -c 'print(1)'",
                                     "git status", "find . -name '*.md'", "touch t.txt",
                                     "cd docs && ls"]],
        cost="0.002"),
    # provider: 429 always; the CLI gives up with a synthetic message, api_error_status 429.
    "f_429_always": Golden("harness-error", served_model=None, cost="0", retryable=True,
                           reason=("api_error_status 429",)),
    # provider: 400 prompt too long: not a provider fault, not retryable.
    "f_400_prompt_too_long": Golden("harness-error", served_model=None, cost="0",
                                    reason=("api_error_status 400",)),
    "f_401": Golden("harness-error", served_model=None, cost="0"),
    "f_500_always": Golden("harness-error", served_model=None, cost="0", retryable=True),
    # 529 reports api_error_status null and "Repeated 529 Overloaded" text.
    "f_529_always": Golden("harness-error", served_model=None, cost="0", retryable=True),
    # script: Read x.md, then 529 on the next turn: one call, cost of the first turn.
    "f_529_mid_session": Golden("harness-error", [READ_X], cost="0.001", retryable=True),
    # a dropped connection: "Unable to connect to API (ECONNRESET)", status null.
    "f_cut_always": Golden("harness-error", served_model=None, cost="0", retryable=True),
    "f_429_then_ok": Golden("recorded", cost="0.001", final_text="Recovered fine."),
    "f_cut_once": Golden("recorded", cost="0.001", final_text="Recovered fine."),
    # cmd: --plugin-dir demo-plugin (path /opt/plugins/demo-plugin, not builtin); skills list
    # demo-plugin:plug-skill (plugin namespace). .mcp.json declares echo and broken, so the MCP
    # servers are not refusals; broken failed, but the refusal decides first.
    "g_config": Golden(
        "refused-init",
        [("mcp__echo__echo", '{"text":"ping"}', True), ("Skill", "hello", True),
         ("Skill", "demo-plugin:plug-skill", True), ("Read", "CLAUDE.md", True)],
        cost="0.003", final_text="MEMO-OK HELLO-SKILL",
        reason=("RC-07: plugin 'demo-plugin' at /opt/plugins/demo-plugin is not builtin",
                "RC-07: skill demo-plugin:plug-skill carries a plugin namespace")),
    # same with --include-hook-events: hook lines before the init line are allowed.
    "g2_config_hook_events": Golden(
        "refused-init",
        [("mcp__echo__echo", '{"text":"ping"}', True), ("Skill", "hello", True),
         ("Skill", "demo-plugin:plug-skill", True), ("Read", "CLAUDE.md", True)],
        cost="0.003", reason=("plugin 'demo-plugin'",)),
    # cmd: --mcp-config echo; the workspace is empty (no .mcp.json): echo is undeclared.
    "g3_mcp_config_flag": Golden(
        "refused-init", [("mcp__echo__echo", '{"text":"x"}', True)], cost="0.002",
        reason=("RC-07: MCP server echo (connected) is not declared by the workspace's "
                ".mcp.json",)),
    # .mcp.json declares echo; the session made no call.
    "g4_mcp_json_unapproved": Golden("recorded", cost="0.001", final_text="ok"),
    # permission modes other than dontAsk (cmd --permission-mode ...), exit 0.
    "h_acceptEdits": Golden("refused-init", [("Bash", "echo mode-test > m.txt", True)],
                            cost="0.002",
                            reason=("RC-07: permissionMode acceptEdits, asked for dontAsk",)),
    "h_default_mode": Golden("refused-init", [("Bash", "echo mode-test > m.txt", True)],
                             cost="0.002",
                             reason=("RC-07: permissionMode default, asked for dontAsk",)),
    "h_plan": Golden("refused-init", [("Bash", "echo mode-test > m.txt", True)], cost="0.002",
                     reason=("RC-07: permissionMode plan, asked for dontAsk",)),
    "h_bypass_is_sandbox": Golden(
        "refused-init", [("Bash", "echo mode-test > m.txt", True)], cost="0.002",
        reason=("RC-07: permissionMode bypassPermissions, asked for dontAsk",)),
    "h_dangerously_skip": Golden(
        "refused-init", [("Bash", "echo mode-test > m.txt", True)], cost="0.002",
        reason=("RC-07: permissionMode bypassPermissions, asked for dontAsk",)),
    # bypass as root: the CLI refuses to start; empty stdout, exit 1: no init line.
    "h_bypass_root": Golden("refused-init", served_model=None, reason=("RC-07: no init line",)),
    "m_no_verbose": Golden("refused-init", served_model=None, reason=("RC-07: no init line",)),
    # --max-turns 2: Read x.md twice, then error_max_turns (is_error, no result text): not
    # retryable.
    "i_max_turns": Golden("harness-error", [READ_X, READ_X], cost="0.002",
                          reason=("subtype error_max_turns",)),
    # script: Read big.txt (too large), Read big.txt limit 100 (too many tokens), Bash 20 MB
    # (reads /dev/zero: an outside path by RC-08's word rule), Read mid.txt (partial view).
    "j_large": Golden(
        "recorded",
        [("Read", "big.txt", True), ("Read", "big.txt", True),
         ("Bash", "head -c 20000000 /dev/zero | tr '\\0' 'a' | fold -w 1000", True),
         ("Read", "mid.txt", True)],
        cost="0.005", outside=frozenset({"/dev/zero"}), final_text="big done"),
    # bwrap killed by SIGKILL/SIGTERM (cmd: exit -9/-15) during `sleep 30`: no result line.
    "k_sigkill": Golden("killed", [("Bash", "sleep 30", False)], retryable=True,
                        reason=("signal 9",)),
    "k_sigterm": Golden("killed", [("Bash", "sleep 30", False)], retryable=True,
                        reason=("signal 15",)),
    "k_sigterm_during_api": Golden("killed", [READ_X], retryable=True),
    # --include-partial-messages: stream_event lines are ignored.
    "l_partial_messages": Golden("recorded", cost="0.001", final_text="Hello partial world"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_capture_golden(name: str) -> None:
    want = GOLDEN[name]
    obs = capture(name)
    assert obs.state == want.state, obs.reason
    assert [(c.tool, c.argument, c.result_digest is not None) for c in obs.calls] == want.calls
    assert obs.produced_paths == want.produced
    assert obs.served_model == want.served_model
    assert obs.cost_usd == (Decimal(want.cost) if want.cost is not None else None)
    for part in want.reason:
        assert part in obs.reason
    assert obs.retryable is want.retryable
    assert obs.outside_paths == want.outside
    if want.final_text is not None:
        assert obs.final_text == want.final_text
    assert obs.anomaly_count == 0
    if obs.lines:
        assert obs.claude_code_version == "2.1.197"


def test_every_capture_has_a_verdict() -> None:
    """Every one of the 41 captures is classified without error (k2_* need their own paths)."""
    names = sorted(p.stem for p in CAPTURES.glob("*.jsonl"))
    assert len(names) == 41
    for name in names:
        if not name.startswith("k2_"):
            assert capture(name).state in {"recorded", "refused-init", "harness-error", "killed"}


def _k2(name: str) -> Observation:
    # k2_*: the CLI ran without bwrap in <run:NAME>/ws with config <run:NAME>/cfg; stand an
    # absolute path in for the placeholder (STREAM_JSON_FACTS: `<run:NAME>` is the run folder).
    run = f"/runs/{name}"
    data = (CAPTURES / f"{name}.jsonl").read_bytes().replace(f"<run:{name}>".encode(), run.encode())
    return capture(name, data=data, workspace=Path(f"{run}/ws"),
                   policy=InitPolicy("dontAsk", frozenset(), frozenset(), f"{run}/cfg"))


def test_capture_k2_sigterm_during_api_is_no_result() -> None:
    # SIGTERM to the CLI while it waits for the API: exit 143 (not a signal status), no result.
    obs = _k2("k2_direct_sigterm_during_api")
    assert (obs.state, obs.retryable, obs.cost_usd) == ("no-result", True, None)
    assert [(c.tool, c.argument) for c in obs.calls] == [("Read", "docs/x.md")]


def test_capture_k2_sigint_is_harness_error_not_retryable() -> None:
    # SIGINT during a tool: error_during_execution, is_error, exit 1.
    obs = _k2("k2_direct_sigint")
    assert (obs.state, obs.retryable, obs.cost_usd) == ("harness-error", False, Decimal("0.001"))


def test_capture_k2_sigterm_during_tool_recovers() -> None:
    # SIGTERM during a Bash tool: the tool dies (Exit code 137) and the session carries on, exit 0.
    obs = _k2("k2_direct_sigterm")
    assert (obs.state, obs.final_text) == ("recorded", "never")


def test_capture_g_config_without_plugin_is_env_fault() -> None:
    # g_config's init with the plugin and its namespaced skill taken away: nothing left to refuse,
    # and `broken`, declared by the workspace's .mcp.json, reported failed -> env-fault.
    lines = (CAPTURES / "g_config.jsonl").read_bytes().split(b"\n")
    for index, line in enumerate(lines):
        if b'"subtype":"init"' in line:
            init = json.loads(line)
            init["plugins"] = []
            init["skills"] = [s for s in init["skills"] if ":" not in s]
            lines[index] = json.dumps(init).encode()
    obs = capture("g_config", data=b"\n".join(lines))
    assert (obs.state, obs.retryable, obs.failed_mcp_servers) == ("env-fault", True, ("broken",))
    assert obs.cost_usd == Decimal("0.003")


# --- events over captures ----------------------------------------------------------------------

def test_capture_a_read_answer_event() -> None:
    # Sealed workspace = ws.txt (the session changed nothing): Reads of docs/x.md, full and
    # partial, carry the manifest digest; the failed Read of nope.md and Grep/Glob carry the
    # digest of their tool_result text. The last line "FINAL ANSWER: 2" is not the word "2".
    files = ws_files("a_read_answer")
    manifest = {path: digest_bytes(body) for path, body in files.items() if body is not None}
    obs = capture("a_read_answer")
    event = build_event(obs, probe="p", session="r1", workspace=WS, manifest=manifest,
                        declared_answers=["2"], corpus_ids=["HW-DR-0052"])
    results = [c.result for c in event.calls or []]
    x_md = manifest["docs/x.md"]
    assert results[0] == results[4] == x_md
    assert results[1] == digest_text("docs/y.md:2:TODO: delta\ndocs/x.md:3:TODO: beta")
    assert results[2] == digest_text("docs/x.md\ndocs/y.md")
    assert results[5] == digest_text(
        "File does not exist. Note: your current working directory is /workspace.")
    assert event.produced == []
    assert "answer" in event.model_fields_set
    assert event.answer is None
    whole_line = build_event(obs, probe="p", session="r1", workspace=WS, manifest=manifest,
                             declared_answers=["FINAL ANSWER: 2"], corpus_ids=[])
    assert whole_line.answer == "FINAL ANSWER: 2"


def test_capture_b_write_edit_event_on_a_real_workspace(tmp_path: Path) -> None:
    # The workspace after the run (ws.txt) laid out on the host, the stream's /workspace moved
    # to it (the workspace is bound at the same path inside and outside). Sealed before the run:
    # docs/x.md, docs/y.md, src/app.py ("return 1", per the Read's result), nb.ipynb.
    ws = tmp_path / "workspace"
    files = ws_files("b_write_edit")
    for path, body in files.items():
        assert body is not None
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_bytes(body)
    sealed_app = digest_bytes(b"def main():\n    return 1\n")
    sealed_nb = "sha256:" + "1" * 64  # its sealed bytes are not in the capture; any digest
    manifest = {"docs/x.md": digest_bytes(files["docs/x.md"] or b""),
                "docs/y.md": digest_bytes(files["docs/y.md"] or b""),
                "src/app.py": sealed_app, "nb.ipynb": sealed_nb}
    data = (CAPTURES / "b_write_edit.jsonl").read_bytes().replace(b"/workspace", str(ws).encode())
    obs = capture("b_write_edit", data=data, workspace=ws)
    event = build_event(obs, probe="p", session="r1", workspace=ws, manifest=manifest,
                        declared_answers=[], corpus_ids=["TODO", "HW-DR-0052"])
    reads = [c.result for c in event.calls or [] if c.tool == "Read"]
    assert reads == [sealed_app, sealed_nb]  # the manifest, not the file after the session
    produced = [(a.path, a.result, a.cites) for a in event.produced or []]
    assert produced == [
        ("new.txt", digest_bytes(b"one\nTWO\n"), []),
        ("src/app.py", digest_bytes(b"def main():\n    return 2\n"), []),
        ("nb.ipynb", digest_bytes(files["nb.ipynb"] or b""), []),
        ("docs/x.md", digest_bytes(b"# X\nalpha line\nTODO: beta\ngamma\n"), ["TODO"]),
        ("sub/dir/deep.txt", digest_bytes(b"deep\n"), []),
    ]
    assert "answer" in event.model_fields_set
    assert event.answer is None


@pytest.mark.parametrize("name", ["f_429_always", "h_plan", "k_sigkill", "i_max_turns"])
def test_build_event_refuses_non_recorded_capture(name: str) -> None:
    with pytest.raises(ValueError, match="only a recorded session"):
        build_event(capture(name), probe="p", session="r1", workspace=WS, manifest={},
                    declared_answers=[], corpus_ids=[])


# --- bug inputs --------------------------------------------------------------------------------

def bug(name: str, *, exit_status: int = 0) -> Observation:
    return feed((BUG_INPUTS / f"{name}.jsonl").read_bytes(), policy=BC_POLICY, workspace=BC_WS,
                exit_status=exit_status)


NOTES = "# notes\nregister: HW-DR-0051 (retired), HW-DR-0052 (current)\n"


def test_bc01_no_result_line() -> None:
    # The stream ends with complete lines and no result line, exit 0: no-result, cost unknown,
    # the observed call kept, retryable.
    obs = bug("BC-01")
    assert (obs.state, obs.cost_usd, obs.retryable) == ("no-result", None, True)
    assert [(c.tool, c.argument, c.result_digest) for c in obs.calls] == [
        ("Read", "notes.md", digest_text(NOTES))]


def test_bc03_large_line_is_read_whole() -> None:
    # One ~1.4 MB line (an image read); the lines after it are still read.
    obs = bug("BC-03")
    assert obs.state == "recorded"
    assert [(c.tool, c.result_digest is not None) for c in obs.calls] == [("Read", True)]
    assert obs.final_text == "The screenshot shows the id.\nHW-DR-0052"


def test_bc05_non_json_lines_are_anomalies() -> None:
    # A banner before init and a debug line between a tool_use and its result: two anomalies,
    # pairing and the answer unaffected.
    obs = bug("BC-05")
    assert (obs.state, obs.anomaly_count) == ("recorded", 2)
    assert [a.line_number for a in obs.anomalies] == [1, 4]
    assert obs.anomalies[0].excerpt == "Now using node v20.11.1 (npm v10.2.4)"
    assert obs.calls[0].result_digest == digest_text(NOTES)
    event = build_event(obs, probe="p", session="r1", workspace=BC_WS, manifest={},
                        declared_answers=["HW-DR-0052"], corpus_ids=[])
    assert event.answer == "HW-DR-0052"


def test_bc07_hook_lines_before_init() -> None:
    # hook_started/hook_response before init are allowed; status and rate_limit_event after it
    # are ignored.
    obs = bug("BC-07")
    assert (obs.state, obs.refusals, obs.cost_usd) == ("recorded", (), Decimal("0.0123"))


def test_bc07_assistant_before_init_refuses() -> None:
    lines = (BUG_INPUTS / "BC-07.jsonl").read_bytes().split(b"\n")
    moved = [lines[5], *lines[:5], *lines[6:]]  # the first assistant line moved before init
    obs = feed(b"\n".join(moved), policy=BC_POLICY, workspace=BC_WS, exit_status=0)
    assert obs.state == "refused-init"
    assert obs.reason == "RC-07: line 1 before the init line is assistant, not a hook event"


def test_bc10a_is_error_wins_over_subtype_success() -> None:
    # subtype success, is_error true, exit 0: harness-error; rate limit text: retryable; the
    # cost (0) is recorded; the error text never reaches the answer rule (no event).
    obs = bug("BC-10a")
    assert (obs.state, obs.retryable, obs.cost_usd) == ("harness-error", True, Decimal(0))
    with pytest.raises(ValueError, match="only a recorded session"):
        build_event(obs, probe="p", session="r1", workspace=BC_WS, manifest={},
                    declared_answers=["API Error: Rate limit reached"], corpus_ids=[])


def test_bc10b_error_during_execution_with_exit_zero() -> None:
    obs = bug("BC-10b", exit_status=0)
    assert (obs.state, obs.retryable, obs.cost_usd) == ("harness-error", False, Decimal("0.0071"))
    assert obs.result_subtype == "error_during_execution"
