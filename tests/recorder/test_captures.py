"""Golden tests: every one of the 41 real CLI 2.1.197 captures, end to end through the recorder.

Where each expected value comes from (never from the code's output):

- ``state``: docs/batch.md's session-state table applied to NAME.cmd.txt (exit code,
  permission mode, flags) and NAME.script.json (what the provider did).
- ``calls``: one per tool_use the script plays, in stream order (a subagent's
  after the Agent call that started it). ``tool`` as the script names it;
  ``argument`` by RC-10's table from the script's ``input``; ``result`` by
  RC-10: `Sealed` (a Read of a file sealed in the workspace: the digest of that
  file's bytes, which NAME.ws.txt shows for files the session left alone),
  `Text` (the sha256 of the tool_result text that the capture printed for that
  id, read here by `result_texts`, a reader written from the stream format and
  not from ``recorder``), or ``NONE`` (no tool_result arrived).
- ``produced`` (recorded sessions): every Write/Edit/MultiEdit/NotebookEdit path
  of the script, once, workspace-relative; ``result`` is the digest of the file
  as NAME.ws.txt shows it after the session, ``cites`` the ids of `CORPUS_IDS`
  found in it by eye; no ``result``/``cites`` for a file the session never made.
- ``answer``: a declared answer chosen per capture (the comment says why) and
  RC-13 applied by hand to the script's final main-thread text.
- ``served``: the ``model`` of the script's last main-thread turn, else the model
  the CLI asked for (claude-opus-4-8, its default: the scripted provider echoes
  it); None when every main-thread assistant line is the CLI's ``<synthetic>``.
- ``cost``: the ``total_cost_usd`` text of the last result line; the comments
  derive it from the script: the CLI prices $5/M input and $25/M output
  tokens, and a scripted turn without ``usage`` is 100 in + 20 out = $0.001.
  ``cents`` = ceiling(100 x cost), RC-14.
- ``refusal``: RC-07 naming the rule, the field and the value.

The captures mounted the workspace at /workspace and the config dir at
/home/agent. Here the workspace is laid out from NAME.ws.txt in a temporary
directory and the stream's ``/workspace`` is moved there (the product binds
the workspace at its own path, RC-02), so produced files can be digested.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TypedDict

import pytest

from recorder._cost import cost_cents
from recorder._errors import LineTooLong
from recorder._event import build_event, observed_calls
from recorder._initcheck import InitPolicy
from recorder._transform import Observation, StreamObserver
from recorder.transcript import Event

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CAPTURES = FIXTURES / "captures"
CAPTURE_WS = "/workspace"
CONFIG_DIR = "/home/agent"
CORPUS_IDS = ("HW-DR-0052", "TODO", "alpha", "deep", "inserted")
"""The corpus identifier list every capture is checked against (RC-11 ``cites``)."""
OPUS = "claude-opus-4-8"
"""The CLI's default model, which the scripted provider reports back as served."""


def sha(data: bytes | str) -> str:
    """``sha256:<hex>`` of bytes, or of text as UTF-8 (written here, not imported)."""
    raw = data.encode() if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


# --- reading a capture's own files ------------------------------------------------------------

def ws_files(name: str) -> dict[str, bytes | None]:
    """NAME.ws.txt: ``path size`` headers, then ``    | `` content lines (None: not all shown)."""
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


def exit_status_of(name: str) -> int:
    match = re.search(r"^# exit code: (-?\d+)", (CAPTURES / f"{name}.cmd.txt").read_text(), re.M)
    assert match is not None
    return int(match.group(1))


