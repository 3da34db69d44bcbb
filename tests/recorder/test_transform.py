"""The transform: pairing, final message, anomalies, init lines, states, arguments (RC-07..RC-13).

Streams here are built line by line so each rule is tested alone; the real
captures are in test_captures.py.
"""

from __future__ import annotations

import gc
import hashlib
import json
import tracemalloc
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import pytest

from recorder._digest import digest_text
from recorder._harness import parse_line, tool_result_text
from recorder._initcheck import InitPolicy
from recorder._record_bounds import RecordBounds
from recorder._transform import (
    ANOMALIES_KEPT,
    Observation,
    OrphanResult,
    StreamObserver,
    call_argument,
    canonical_json,
)
from recorder._vocab import harness_error_retryable

WS = Path("/workspace")
POLICY = InitPolicy("dontAsk", frozenset({"docs"}), frozenset(), "/home/agent")


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode()


def init(**changes: Any) -> bytes:
    line = {"type": "system", "subtype": "init", "cwd": "/workspace", "mcp_servers": [],
            "permissionMode": "dontAsk", "skills": [], "plugins": [],
            "memory_paths": {"auto": "/home/agent/projects/-workspace/memory/"},
            "claude_code_version": "2.1.197"}
    line.update(changes)
    return _line(line)


def asst(block: dict[str, Any], *, msg: str = "msg_1", model: str = "served-1",
         parent: str | None = None) -> bytes:
    return _line({"type": "assistant", "parent_tool_use_id": parent,
                  "message": {"id": msg, "model": model, "content": [block]}})


def text(value: str, **kw: Any) -> bytes:
    return asst({"type": "text", "text": value}, **kw)


def tool_use(tid: str, name: str, tool_input: dict[str, Any], **kw: Any) -> bytes:
    return asst({"type": "tool_use", "id": tid, "name": name, "input": tool_input}, **kw)


def tool_result(tid: str, content: Any, *, is_error: bool | None = None,
                parent: str | None = None) -> bytes:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return _line({"type": "user", "parent_tool_use_id": parent,
                  "message": {"role": "user", "content": [block]}})


def result(*, is_error: bool = False, cost: str = "0.01", subtype: str = "success",
           status: int | None = None, text_: str | None = "done") -> bytes:
    raw = json.dumps({"type": "result", "subtype": subtype, "is_error": is_error,
                      "api_error_status": status, "num_turns": 2, "result": text_,
                      "total_cost_usd": "COST"})
    return raw.replace('"COST"', cost).encode()


def observe(*lines: bytes, end: str = "exited", exit_status: int | None = 0,
            tail: bytes | None = None, policy: InitPolicy = POLICY,
            bounds: RecordBounds | None = None) -> Observation:
    observer = StreamObserver(policy=policy, workspace=WS, bounds=bounds)
    for line in lines:
        observer.feed(line)
    return observer.finish(end=end, exit_status=exit_status, tail=tail)  # type: ignore[arg-type]


# --- harness lines -----------------------------------------------------------------------------

def test_parse_line_tolerant_and_exact() -> None:
    assert parse_line(b'{"total_cost_usd": 0.011000000000000003}') == {
        "total_cost_usd": Decimal("0.011000000000000003")}
    assert parse_line(b"not json") is None
    assert parse_line(b"[1, 2]") is None  # JSON, but not an object
    assert parse_line(b'"str"') is None
    assert parse_line(b"\xff\xfe{") is None


def test_tool_result_text_joins_text_blocks_with_newline() -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "image", "source": {}},
              {"type": "text", "text": "b"}]
    assert tool_result_text({"content": blocks}) == "a\nb"
    assert tool_result_text({"content": "plain"}) == "plain"
    assert tool_result_text({}) == ""


# --- calls (RC-10) -----------------------------------------------------------------------------

def test_calls_pair_results_by_id_not_adjacency() -> None:
    obs = observe(
        init(),
        tool_use("t0", "Bash", {"command": "ls"}),
        tool_use("t1", "Bash", {"command": "pwd"}),
        tool_use("t2", "Bash", {"command": "id"}),
        tool_result("t2", "r2"), tool_result("t0", "r0"), tool_result("t1", "r1"),
        text("ok", msg="m2"), result(),
    )
    assert [(c.argument, c.result_digest) for c in obs.calls] == [
        ("ls", digest_text("r0")), ("pwd", digest_text("r1")), ("id", digest_text("r2"))]


def test_calls_result_missing_and_orphan() -> None:
    obs = observe(
        init(),
        tool_use("t0", "Read", {"file_path": "/workspace/a.md"}),
        tool_result("nobody", "stray"),
        text("ok", msg="m2"), result(),
    )
    assert len(obs.calls) == 1
    assert obs.calls[0].result_digest is None  # never arrived: no result
    assert obs.orphan_results == (OrphanResult(3, "nobody", digest_text("stray"), False),)


def test_rc10_pairing_by_id_across_interleaved_subagent_lines() -> None:
    """RC-10: calls in tool_use order, subagent calls included, each paired with its result by
    ``tool_use_id``, never by adjacency: a main Agent and a main Bash run in parallel, the
    subagent's two Reads interleave with them, and every result arrives in completion order."""
    obs = observe(
        init(),
        tool_use("A", "Agent", {"description": "look", "prompt": "p"}, msg="m1"),
        tool_use("B", "Bash", {"command": "sleep 1; echo main"}, msg="m1"),
        tool_use("s1", "Read", {"file_path": "a.md"}, msg="sub1", parent="A"),
        tool_use("s2", "Read", {"file_path": "b.md"}, msg="sub1", parent="A"),
        tool_result("s2", "B-BODY", parent="A"),
        tool_result("B", "main"),
        tool_result("s1", "A-BODY", parent="A"),
        tool_result("A", "agent said"),
        text("done", msg="m2"), result(),
    )
    assert [(c.tool, c.argument, c.in_subagent, c.result_digest) for c in obs.calls] == [
        ("Agent", "look", False, digest_text("agent said")),
        ("Bash", "sleep 1; echo main", False, digest_text("main")),
        ("Read", "a.md", True, digest_text("A-BODY")),
        ("Read", "b.md", True, digest_text("B-BODY")),
    ]
    assert obs.orphan_results == ()


def test_rc10_orphan_result_and_unanswered_tool_use_are_both_kept() -> None:
    """RC-10: a tool_use whose result never arrives stays a call with no result; a result with
    no earlier tool_use (or a second result for one already answered) is never dropped: it is
    kept as an orphan with its line, id and digest (the ledger and the prose carry it)."""
    obs = observe(
        init(),
        tool_result("early", "before its tool_use"),  # line 2
        tool_use("t0", "Bash", {"command": "ls"}),
        tool_use("t1", "Bash", {"command": "sleep 99"}),
        tool_result("t0", "first"),
        tool_result("t0", "again"),  # line 6: t0 already answered
        tool_use("early", "Read", {"file_path": "x.md"}),
        text("ok", msg="m2"), result(),
    )
    assert [(c.argument, c.result_digest) for c in obs.calls] == [
        ("ls", digest_text("first")), ("sleep 99", None), ("x.md", None)]
    assert obs.orphan_results == (
        OrphanResult(2, "early", digest_text("before its tool_use"), False),
        OrphanResult(6, "t0", digest_text("again"), True),
    )
    assert obs.state == "recorded"


def test_calls_include_subagent_calls_in_tool_use_order() -> None:
    obs = observe(
        init(),
        tool_use("A", "Agent", {"description": "Read x", "prompt": "p"}),
        tool_use("s1", "Read", {"file_path": "/workspace/x.md"}, msg="sub", parent="A"),
        tool_result("s1", "body", parent="A"),
        tool_result("A", [{"type": "text", "text": "sub said"},
                          {"type": "text", "text": "agentId: 1"}]),
        text("main", msg="m3"), result(),
    )
    assert [(c.tool, c.argument, c.in_subagent) for c in obs.calls] == [
        ("Agent", "Read x", False), ("Read", "x.md", True)]
    assert obs.calls[0].result_digest == digest_text("sub said\nagentId: 1")


def test_calls_failed_result_is_marked() -> None:
    obs = observe(init(), tool_use("t", "Read", {"file_path": "nope.md"}),
                  tool_result("t", "File does not exist.", is_error=True),
                  text("x", msg="m2"), result())
    call = obs.calls[0]
    assert (call.result_is_error, call.read_path, call.is_read) == (True, "nope.md", True)