def result_texts(data: bytes) -> dict[str, str]:
    r"""tool_use_id -> its tool_result text: a string content, or text blocks joined by \n."""
    texts: dict[str, str] = {}
    for raw in data.split(b"\n"):
        if not raw.startswith(b'{"type":"user"'):
            continue
        content = json.loads(raw)["message"]["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                body = block.get("content")
                texts[block["tool_use_id"]] = body if isinstance(body, str) else "\n".join(
                    part["text"] for part in body if part.get("type") == "text")
    return texts


# --- expectations ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sealed:
    """RC-10: a Read of a file sealed in the workspace -> that file's digest."""

    path: str


@dataclass(frozen=True)
class Text:
    """RC-10: any other call -> sha256 of the tool_result text printed for this id."""

    tool_use_id: str


NONE = None
"""RC-10: the tool_result never arrived -> no ``result`` key."""
Result = Sealed | Text | None


@dataclass(frozen=True)
class Expect:
    state: str
    calls: tuple[tuple[str, str, Result], ...] = ()
    produced: tuple[tuple[str, bool, tuple[str, ...]], ...] = ()
    """(path, exists after the session, cites)."""
    declared: tuple[str, ...] = ()
    answer: str | None = None
    served: str | None = OPUS
    cost: str | None = None
    cents: int = 0
    refusals: tuple[tuple[str, str], ...] = ()
    """RC-07 (field, value) pairs the reason must name as ``RC-07: field = 'value'``."""
    reason: str = ""
    """A further substring of the reason."""
    retryable: bool = False
    outside: frozenset[str] = frozenset()
    created: frozenset[str] = frozenset()
    """Files of ws.txt the session created: not in the sealed manifest."""
    sealed_as: dict[str, bytes | str] = field(default_factory=dict)
    """Sealed content (bytes) or digest (str) where ws.txt shows the file changed or cut."""


# The Reads of docs/x.md, Grep/Glob and the nope.md Read of the a_* scripts.
A_CALLS = (
    ("Read", "docs/x.md", Sealed("docs/x.md")),
    ("Grep", "TODO in .", Text("toolu_grep1")),
    ("Glob", "**/*.md", Text("toolu_glob1")),
    ("Grep", "TODO", Text("toolu_grep2")),
    ("Read", "docs/x.md", Sealed("docs/x.md")),  # offset 2 limit 1: a partial read, same digest
    ("Read", "nope.md", Text("toolu_read3")),  # failed Read: text digest
)
# The e_* scripts: Bash ls, Write w.txt, Read x.md; Read /etc/hostname, NoSuchTool.
E_CALLS = (
    ("Bash", "ls", Text("toolu_deny_bash")),
    ("Write", "w.txt", Text("toolu_deny_write")),
    ("Read", "docs/x.md", Sealed("docs/x.md")),
    ("Read", "/etc/hostname", Text("toolu_read_outside")),  # outside: text digest
    ("NoSuchTool", '{"x":1}', Text("toolu_nosuch")),  # not in the table: canonical JSON
)
G_CALLS = (
    ("mcp__echo__echo", '{"text":"ping"}', Text("toolu_mcp1")),
    ("Skill", "hello", Text("toolu_skill1")),
    ("Skill", "demo-plugin:plug-skill", Text("toolu_skill2")),
    ("Read", "CLAUDE.md", Sealed("CLAUDE.md")),
)
G_REFUSALS = (("plugins[0].path", "/opt/plugins/demo-plugin"),  # --plugin-dir: not builtin
              ("skills[2]", "demo-plugin:plug-skill"))  # a plugin namespace
MODE_CALL = (("Bash", "echo mode-test > m.txt", Text("toolu_b")),)
KILLED_BASH = (("Bash", "sleep 30", NONE),)  # killed during the tool: its result never came
class _Failed(TypedDict):
    served: str | None
    cost: str
    cents: int


API_FAIL: _Failed = {"served": None, "cost": "0", "cents": 0}  # one failed request: nothing billed

EXPECT: dict[str, Expect] = {
    # 4 turns: 3 default ($0.003) + 1234 in, 56 out, 1000 cache reads ($0.5/M), 10 cache
    # writes ($6.25/M) = $0.0081325. Last line "FINAL ANSWER: 2": a sentence around the
    # declared "2", so null.
    "a_read_answer": Expect("recorded", A_CALLS, declared=("2",), answer=None,
                            served="claude-served-9", cost="0.0111325", cents=2),
    # Same script, Grep/Glob not allowed: their (error) results still arrive. Declared the
    # whole last line in other case: case folded, the declared form is written.
    "a2_grep_glob_hidden": Expect("recorded", A_CALLS, declared=("final answer: 2", "2"),
                                  answer="final answer: 2", served="claude-served-9",
                                  cost="0.0111325", cents=2),
    # 11 turns. Produced: every Write/Edit/MultiEdit/NotebookEdit path once, whatever its result
    # (the unread Edit, MultiEdit and unread Write failed). src/app.py sealed as "return 1"
    # (its Read shows it), nb.ipynb's sealed bytes are not in the capture: any digest.
    # "Done editing." vs "done editing": one trailing period stripped, case folded.
    "b_write_edit": Expect(
        "recorded",
        (("Write", "new.txt", Text("toolu_w1")), ("Edit", "new.txt", Text("toolu_e1")),
         ("Edit", "src/app.py", Text("toolu_e2_unread")),
         ("Read", "src/app.py", Sealed("src/app.py")),
         ("Edit", "src/app.py", Text("toolu_e3")),
         ("MultiEdit", "new.txt", Text("toolu_me1")),
         ("Read", "nb.ipynb", Sealed("nb.ipynb")),
         ("NotebookEdit", "nb.ipynb", Text("toolu_nb1")),
         ("NotebookEdit", "nb.ipynb", Text("toolu_nb2")),
         ("Write", "docs/x.md", Text("toolu_w2_unread")),
         ("Write", "sub/dir/deep.txt", Text("toolu_w3"))),
        produced=(("new.txt", True, ()), ("src/app.py", True, ()),
                  ("nb.ipynb", True, ("inserted",)), ("docs/x.md", True, ("TODO", "alpha")),
                  ("sub/dir/deep.txt", True, ("deep",))),
        declared=("done editing",), answer="done editing",
        cost="0.011000000000000003", cents=2,
        created=frozenset({"new.txt", "sub/dir/deep.txt"}),
        sealed_as={"src/app.py": b"def main():\n    return 1\n", "nb.ipynb": sha("sealed nb")}),
    # 8 turns + 1 after the background task ends (a second init, a second result, FACTS 0):
    # the final message is the one before the LAST result, "(script exhausted)", so the
    # declared "Bash done." (the first result's text) is not the answer. Bash writes name no
    # produced path.
    "c_bash": Expect(
        "recorded",
        tuple(("Bash", command, Text(f"toolu_b{i}")) for i, command in enumerate(
            ["cat docs/x.md", "echo hi > out.txt",
             "cat > here.txt <<'EOF'\nline1\nline2\nEOF\nwc -l here.txt", "ls",
             "echo to-stderr >&2; exit 3", "sleep 5", "sleep 1; echo bg-done"], start=1)),
        declared=("Bash done.",), answer=None, cost="0.009000000000000001", cents=1,
        created=frozenset({"here.txt", "out.txt"})),
    # Main Agent "Read x" -> subagent Read (paired by id inside the subagent); 2 main + 2 sub
    # turns = $0.004. The final message is the main thread's "Main done: alpha", never the
    # subagent's "Sub result: alpha found" (declared too, to show it is not taken).
    "d_subagent": Expect("recorded", (("Agent", "Read x", Text("toolu_agent1")),
                                      ("Read", "docs/x.md", Sealed("docs/x.md"))),
                         declared=("Sub result: alpha found", "main done: alpha"),
                         answer="main done: alpha", cost="0.004", cents=1),
    # The tool_use named Task: recorded as Task. "Main done: alpha" vs "alpha": a sentence, null.
    "d2_subagent_taskname": Expect("recorded", (("Task", "Read x", Text("toolu_agent1")),
                                                ("Read", "docs/x.md", Sealed("docs/x.md"))),
                                   declared=("alpha",), answer=None, cost="0.004", cents=1),
    # --allowedTools Read Bash Write --disallowedTools Bash: Write succeeds (w.txt exists), Bash
    # is no such tool. 3 turns. Words, not order: "It could not run" matches.
    "e2_disallowed": Expect("recorded", E_CALLS, produced=(("w.txt", True, ()),),
                            declared=("It could not run",), answer="It could not run",
                            cost="0.003", cents=1, outside=frozenset({"/etc/hostname"}),
                            created=frozenset({"w.txt"})),
    # dontAsk, --allowedTools Read: the Write is denied, w.txt never exists (path only).
    # Missing word "it": null.
    "e_denied": Expect("recorded", E_CALLS, produced=(("w.txt", False, ()),),
                       declared=("could not run",), answer=None, cost="0.003", cents=1,
                       outside=frozenset({"/etc/hostname"})),
    # Ten parallel Bash calls, results in completion order; paired by id. 2 turns.
    "e3_readonly_bash": Expect(
        "recorded",
        tuple(("Bash", command, Text(f"toolu_ro_{i}")) for i, command in enumerate(
            ["ls", "cat docs/x.md", "grep -n TODO docs/x.md", "echo hi > out.txt", "rm docs/y.md",
             "python3 -c 'print(1)'", "git status", "find . -name '*.md'", "touch t.txt",
             "cd docs && ls"])),
        declared=("DONE",), answer="DONE", cost="0.002", cents=1),
    # Provider failures: the CLI ends with a synthetic message and is_error true (subtype
    # success), exit 1. Retryable when the provider failed (429, 5xx, overload, connection).
    "f_429_always": Expect("harness-error", retryable=True, reason="api_error_status 429",
                           **API_FAIL),
    "f_400_prompt_too_long": Expect("harness-error", reason="api_error_status 400", **API_FAIL),
    "f_401": Expect("harness-error", reason="api_error_status 401", **API_FAIL),
    "f_500_always": Expect("harness-error", retryable=True, reason="api_error_status 500",
                           **API_FAIL),
    "f_529_always": Expect("harness-error", retryable=True, reason="Overloaded", **API_FAIL),
    "f_529_default_retries": Expect("harness-error", retryable=True, reason="Overloaded",
                                    **API_FAIL),
    "f_sse_overloaded_always": Expect("harness-error", retryable=True, reason="Overloaded",
                                      **API_FAIL),
    "f_cut_always": Expect("harness-error", retryable=True, reason="ECONNRESET", **API_FAIL),
    # Read x.md succeeded (1 turn, $0.001), then 529 for good.
    "f_529_mid_session": Expect("harness-error", (("Read", "docs/x.md", Sealed("docs/x.md")),),
                                cost="0.001", cents=1, retryable=True),
    # Recovered after retries / a silent non-streaming fallback: 1 billed turn.
    "f_429_then_ok": Expect("recorded", declared=("fine recovered",), answer="fine recovered",
                            cost="0.001", cents=1),
    "f_cut_once": Expect("recorded", declared=("recovered",), answer=None,  # a missing word
                         cost="0.001", cents=1),
    "f_cut_stream_only": Expect("recorded", declared=("Recovered fine extra",), answer=None,
                                cost="0.001", cents=1),  # an extra word
    # --plugin-dir demo-plugin: a non-builtin plugin and its namespaced skill. .mcp.json
    # declares echo and broken, so the servers are no refusal (broken failed: env-fault, but
    # the refusal decides first). SessionStart hook lines precede init: allowed. 3 turns.
    "g_config": Expect("refused-init", G_CALLS, cost="0.003", cents=1, refusals=G_REFUSALS,
                       created=frozenset({f"hooklog/{n}.jsonl" for n in (
                           "PostToolUse", "PreToolUse", "SessionEnd", "SessionStart", "Stop",
                           "UserPromptSubmit")})),
    "g2_config_hook_events": Expect(
        "refused-init", G_CALLS, cost="0.003", cents=1, refusals=G_REFUSALS,
        created=frozenset({f"hooklog/{n}.jsonl" for n in (
            "PostToolUse", "PreToolUse", "SessionEnd", "SessionStart", "Stop",
            "UserPromptSubmit")})),
    # --mcp-config echo, and the workspace has no .mcp.json: echo is undeclared.
    "g3_mcp_config_flag": Expect("refused-init", (("mcp__echo__echo", '{"text":"x"}',
                                                   Text("toolu_m")),),
                                 cost="0.002", cents=1,
                                 refusals=(("mcp_servers[0].name", "echo"),)),
    # .mcp.json declares echo, the session made no call. No declared answers: null.
    "g4_mcp_json_unapproved": Expect("recorded", declared=(), answer=None, cost="0.001",
                                     cents=1),
    # Permission modes other than dontAsk (cmd: --permission-mode / --dangerously-skip-...).
    "h_acceptEdits": Expect("refused-init", MODE_CALL, cost="0.002", cents=1,
                            refusals=(("permissionMode", "acceptEdits"),),
                            created=frozenset({"m.txt"})),
    "h_default_mode": Expect("refused-init", MODE_CALL, cost="0.002", cents=1,
                             refusals=(("permissionMode", "default"),)),
    "h_plan": Expect("refused-init", MODE_CALL, cost="0.002", cents=1,
                     refusals=(("permissionMode", "plan"),)),
    "h_bypass_is_sandbox": Expect("refused-init", MODE_CALL, cost="0.002", cents=1,
                                  refusals=(("permissionMode", "bypassPermissions"),),
                                  created=frozenset({"m.txt"})),
    "h_dangerously_skip": Expect("refused-init", MODE_CALL, cost="0.002", cents=1,
                                 refusals=(("permissionMode", "bypassPermissions"),),
                                 created=frozenset({"m.txt"})),
    # Bypass as root: the CLI refuses to start, empty stdout, exit 1: no init line.
    "h_bypass_root": Expect("refused-init", served=None, reason="no init line"),
    # stream-json without --verbose: exit 1, empty stdout.
    "m_no_verbose": Expect("refused-init", served=None, reason="no init line"),
    # --max-turns 2: Read x.md twice (the second "Wasted call" is no error: still a Read of a
    # sealed file), then error_max_turns, is_error: not a provider fault. 2 billed turns.
    "i_max_turns": Expect("harness-error", (("Read", "docs/x.md", Sealed("docs/x.md")),) * 2,
                          cost="0.002", cents=1, reason="error_max_turns"),
    # Read big.txt (too large) and with limit 100 (too many tokens): failed, text digests;
    # Bash 20 MB (names /dev/zero, outside by RC-08's word rule); Read mid.txt: a partial view
    # of a sealed file, its manifest digest (ws.txt does not show the bytes). 5 turns.
    "j_large": Expect(
        "recorded",
        (("Read", "big.txt", Text("toolu_bigread")), ("Read", "big.txt", Text("toolu_bigread2")),
         ("Bash", "head -c 20000000 /dev/zero | tr '\\0' 'a' | fold -w 1000",
          Text("toolu_bigbash")),
         ("Read", "mid.txt", Sealed("mid.txt"))),
        declared=("big done", "done big"), answer=None,  # two declared with the same words
        cost="0.005", cents=1, outside=frozenset({"/dev/zero"}),
        sealed_as={"big.txt": sha("sealed big"), "mid.txt": sha("sealed mid")}),
    # bwrap killed (-9/-15) during `sleep 30` or while waiting for the API: no result line.
    "k_sigkill": Expect("killed", KILLED_BASH, retryable=True, reason="signal 9"),
    "k_sigterm": Expect("killed", KILLED_BASH, retryable=True, reason="signal 15"),
    "k_sigterm_during_api": Expect("killed", (("Read", "docs/x.md", Sealed("docs/x.md")),),
                                   retryable=True, reason="signal 15"),
    # The CLI itself signalled (no bwrap; its folder <run:NAME>): SIGTERM while waiting for
    # the API exits 143 = 128 + SIGTERM with no result line. Under bwrap the runner sees
    # only that status, and docs/batch.md's `killed` is "the harness ended by a signal".
    "k2_direct_sigterm_during_api": Expect(
        "killed", (("Read", "docs/x.md", Sealed("docs/x.md")),), retryable=True),
    # SIGINT during a tool: error_during_execution, is_error, exit 1; 1 billed turn.
    "k2_direct_sigint": Expect("harness-error", (("Bash", "sleep 30", Text("toolu_sleep")),),
                               cost="0.001", cents=1, reason="error_during_execution"),
    # SIGTERM during the tool: the tool dies (Exit code 137), the session carries on; 2 turns.
    "k2_direct_sigterm": Expect("recorded", (("Bash", "sleep 30", Text("toolu_sleep")),),
                                declared=("never",), answer="never", cost="0.002", cents=1),
    # --include-partial-messages: stream_event lines are ignored; one turn.
    "l_partial_messages": Expect("recorded", declared=("hello partial world",),
                                 answer="hello partial world", cost="0.001", cents=1),
}


# --- the run -----------------------------------------------------------------------------------

def lay_out(name: str, root: Path) -> tuple[Path, str]:
    """Write NAME.ws.txt's fully shown files under ``root``; return (workspace, config dir)."""
    workspace = root / "ws" if name.startswith("k2_") else root / "workspace"
    workspace.mkdir()
    for path, body in ws_files(name).items():
        if body is not None:
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_bytes(body)
    return workspace, str(root / "cfg") if name.startswith("k2_") else CONFIG_DIR


def stream_of(name: str, workspace: Path, root: Path) -> bytes:
    """NAME.jsonl with its workspace moved to ``workspace`` (k2_*: ``<run:NAME>`` to ``root``)."""
    data = (CAPTURES / f"{name}.jsonl").read_bytes()
    if name.startswith("k2_"):
        return data.replace(f"<run:{name}>".encode(), str(root).encode())
    return data.replace(CAPTURE_WS.encode(), str(workspace).encode())


def policy_for(name: str, config_dir: str) -> InitPolicy:
    mcp = ws_files(name).get(".mcp.json")
    declared = frozenset(json.loads(mcp)["mcpServers"]) if mcp else frozenset()
    return InitPolicy("dontAsk", declared, frozenset(), config_dir)


def sealed_manifest(name: str, want: Expect) -> dict[str, str]:
    """The workspace as sealed: ws.txt minus what the session created, with stated overrides."""
    manifest = {path: sha(body) for path, body in ws_files(name).items()
                if body is not None and path not in want.created}
    for path, sealed in want.sealed_as.items():
        manifest[path] = sealed if isinstance(sealed, str) else sha(sealed)
    return manifest


def observe(data: bytes, *, policy: InitPolicy, workspace: Path, exit_status: int) -> Observation:
    """Feed complete lines as the line reader hands them; a tail without newline is a cut."""
    observer = StreamObserver(policy=policy, workspace=workspace)
    *lines, tail = data.split(b"\n")
    for line in lines:
        observer.feed(line)
    return observer.finish(end="exited", exit_status=exit_status, tail=tail or None)


def expected_result(spec: Result, texts: dict[str, str], manifest: dict[str, str]) -> str | None:
    if isinstance(spec, Sealed):
        return manifest[spec.path]
    if isinstance(spec, Text):
        return sha(texts[spec.tool_use_id])
    return None


def test_every_capture_has_an_expectation() -> None:
    assert sorted(EXPECT) == sorted(p.stem for p in CAPTURES.glob("*.jsonl"))
    assert len(EXPECT) == 41


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_capture(name: str, tmp_path: Path) -> None:
    want = EXPECT[name]
    workspace, config_dir = lay_out(name, tmp_path)
    data = stream_of(name, workspace, tmp_path)
    manifest = sealed_manifest(name, want)
    obs = observe(data, policy=policy_for(name, config_dir), workspace=workspace,
                  exit_status=exit_status_of(name))

    assert obs.state == want.state, obs.reason
    for field_name, value in want.refusals:
        assert f"{field_name} = {value!r}: " in obs.reason, obs.reason
    assert want.reason in obs.reason
    assert obs.retryable is want.retryable
    assert obs.served_model == want.served
    assert obs.cost_usd == (Decimal(want.cost) if want.cost is not None else None)
    assert cost_cents([obs.cost_usd]).cents == want.cents
    assert want.cents == (math.ceil(Decimal(want.cost) * 100) if want.cost else 0)
    assert obs.outside_paths == want.outside
    assert obs.anomaly_count == 0
    assert obs.orphan_results == ()
    assert obs.claude_code_version == ("2.1.197" if data else None)

    texts = result_texts(data)
    expected_calls = [(tool, argument.replace("{ws}", str(workspace)),
                       expected_result(spec, texts, manifest))
                      for tool, argument, spec in want.calls]
    # What the ledger keeps for every state, and the event's calls for a recorded one.
    calls = observed_calls(obs.calls, workspace=workspace, manifest=manifest)
    assert [(c.tool, c.argument, c.result if "result" in c.model_fields_set else None)
            for c in calls] == expected_calls

    if want.state != "recorded":
        with pytest.raises(ValueError, match="only a recorded session"):
            build_event(obs, probe="p", session="r1", workspace=workspace, manifest=manifest,
                        declared_answers=want.declared, corpus_ids=CORPUS_IDS)
        return
    event = build_event(obs, probe="p", session="r1", workspace=workspace, manifest=manifest,
                        declared_answers=want.declared, corpus_ids=CORPUS_IDS)
    assert event.calls == calls
    after = ws_files(name)
    assert [(a.path, a.result if "result" in a.model_fields_set else None,
             tuple(a.cites) if a.cites is not None else None)
            for a in event.produced or []] == [
        (path, sha(after[path] or b"") if exists else None, cites if exists else None)
        for path, exists, cites in want.produced]
    assert all("findings" not in a.model_fields_set for a in event.produced or [])  # no checker
    assert "answer" in event.model_fields_set
    assert event.answer == want.answer


# --- captures read for one particular fact ----------------------------------------------------

def test_capture_d_subagent_task_in_init_agent_in_calls() -> None:
    """RC-10 ``tool`` is the name the stream gives: the init line lists the subagent tool as
    Task, the call says Agent (STREAM_JSON_FACTS 1); neither is renamed."""
    lines = [json.loads(x) for x in (CAPTURES / "d_subagent.jsonl").read_bytes().splitlines()]
    init = next(x for x in lines if x.get("subtype") == "init")
    assert "Task" in init["tools"] and "Agent" not in init["tools"]
    obs = observe((CAPTURES / "d_subagent.jsonl").read_bytes(),
                  policy=policy_for("d_subagent", CONFIG_DIR), workspace=Path(CAPTURE_WS),
                  exit_status=0)
    assert [c.tool for c in obs.calls] == ["Agent", "Read"]
    assert [c.in_subagent for c in obs.calls] == [False, True]


def test_capture_c_bash_two_inits_two_results_last_result_wins() -> None:
    """A session can print several init and result lines (FACTS 0): every init is checked
    (RC-07), and the LAST result decides the state, the cost and the final message."""
    data = (CAPTURES / "c_bash.jsonl").read_bytes()
    assert data.count(b'"subtype":"init"') == 2 and data.count(b'"type":"result"') == 2
    obs = observe(data, policy=policy_for("c_bash", CONFIG_DIR), workspace=Path(CAPTURE_WS),
                  exit_status=0)
    assert (obs.cost_usd, obs.final_text) == (Decimal("0.009000000000000001"),
                                              "(script exhausted)")
    second_init_refused = data.replace(b'"permissionMode":"dontAsk"', b'"permissionMode":"plan"')
    first = second_init_refused.index(b'"permissionMode":"plan"')
    mixed = (data[:first] + b'"permissionMode":"dontAsk"'
             + second_init_refused[first + len(b'"permissionMode":"plan"'):])
    obs = observe(mixed, policy=policy_for("c_bash", CONFIG_DIR), workspace=Path(CAPTURE_WS),
                  exit_status=0)
    assert obs.state == "refused-init"
    assert "permissionMode = 'plan': " in obs.reason


def test_capture_g_config_without_plugin_is_env_fault() -> None:
    """g_config's init with the plugin and its namespaced skill taken away: nothing left to
    refuse, and ``broken``, declared by the workspace's .mcp.json, reported failed: env-fault,
    retryable, its cost counted (docs/batch.md "Session states")."""
    lines = (CAPTURES / "g_config.jsonl").read_bytes().split(b"\n")
    for index, line in enumerate(lines):
        if b'"subtype":"init"' in line:
            init = json.loads(line)
            init["plugins"] = []
            init["skills"] = [s for s in init["skills"] if ":" not in s]
            lines[index] = json.dumps(init).encode()
    obs = observe(b"\n".join(lines), policy=policy_for("g_config", CONFIG_DIR),
                  workspace=Path(CAPTURE_WS), exit_status=0)
    assert (obs.state, obs.retryable, obs.failed_mcp_servers) == ("env-fault", True, ("broken",))
    assert obs.reason == ("env-fault: mcp_servers name = 'broken': declared by the workspace's "
                          ".mcp.json, status 'failed'")
    assert obs.cost_usd == Decimal("0.003")


def test_capture_f_529_error_text_never_reaches_the_answer_rule() -> None:
    """RC-13 applies only to recorded sessions: the synthetic error message of a failed
    session is neither the final message nor an answer, even if it were declared."""
    obs = observe((CAPTURES / "f_529_always.jsonl").read_bytes(),
                  policy=policy_for("f_529_always", CONFIG_DIR), workspace=Path(CAPTURE_WS),
                  exit_status=1)
    assert obs.final_text is None  # synthetic lines are not the final message
    with pytest.raises(ValueError, match="only a recorded session"):
        build_event(obs, probe="p", session="r1", workspace=Path(CAPTURE_WS), manifest={},
                    declared_answers=["API Error: Repeated 529 Overloaded errors."],
                    corpus_ids=())


# --- bug inputs (tests/fixtures/bug_inputs/README.md gives the right behaviour per kind) ------

BUG_INPUTS = FIXTURES / "bug_inputs"
BC_WS = Path("/ws")
BC_POLICY = InitPolicy("dontAsk", frozenset(json.loads(
    (BUG_INPUTS / "BC-08_mcp.json").read_text())["mcpServers"]), frozenset(), "/cfg")
"""The shared fixture: workspace /ws, config dir /cfg, a .mcp.json declaring only `docs`."""
BC_ANSWERS = ("HW-DR-0052",)
NOTES = "# notes\nregister: HW-DR-0051 (retired), HW-DR-0052 (current)\n"
"""notes.md as sealed: the Read's tool_result content is the whole file."""
BC_MANIFEST = {"notes.md": sha(NOTES)}


def bug(name: str, *, exit_status: int = 0, data: bytes | None = None) -> Observation:
    raw = data if data is not None else (BUG_INPUTS / f"{name}.jsonl").read_bytes()
    return observe(raw, policy=BC_POLICY, workspace=BC_WS, exit_status=exit_status)


def bc_event(obs: Observation) -> Event:
    return build_event(obs, probe="p", session="r1", workspace=BC_WS, manifest=BC_MANIFEST,
                       declared_answers=BC_ANSWERS, corpus_ids=CORPUS_IDS)


def test_bc01_no_result_line_keeps_the_calls_cost_unknown() -> None:
    """BC-01: complete lines, no result line, exit 0 -> no-result: no event, retryable, cost
    unknown (the arm's figure then a lower bound, RC-14), the observed Read kept (its sealed
    digest) for the ledger."""
    obs = bug("BC-01")
    assert (obs.state, obs.retryable, obs.cost_usd) == ("no-result", True, None)
    assert cost_cents([obs.cost_usd]).lower_bound
    calls = observed_calls(obs.calls, workspace=BC_WS, manifest=BC_MANIFEST)
    assert [(c.tool, c.argument, c.result) for c in calls] == [("Read", "notes.md", sha(NOTES))]
    with pytest.raises(ValueError, match="only a recorded session"):
        bc_event(obs)


def test_bc03_line_of_1_4_mb_is_read_whole_and_the_rest_read() -> None:
    """BC-03: one ~1.4 MB line (an image read: base64, no text block). The Read's result is the
    digest of its text, "" (the image file is not sealed here), and the lines after it are read:
    the session is recorded with its answer."""
    obs = bug("BC-03")
    assert obs.state == "recorded"
    assert [(c.tool, c.argument, c.result_digest) for c in obs.calls] == [
        ("Read", "shot.png", sha(""))]
    assert bc_event(obs).answer == "HW-DR-0052"


def test_bc03_line_over_the_cap_names_line_and_size() -> None:
    """BC-03, the other half: a line over the reader's cap ends the session as line-too-long,
    with a reason naming the line number and its size (never a silent skip)."""
    observer = StreamObserver(policy=BC_POLICY, workspace=BC_WS)
    for line in (BUG_INPUTS / "BC-03.jsonl").read_bytes().split(b"\n")[:2]:
        observer.feed(line)
    obs = observer.finish(end="line-too-long", exit_status=-15, tail=None,
                          too_long=LineTooLong(line_number=3, size_bytes=1048576,
                                               limit_bytes=1048576, complete=False))
    assert (obs.state, obs.retryable, obs.cost_usd) == ("line-too-long", False, None)
    assert obs.reason == ("line-too-long: stdout line 3 is at least 1048576 bytes, over the "
                          "line cap of 1048576 bytes")
    assert [c.tool for c in obs.calls] == ["Read"]  # what came before is kept


def test_bc05_non_json_lines_are_anomalies() -> None:
    """BC-05: a banner before init and a debug line between a tool_use and its result: two
    anomalies (line numbers and text kept aside, never merged), no refusal, pairing and answer
    unaffected."""
    obs = bug("BC-05")
    assert (obs.state, obs.anomaly_count) == ("recorded", 2)
    assert [(a.line_number, a.excerpt) for a in obs.anomalies] == [
        (1, "Now using node v20.11.1 (npm v10.2.4)"),
        (4, "[log_7f3a21] sending request {method: 'post', url: "
            "'https://api.example.invalid/v1/messages'}")]
    assert obs.calls[0].result_digest == sha(NOTES)
    assert bc_event(obs).answer == "HW-DR-0052"


def test_bc07_hook_lines_before_init_are_allowed() -> None:
    """BC-07: hook_started/hook_response before init are allowed; system/status and
    rate_limit_event after it are ignored."""
    obs = bug("BC-07")
    assert (obs.state, obs.refusals, obs.cost_usd) == ("recorded", (), Decimal("0.0123"))


def test_bc07_assistant_before_init_refuses_naming_line_and_type() -> None:
    lines = (BUG_INPUTS / "BC-07.jsonl").read_bytes().split(b"\n")
    moved = [lines[5], *lines[:5], *lines[6:]]  # the first assistant line moved before init
    obs = bug("BC-07", data=b"\n".join(moved))
    assert obs.state == "refused-init"
    assert obs.reason == ("line 1 before the init line: type = 'assistant': only "
                          "system/hook_response, system/hook_started may precede the init "
                          "line (docs/glossary.md: RC-07)")


def test_bc07_non_json_before_init_is_no_refusal() -> None:
    obs = bug("BC-07", data=b"banner\n" + (BUG_INPUTS / "BC-07.jsonl").read_bytes())
    assert (obs.state, obs.anomaly_count) == ("recorded", 1)


VARIANTS = [json.loads(line) for line in
            (BUG_INPUTS / "BC-08_variants.jsonl").read_text().splitlines() if line.strip()]
VERDICT_STATE = {"accept": "recorded", "refuse": "refused-init",
                 "accept_with_env_fault": "env-fault"}


@pytest.mark.parametrize("variant", VARIANTS, ids=[v["_variant"] for v in VARIANTS])
def test_bc08_variant_as_a_whole_session(variant: dict[str, object]) -> None:
    """BC-08: each drifted init line as the init of BC-07's session: the state follows
    BC-08_expected.json's verdict (refuse -> refused-init, accept -> recorded, declared
    server failed -> env-fault)."""
    expected = json.loads((BUG_INPUTS / "BC-08_expected.json").read_text())[variant["_variant"]]
    lines = (BUG_INPUTS / "BC-07.jsonl").read_bytes().split(b"\n")
    lines[2] = json.dumps(variant).encode()
    obs = bug("BC-08", data=b"\n".join(lines))
    assert obs.state == VERDICT_STATE[expected["verdict"]], obs.reason
    if obs.state == "refused-init":
        assert re.match(r"\S+ (= .+: |is missing)", obs.reason), obs.reason


def test_bc10a_is_error_wins_over_subtype_success() -> None:
    """BC-10a: subtype success, is_error true, exit 0 -> harness-error; "Rate limit" text with
    a null status: retryable; the realized cost (0) recorded; no event, so the error text never
    reaches the answer rule (even declared)."""
    obs = bug("BC-10a")
    assert (obs.state, obs.retryable, obs.cost_usd) == ("harness-error", True, Decimal(0))
    with pytest.raises(ValueError, match="only a recorded session"):
        build_event(obs, probe="p", session="r1", workspace=BC_WS, manifest={},
                    declared_answers=["API Error: Rate limit reached"], corpus_ids=())


def test_bc10b_error_during_execution_with_exit_zero() -> None:
    """BC-10b: error_during_execution with exit 0 -> harness-error (is_error wins over the exit
    code), not retryable, cost 0.0071 recorded, the Read kept."""
    obs = bug("BC-10b", exit_status=0)
    assert (obs.state, obs.retryable, obs.cost_usd) == ("harness-error", False, Decimal("0.0071"))
    assert obs.result_subtype == "error_during_execution"
    assert [c.argument for c in obs.calls] == ["notes.md"]


def test_bc13_fake_claude_stdout_is_recorded() -> None:
    """BC-13's stdout (BC-01 then its printf'd result line, after 256 KiB of stderr): recorded,
    the answer HW-DR-0052, cost 0.0123. The stderr flood itself is driven under bwrap in
    tests/integration/test_record_standins.py and by tests/recorder/test_driver.py."""
    script = (BUG_INPUTS / "BC-13_fake_claude.sh").read_text()
    result = re.search(r"printf '%s\\n' '(.*)'", script)
    assert result is not None
    obs = bug("BC-13", data=(BUG_INPUTS / "BC-01.jsonl").read_bytes() + result.group(1).encode()
              + b"\n")
    assert (obs.state, obs.cost_usd) == ("recorded", Decimal("0.0123"))
    assert bc_event(obs).answer == "HW-DR-0052"


def test_every_bug_input_has_a_test() -> None:
    """Each file of bug_inputs/ is named by a test (BC-15/16/17 by the sandbox and driver tests)."""
    tests = Path(__file__).resolve().parent.parent
    sources = "\n".join(p.read_text() for p in tests.rglob("test_*.py"))
    for path in BUG_INPUTS.iterdir():
        if path.name != "README.md":
            assert path.name.split(".")[0].split("_")[0] in sources, path.name