def test_calls_keep_no_result_bytes() -> None:
    """Memory: a 4 MiB tool_result leaves a digest, not its bytes."""
    big = "a" * (4 << 20)
    observer = StreamObserver(policy=POLICY, workspace=WS)
    observer.feed(init())
    observer.feed(tool_use("t", "Bash", {"command": "yes"}))
    line = tool_result("t", big)
    del big
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    observer.feed(line)
    del line
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 << 10


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Read", {"file_path": "/workspace/docs/x.md", "offset": 2}, "docs/x.md"),
        ("Read", {"file_path": "/etc/hostname"}, "/etc/hostname"),
        ("Write", {"file_path": "/workspace/new.txt", "content": "x"}, "new.txt"),
        ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, "src/app.py"),
        ("NotebookEdit", {"notebook_path": "/workspace/nb.ipynb", "new_source": "x"}, "nb.ipynb"),
        ("Bash", {"command": "cat > f <<'EOF'\nx\nEOF", "description": "d"},
         "cat > f <<'EOF'\nx\nEOF"),
        ("Grep", {"pattern": "TODO", "path": "/workspace", "-n": True}, "TODO in ."),
        ("Grep", {"pattern": "TODO", "path": "/workspace/docs/a.md"}, "TODO in docs/a.md"),
        ("Grep", {"pattern": "TODO", "path": "docs"}, "TODO in docs"),
        ("Grep", {"pattern": "TODO", "path": "/etc"}, "TODO in /etc"),
        ("Grep", {"pattern": "TODO"}, "TODO"),
        ("Glob", {"pattern": "**/*.md", "path": "docs"}, "**/*.md"),
        ("Agent", {"description": "Read x", "prompt": "long"}, "Read x"),
        ("Task", {"description": "Read x", "prompt": "long"}, "Read x"),
        ("Skill", {"skill": "demo-plugin:plug-skill"}, "demo-plugin:plug-skill"),
        ("mcp__echo__echo", {"text": "ping", "a": "é"}, '{"a":"é","text":"ping"}'),
        ("MultiEdit", {"file_path": "/workspace/n.txt", "edits": []}, "n.txt"),
        ("MultiEdit", {"file_path": "/etc/n.txt", "edits": []}, "/etc/n.txt"),
        ("Read", {"path": "no file_path"}, '{"path":"no file_path"}'),  # missing key: canonical
    ],
)
def test_call_argument_table(tool: str, tool_input: dict[str, Any], expected: str) -> None:
    assert call_argument(tool, tool_input, workspace=WS) == expected


def test_canonical_json_keeps_decimal_numbers() -> None:
    assert canonical_json(parse_line(b'{"b": 1.5, "a": [2]}')) == '{"a":[2],"b":1.5}'


# --- produced (RC-11) --------------------------------------------------------------------------

def test_produced_paths_from_write_tools_whatever_their_result() -> None:
    obs = observe(
        init(),
        tool_use("w", "Write", {"file_path": "/workspace/a.txt", "content": "x"}),
        tool_result("w", "denied", is_error=True),
        tool_use("e", "Edit", {"file_path": "/workspace/a.txt", "old_string": "",
                               "new_string": ""}),
        tool_use("m", "MultiEdit", {"file_path": "/workspace/b.txt", "edits": []}),
        tool_use("n", "NotebookEdit", {"notebook_path": "/workspace/nb.ipynb", "new_source": ""}),
        tool_use("s", "Write", {"file_path": "/workspace/sub.txt", "content": ""},
                 msg="s", parent="e"),
        tool_use("r", "Read", {"file_path": "/workspace/c.txt"}),
        text("x", msg="m2"), result(),
    )
    assert obs.produced_paths == ("/workspace/a.txt", "/workspace/b.txt", "/workspace/nb.ipynb",
                                  "/workspace/sub.txt")


# --- final message, served model, cost (RC-13, RC-14) ------------------------------------------

def test_final_text_groups_blocks_by_message_id() -> None:
    obs = observe(
        init(),
        text("Reason", msg="m1"), text("ing.\n", msg="m1"),
        tool_use("t", "Bash", {"command": "ls"}, msg="m1"),
        tool_result("t", "x"),
        text("I checked.", msg="m2"), text("\nyes", msg="m2"),
        result(),
    )
    assert obs.final_text == "I checked.\nyes"


def test_final_text_skips_synthetic_and_subagent_lines() -> None:
    obs = observe(
        init(),
        text("real answer", msg="m1", model="served-2"),
        text("sub text", msg="s1", model="sub-model", parent="A"),
        text("API Error: Overloaded", msg="uuid-1", model="<synthetic>"),
        result(is_error=False),
    )
    assert obs.final_text == "real answer"
    assert obs.served_model == "served-2"


def test_final_text_is_before_the_last_result_line() -> None:
    # captures/c_bash: result, background task, a second init, a new turn, a second result.
    obs = observe(init(), text("first", msg="m1"), result(cost="0.008"),
                  init(), text("second", msg="m2"), result(cost="0.009"))
    assert obs.final_text == "second"
    assert obs.cost_usd == Decimal("0.009")  # the last result line of the attempt


def test_final_text_none_when_final_message_has_no_text() -> None:
    obs = observe(init(), text("earlier", msg="m1"),
                  tool_use("t", "Read", {"file_path": "x"}, msg="m2"), result())
    assert obs.final_text is None


def test_cost_is_exact_decimal() -> None:
    obs = observe(init(), text("x"), result(cost="0.011000000000000003"))
    assert obs.cost_usd == Decimal("0.011000000000000003")
    assert observe(init(), text("x"), result(cost="0")).cost_usd == Decimal(0)


# --- init lines and anomalies (RC-07) ----------------------------------------------------------

def test_every_init_line_is_checked() -> None:
    obs = observe(init(), text("x"), result(), init(permissionMode="bypassPermissions"),
                  text("y", msg="m2"), result())
    assert obs.state == "refused-init"
    assert obs.reason == ("permissionMode = 'bypassPermissions': the driver asked for "
                          "'dontAsk' (an allow-list of one) (docs/glossary.md: RC-07)")


def test_no_init_line_refuses() -> None:
    obs = observe(text("x"), exit_status=1)
    assert obs.state == "refused-init"
    assert "no init line" in obs.reason
    empty = observe(exit_status=1)
    assert (empty.state, empty.reason, empty.cost_usd) == (
        "refused-init", "no init line (type 'system', subtype 'init') on stdout: what "
        "the session loaded is unknown (docs/glossary.md: RC-07)", None)


def test_hook_events_before_init_are_allowed() -> None:
    hook = _line({"type": "system", "subtype": "hook_started", "hook_id": "h"})
    response = _line({"type": "system", "subtype": "hook_response", "hook_id": "h"})
    assert observe(hook, response, init(), text("x"), result()).state == "recorded"


@pytest.mark.parametrize(
    "early",
    [{"type": "assistant", "message": {"id": "m", "content": []}},
     {"type": "system", "subtype": "status"},
     {"type": "stream_event", "event": {}}],
    ids=["assistant", "system-status", "stream_event"],
)
def test_other_json_before_init_refuses(early: dict[str, Any]) -> None:
    obs = observe(_line(early), init(), text("x"), result())
    assert obs.state == "refused-init"
    assert obs.reason.startswith("line 1 before the init line")


def test_non_json_lines_are_anomalies_never_refusals() -> None:
    obs = observe(b"Now using node v20", init(),
                  tool_use("t", "Read", {"file_path": "a"}), b"[log] debug {",
                  tool_result("t", "x"),
                  text("yes", msg="m2"), result())
    assert obs.state == "recorded"
    assert obs.anomaly_count == 2
    assert [(a.line_number, a.excerpt) for a in obs.anomalies] == [
        (1, "Now using node v20"), (4, "[log] debug {")]
    assert obs.calls[0].result_digest == digest_text("x")
    assert obs.final_text == "yes"


def test_anomalies_kept_are_bounded_and_truncated() -> None:
    noise = [b"x" * 10_000] * (ANOMALIES_KEPT + 5)
    obs = observe(init(), *noise, text("x"), result())
    assert obs.anomaly_count == ANOMALIES_KEPT + 5
    assert len(obs.anomalies) == ANOMALIES_KEPT
    assert all(len(a.excerpt) < 1000 and a.size_bytes == 10_000 for a in obs.anomalies)


def _injected_final(answer: str) -> list[bytes]:
    """A final assistant line with another writer's object injected into its middle.

    What is left on stdout is two non-JSON halves where the final message was.
    """
    whole = text(f"Checked the index.\n{answer}", msg="m-final")
    cut = whole.index(answer.encode()) + 3
    return [whole[:cut] + b'{"type":"system","subtype":"status"}', whole[cut:]]


def test_a_non_json_line_where_the_final_message_is_makes_the_session_damaged() -> None:
    # The earlier message's last line is a declared answer: it must not become the answer.
    lines = [init(), text("Looking.\nHW-DR-0052", msg="m-early"), *_injected_final("HW-DR-0052"),
             result()]
    obs = observe(*lines)
    assert obs.state == "damaged"
    assert obs.reason.startswith("damaged: line 4 is not JSON")
    assert obs.retryable is True
    assert obs.cost_usd == Decimal("0.01")  # the table: cost counted


def test_an_anomaly_before_the_final_message_leaves_the_session_recorded() -> None:
    obs = observe(init(), b"[debug] a stray line", text("yes", msg="m2"), result())
    assert obs.state == "recorded" and obs.anomaly_count == 1


def test_an_anomaly_after_the_result_is_not_where_the_final_message_is() -> None:
    obs = observe(init(), text("yes", msg="m2"), result(), b"[debug] after the result")
    assert obs.state == "recorded"


def test_damage_is_judged_against_the_last_result() -> None:
    # Background subagents: an early result, a stray line, then the main thread speaks again
    # and a second result ends the session. The last result and the last message decide.
    obs = observe(init(), text("one", msg="m1"), result(), b"noise", text("two", msg="m2"),
                  result())
    assert obs.state == "recorded" and obs.final_text == "two"


def test_an_error_result_stays_a_harness_error_whatever_stands_before_it() -> None:
    obs = observe(init(), text("x", msg="m1"), b"noise", result(is_error=True, status=500))
    assert obs.state == "harness-error"


def test_declared_mcp_failed_is_env_fault() -> None:
    obs = observe(init(mcp_servers=[{"name": "docs", "status": "failed"}]), text("x"), result())
    assert (obs.state, obs.retryable, obs.failed_mcp_servers) == ("env-fault", True, ("docs",))


# --- states (docs/batch.md "Session states") ---------------------------------------------

def test_state_recorded() -> None:
    obs = observe(init(), text("x"), result())
    assert (obs.state, obs.retryable) == ("recorded", False)


@pytest.mark.parametrize(
    ("end", "state"),
    [("line-too-long", "line-too-long"), ("timed-out", "timed-out"), ("watchdog", "timed-out")],
)
def test_state_from_driver_end_wins_without_a_refusal(end: str, state: str) -> None:
    obs = observe(init(), text("x"), result(), end=end, exit_status=-9)
    assert obs.state == state


@pytest.mark.parametrize("end", ["line-too-long", "timed-out", "watchdog", "exited"])
def test_state_refusal_seen_in_the_stream_wins_over_how_it_ended(end: str) -> None:
    # RC-07: an init line that refuses is a fact of the session however its stream
    # ended; the state is refused-init (not retryable: a rerun loads the same thing).
    obs = observe(init(permissionMode="plan"), text("x"), end=end, exit_status=-9,
                  tail=b'{"type":"res' if end == "exited" else None)
    assert (obs.state, obs.retryable) == ("refused-init", False)


@pytest.mark.parametrize("end", ["timed-out", "watchdog"])
def test_state_no_init_line_before_a_timeout_is_the_timeout(end: str) -> None:
    # "No init line" is decided only when nothing else explains the stream's end.
    assert observe(end=end, exit_status=-9).state == "timed-out"


def test_feed_says_which_lines_are_result_lines() -> None:
    """The driver's post-result grace starts at a result line the state is decided from:
    one after the init line; a result before it is a refusal, not a result."""
    observer = StreamObserver(policy=POLICY, workspace=WS)
    assert [observer.feed(line) for line in (result(), init(), text("x"), b"not json",
                                             result(), result(is_error=True))] == [
        False, False, False, False, True, True]


@pytest.mark.parametrize(("bwrap_status", "is_error", "state"), [
    (-15, False, "recorded"), (143, False, "recorded"), (-15, True, "harness-error")])
def test_a_harness_ended_after_the_post_result_grace_is_decided_from_what_it_printed(
    bwrap_status: int, is_error: bool, state: str,
) -> None:
    """docs/batch.md "Session states": ended by the runner after its result, the session is the
    last result's, never `killed` (that is a signal with no result line)."""
    obs = observe(init(), text("Done.\nanswer"), result(is_error=is_error),
                  end="post-result-grace", exit_status=bwrap_status)
    assert obs.state == state
    assert "post-result grace" in obs.reason and "ended by the runner" in obs.reason
    assert obs.final_text == "Done.\nanswer" and obs.cost_usd == Decimal("0.01")


def test_state_truncated_tail() -> None:
    obs = observe(init(), text("x"), tail=b'{"type":"res')
    assert (obs.state, obs.retryable, obs.cost_usd) == ("truncated", True, None)


def test_state_killed_vs_no_result() -> None:
    assert observe(init(), text("x"), exit_status=-9).state == "killed"
    assert observe(init(), text("x"), exit_status=0).state == "no-result"
    # bwrap reports a child ended by signal N as 128 + N (143 = SIGTERM, 137 = SIGKILL).
    assert observe(init(), text("x"), exit_status=143).state == "killed"
    assert observe(init(), text("x"), exit_status=137).state == "killed"
    assert observe(init(), text("x"), exit_status=1).state == "no-result"


def test_state_is_error_wins_over_subtype_and_exit_code() -> None:
    # BC-10a: subtype success with is_error true; BC-10b: error_during_execution, exit 0.
    a = observe(init(), text("API Error: Rate limit reached"),
                result(is_error=True, cost="0", text_="API Error: Rate limit reached"))
    b = observe(init(), result(is_error=True, subtype="error_during_execution", text_=""),
                exit_status=0)
    assert (a.state, b.state) == ("harness-error", "harness-error")
    assert (a.retryable, b.retryable) == (True, False)


@pytest.mark.parametrize(
    ("status", "text_", "retryable"),
    [
        (429, "API Error: Request rejected (429) · Rate limited", True),
        (500, "API Error: 500 Internal server error.", True),
        (503, "", True),
        (529, "", True),
        (None, "API Error: Repeated 529 Overloaded errors. The API is at capacity", True),
        (None, "API Error: Unable to connect to API (ECONNRESET)", True),
        (400, "Prompt is too long", False),
        (401, "Invalid API key · Fix external API key", False),
        (None, None, False),  # error_max_turns: no result text
        (None, "", False),  # error_during_execution
        (None, "I checked 500 lines", False),  # a number alone is not a provider error
    ],
)
def test_harness_error_retryable(status: int | None, text_: str | None, retryable: bool) -> None:
    assert harness_error_retryable(status, text_) is retryable


# --- outside paths (RC-08) per call and per session --------------------------------------------

def test_outside_paths_collected_per_call() -> None:
    obs = observe(
        init(),
        tool_use("a", "Read", {"file_path": "/etc/hostname"}),
        tool_use("b", "Bash", {"command": "cat /etc/hostname ~/.x"}),
        tool_use("c", "Bash", {"command": "dd if=$HOME/.x of=/dev/null"}),
        text("x", msg="m2"), result(),
    )
    assert obs.calls[0].outside_paths == {"/etc/hostname"}
    # ~ and $HOME are the session's config directory (the policy's), one path however named
    assert obs.calls[2].outside_paths == {"/home/agent/.x"}
    assert obs.outside_paths == {"/etc/hostname", "/home/agent/.x"}


ENDED_WITHOUT_RESULT: Final = "no-result"
"""An odd line is skipped (an anomaly, STYLE.md 5); the stream then ends without a result line."""


@pytest.mark.parametrize(
    ("odd", "state"),
    [
        (b'{"type":"assistant","message":"not an object"}', ENDED_WITHOUT_RESULT),
        (b'{"type":"assistant","message":{"content":"text, not blocks"}}', ENDED_WITHOUT_RESULT),
        (b'{"type":"assistant","message":{"content":[1,null,{"type":"tool_use"}]}}',
         ENDED_WITHOUT_RESULT),
        (b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":["x"],"name":"Bash",'
         b'"input":null}]}}', ENDED_WITHOUT_RESULT),
        (b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":{"a":1}}]}}',
         ENDED_WITHOUT_RESULT),
        (b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t",'
         b'"content":[{"text":5}]}]}}', ENDED_WITHOUT_RESULT),
        # a result line whose is_error is not exactly false fails closed
        (b'{"type":"result","is_error":"no","total_cost_usd":"0.1","api_error_status":true}',
         "harness-error"),
        # every init line is policed (RC-07): this one lacks the policed fields
        (b'{"type":"system","subtype":"init","mcp_servers":{}}', "refused-init"),
        (b'{"type":42}', ENDED_WITHOUT_RESULT),
        (b"{}", ENDED_WITHOUT_RESULT),
        (b"", ENDED_WITHOUT_RESULT),
        (b"1e999999", ENDED_WITHOUT_RESULT),
    ],
)
def test_an_odd_shape_raises_nothing_and_ends_the_session_as_its_rule_says(
        odd: bytes, state: str) -> None:
    """Every release adds shapes: nothing a line holds may raise (STYLE.md 5, tolerant parsing),
    and each odd line ends the session in the one state its rule gives."""
    observer = StreamObserver(policy=POLICY, workspace=WS)
    observer.feed(init())
    observer.feed(tool_use("t", "Bash", {"command": "ls"}))
    observer.feed(odd)
    observer.feed(text("x", msg="m2"))
    observation = observer.finish(end="exited", exit_status=0, tail=None)
    assert observation.state == state, observation.reason


def test_result_line_fails_closed() -> None:
    # is_error must be exactly false to record; a non-number cost is unknown, not zero.
    obs = observe(init(), text("x"), _line({"type": "result", "is_error": "false",
                                            "total_cost_usd": "0.1"}))
    assert (obs.state, obs.cost_usd) == ("harness-error", None)


def test_a_lone_surrogate_in_a_tool_result_has_a_digest_and_the_session_goes_on() -> None:
    # JSON text may escape a lone surrogate; UTF-8 cannot encode it. Its digest is that of its
    # three-byte form (surrogatepass), and nothing raises.
    line = b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t",' \
           b'"content":"a\\udc80b"}]}}'
    obs = observe(init(), tool_use("t", "Bash", {"command": "x"}), line, text("y", msg="m2"),
                  result())
    expected = "sha256:" + hashlib.sha256("a\udc80b".encode("utf-8", "surrogatepass")).hexdigest()
    assert obs.state == "recorded" and obs.calls[0].result_digest == expected


@pytest.mark.parametrize("cost", ["-1", "1e5000", "1000000.01", "true", '"0.5"'])
def test_a_malformed_cost_is_unknown_never_a_figure(cost: str) -> None:
    # A session's own total_cost_usd must not make the arm's cost (and transcript) unrenderable.
    obs = observe(init(), text("x", msg="m2"), result(cost=cost))
    assert obs.state == "recorded" and obs.cost_usd is None


def test_a_cost_within_bounds_is_exact() -> None:
    assert observe(init(), text("x", msg="m2"), result(cost="0.1")).cost_usd == Decimal("0.1")


def test_a_call_argument_past_the_bound_ends_the_session_limit_exceeded_never_cut() -> None:
    from recorder._transform import MAX_CALL_ARGUMENT_CHARS

    big = "x" * (MAX_CALL_ARGUMENT_CHARS + 1)
    obs = observe(init(), tool_use("t1", "Read", {"file_path": "a"}), tool_result("t1", "ok"),
                  tool_use("t2", "Grep", {"pattern": big}), tool_result("t2", "none"),
                  text("x", msg="m3"), result())
    assert obs.state == "limit-exceeded"
    assert obs.reason.startswith("limit-exceeded: the Grep call on stdout line 4 has an "
                                 f"argument of {len(big)} characters, over the "
                                 f"{MAX_CALL_ARGUMENT_CHARS}")
    assert [c.tool for c in obs.calls] == ["Read"]  # kept whole, or not at all
    assert obs.orphan_results == ()  # its result still pairs with it


def test_an_argument_at_the_bound_is_kept_whole() -> None:
    from recorder._transform import MAX_CALL_ARGUMENT_CHARS

    exact = "x" * MAX_CALL_ARGUMENT_CHARS
    obs = observe(init(), tool_use("t", "Grep", {"pattern": exact}), text("x", msg="m2"),
                  result())
    assert obs.state == "recorded" and obs.calls[0].argument == exact


def test_the_sessions_arguments_together_are_bounded_too() -> None:
    obs = observe(init(), tool_use("a", "Bash", {"command": "123456"}),
                  tool_use("b", "Bash", {"command": "7890ab"}), text("x", msg="m2"), result(),
                  bounds=RecordBounds(session_argument_chars=10))
    assert obs.state == "limit-exceeded" and "one session may add" in obs.reason
    assert [c.argument for c in obs.calls] == ["123456"]


def test_a_sandbox_limit_passed_is_limit_exceeded_whatever_the_stream_but_a_refusal_wins() -> None:
    """The sandbox ended the session for a limit (a kill: no result line); its reason is kept.
    RC-07 still wins: what the session loaded was refused before it could spend more."""
    reason = "limit-exceeded: the session tried to run more than 8 processes (--max-processes)"
    observer = StreamObserver(policy=POLICY, workspace=WS)
    for line in (init(), tool_use("t", "Bash", {"command": "f(){ f|f& };f"})):
        observer.feed(line)
    obs = observer.finish(end="exited", exit_status=-9, tail=None, limit_exceeded=reason)
    assert (obs.state, obs.reason, obs.retryable) == ("limit-exceeded", reason, False)
    assert [c.tool for c in obs.calls] == ["Bash"]
    refused = StreamObserver(policy=POLICY, workspace=WS)
    refused.feed(init(permissionMode="bypassPermissions"))
    obs = refused.finish(end="exited", exit_status=-9, tail=None, limit_exceeded=reason)
    assert obs.state == "refused-init"


def test_the_sessions_calls_and_orphans_together_are_bounded() -> None:
    """docs/recorder.md: at most `MAX_SESSION_CALLS` calls and orphan results per session;
    past them limit-exceeded, and nothing more is kept (no call, no produced path)."""
    obs = observe(init(), tool_use("a", "Bash", {"command": "x"}), tool_result("zz", "orphan"),
                  tool_use("b", "Bash", {"command": "y"}), tool_use("c", "Write",
                  {"file_path": "late.md", "content": "x"}), tool_result("zy", "orphan 2"),
                  text("x", msg="m2"), result(), bounds=RecordBounds(session_calls=3))  # fmt: skip
    assert obs.state == "limit-exceeded"
    assert "past the 3 calls and results one session may add" in obs.reason
    assert [c.argument for c in obs.calls] == ["x", "y"] and len(obs.orphan_results) == 1
    assert obs.produced_paths == ()


def test_a_message_past_its_text_bound_ends_the_session_and_is_not_kept_whole() -> None:
    """One message id over many lines: its text is bounded (`MAX_MESSAGE_CHARS`)."""
    obs = observe(init(), text("12345", msg="m"), text("67890", msg="m"), text("abc", msg="m"),
                  result(), bounds=RecordBounds(message_chars=10))
    assert obs.state == "limit-exceeded" and "over the 10 one message may hold" in obs.reason
    assert obs.final_text == "1234567890"


def test_an_oversized_write_adds_no_produced_path_and_a_long_refusal_is_cut() -> None:
    from recorder._transform import MAX_CALL_ARGUMENT_CHARS, MAX_REASON_CHARS

    big = "p" * (MAX_CALL_ARGUMENT_CHARS + 1)
    obs = observe(init(), tool_use("t", "Write", {"file_path": big, "content": "x"}),
                  text("x", msg="m2"), result())
    assert obs.state == "limit-exceeded" and obs.produced_paths == ()
    refused = observe(init(permissionMode="x" * (4 * MAX_REASON_CHARS)), result())
    assert refused.state == "refused-init" and len(refused.reason) < 2 * MAX_REASON_CHARS


def test_a_served_model_or_harness_version_past_the_name_bound_is_not_kept() -> None:
    """docs/recorder.md: names the record keeps from the stream are at most
    `MAX_NAME_CHARS`; 30 MB of each made one recorded session's ledger line 63 MB."""
    from recorder._transform import MAX_NAME_CHARS

    long = "m" * (MAX_NAME_CHARS + 1)
    # An unreadable version requires every policed key (RC-07): given here, so only the
    # bound on names decides.
    widening = {"additional_directories": [], "sandbox_enabled": False, "capabilities": [],
                "original_cwd": "/workspace"}
    obs = observe(init(claude_code_version=long, **widening), text("x", msg="m2", model=long),
                  result())
    assert obs.state == "limit-exceeded" and "the harness version on stdout line 1" in obs.reason
    assert (obs.claude_code_version, obs.served_model) == (None, None)


def test_the_calls_the_permission_rules_denied_are_named_from_the_result_line() -> None:
    # STREAM_JSON_FACTS: a tool the allowed-tools list does not give gets an is_error
    # tool_result, and the result line lists it in permission_denials; the session goes on.
    denied = json.loads(result())
    denied["permission_denials"] = [
        {"tool_name": "Write", "tool_use_id": "w", "tool_input": {"file_path": "a"}},
        {"tool_name": "Bash", "tool_use_id": "b", "tool_input": {"command": "touch x"}},
        {"tool_name": 7}, "not an entry"]
    obs = observe(init(), tool_use("w", "Write", {"file_path": "a", "content": "x"}),
                  tool_result("w", "Permission to use Write has been denied", is_error=True),
                  text("x", msg="m2"), json.dumps(denied).encode())
    assert obs.state == "recorded" and obs.denied_tools == ("Write", "Bash")
    assert observe(init(), text("x", msg="m2"), result()).denied_tools == ()


def test_undecided_init_keys_are_kept_first_seen_first_bounded_and_never_refuse() -> None:
    """RC-07: the keys no decision names, over every init line, each once, at most
    `MAX_UNKNOWN_INIT_KEYS`, each at most `MAX_INIT_KEY_CHARS` characters; no refusal."""
    from recorder._initkeys import MAX_INIT_KEY_CHARS, MAX_UNKNOWN_INIT_KEYS

    long = "z" * (MAX_INIT_KEY_CHARS + 1)
    first = init(betas=[], plugin_errors=[], view_mode="default")  # view_mode is decided
    second = init(plugin_errors=[], **{long: 1}, scratchpad_path="/tmp/p")
    obs = observe(first, text("x", msg="m2"), result(), second, result())
    assert obs.state == "recorded", obs.reason
    assert obs.unknown_init_keys == (
        "betas", "plugin_errors", "z" * MAX_INIT_KEY_CHARS + f"... ({MAX_INIT_KEY_CHARS + 1} "
        "characters)", "scratchpad_path")
    many = init(**{f"k{i:03}": i for i in range(MAX_UNKNOWN_INIT_KEYS + 5)})
    obs = observe(many, text("x", msg="m2"), result())
    assert obs.state == "recorded"
    assert obs.unknown_init_keys == tuple(f"k{i:03}" for i in range(MAX_UNKNOWN_INIT_KEYS))
    assert observe(init(), text("x", msg="m2"), result()).unknown_init_keys == ()
