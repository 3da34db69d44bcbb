"""A script's branch: the rest of the script chosen by text the request carries.

The rules (docs/provider.md, "Branches"): the first alternative whose
``when_request_contains`` occurs in the system prompt or the text of a message
that is not the model's (reminders included) is taken, else ``otherwise``;
the decision is made per request from that request alone; tool results and
the model's own turns are not searched; a branch is the last step of its
list; an arm's name is never a branch's text. Requests are shaped as the
pinned CLI sends them (tests/fixtures/captures/STREAM_JSON_FACTS.md: CLAUDE.md
comes as a system reminder in the first user message).
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from demo import Script, ScriptedProvider, ScriptError, load_scripts

LINE = "Read a record's status before you cite it."
TASK = "TASK-BRANCH: which record is in force?"


def _text(text: str) -> dict[str, Any]:
    return {"blocks": [{"type": "text", "text": text}]}


def _tool(tool_id: str) -> dict[str, Any]:
    return {"blocks": [{"type": "tool_use", "id": tool_id, "name": "Read",
                        "input": {"file_path": "a.md"}}]}


SCRIPT = {
    "match": "TASK-BRANCH",
    "turns": [
        _tool("toolu_shared"),
        {"branch": [{"when_request_contains": LINE,
                     "turns": [_tool("toolu_careful"), _text("careful answer")]}],
         "otherwise": [_text("hasty answer")]},
    ],
}


def _body(*, reminder: str = "", system: Any = None, assistants: int = 0,
          tool_result: str = "ok", assistant_text: str = "") -> dict[str, Any]:
    """A request as the CLI sends one: reminder then task in the first user message."""
    first = [{"type": "text", "text": f"<system-reminder>\n{reminder}\n</system-reminder>\n"},
             {"type": "text", "text": TASK}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": first}]
    for n in range(assistants):
        messages.append({"role": "assistant",
                         "content": [{"type": "text", "text": assistant_text or f"turn {n}"}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": tool_result}]})
    body: dict[str, Any] = {"model": "claude-opus-4-8", "messages": messages,
                            "max_tokens": 1000}
    if system is not None:
        body["system"] = system
    return body


def _served(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the turn served to ``body`` (a non-streaming request)."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request("POST", "/v1/messages?beta=true", json.dumps(body).encode(),
                     {"Content-Type": "application/json", "X-Claude-Code-Session-Id": "s1"})
        response = conn.getresponse()
        assert response.status == 200
        content: list[dict[str, Any]] = json.loads(response.read())["content"]
        return content
    finally:
        conn.close()


def _said(blocks: list[dict[str, Any]]) -> str:
    block = blocks[0]
    return str(block["text"] if block["type"] == "text" else block["id"])


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider([Script.model_validate({**SCRIPT, "name": "b"})]) as running:
        yield running


def test_a_request_carrying_the_text_takes_the_alternative(provider: ScriptedProvider) -> None:
    carried = f"Contents of /w/CLAUDE.md:\n- {LINE}"
    assert _said(_served(provider.url, _body(reminder=carried, assistants=1))) == "toolu_careful"
    assert _said(_served(provider.url, _body(reminder=carried, assistants=2))) == "careful answer"


def test_a_request_without_the_text_takes_otherwise(provider: ScriptedProvider) -> None:
    assert _said(_served(provider.url, _body(reminder="today's date", assistants=1))) == (
        "hasty answer")


def test_turns_before_the_branch_are_shared(provider: ScriptedProvider) -> None:
    assert _said(_served(provider.url, _body(reminder=LINE))) == "toolu_shared"
    assert _said(_served(provider.url, _body())) == "toolu_shared"


def test_the_system_prompt_is_searched_as_a_string_or_as_blocks(
        provider: ScriptedProvider) -> None:
    as_blocks = [{"type": "text", "text": "You are Claude Code."},
                 {"type": "text", "text": f"skills: {LINE}"}]
    for system in (f"skill line: {LINE}", as_blocks):
        assert _said(_served(provider.url, _body(system=system, assistants=1))) == (
            "toolu_careful")


def test_tool_results_and_the_models_turns_are_not_searched(provider: ScriptedProvider) -> None:
    # A file read back (a tool result) arrives only after turn 0, and the model's own
    # text is the script's: neither may decide a branch.
    assert _said(_served(provider.url, _body(assistants=1, tool_result=LINE))) == "hasty answer"
    assert _said(_served(provider.url, _body(assistants=1, assistant_text=LINE))) == (
        "hasty answer")


def test_past_the_end_of_a_route_names_the_route(provider: ScriptedProvider) -> None:
    served = _served(provider.url, _body(assistants=2))
    assert _said(served) == "no script for this request"
    assert provider.misses == {"the script 'b' (otherwise) has no turn 3": 1}


def test_nested_branches_and_the_first_alternative_that_matches() -> None:
    script = Script.model_validate({"match": "TASK-BRANCH", "turns": [{
        "branch": [
            {"when_request_contains": "ALPHA", "turns": [{
                "branch": [{"when_request_contains": "BETA", "turns": [_text("alpha beta")]}],
                "otherwise": [_text("alpha only")]}]},
            {"when_request_contains": "BETA", "turns": [_text("beta only")]},
        ],
        "otherwise": [_text("neither")],
    }]})
    assert script.branches
    assert not Script.model_validate({"match": "m", "turns": [_text("t")]}).branches
    assert script.routes() == [(0, 0), (0, -1), (1,), (-1,)]
    assert script.route("ALPHA and BETA") == (0, 0)
    assert script.route("ALPHA") == (0, -1)
    assert script.route("BETA") == (1,)
    assert script.route("") == (-1,)
    assert script.describe((0, -1)) == (
        " (when the request contains 'ALPHA', then otherwise)")
    said = [script.playbook(r)[0][1].blocks[0] for r in script.routes()]
    assert [getattr(b, "text", None) for b in said] == [
        "alpha beta", "alpha only", "beta only", "neither"]


def test_faults_before_a_branch_apply_to_its_first_turn() -> None:
    script = Script.model_validate({"match": "m", "turns": [
        {"fault": "http", "status": 529},
        {"branch": [{"when_request_contains": "X", "turns": [_text("x")]}],
         "otherwise": [_text("y")]}]})
    for route in script.routes():
        faults, _ = script.playbook(route)[0]
        assert [f.status for f in faults if f.fault == "http"] == [529]


@pytest.mark.parametrize(("turns", "said"), [
    ([{"branch": [{"when_request_contains": "X", "turns": [_text("x")]}],
       "otherwise": [_text("y")]}, _text("after")],
     "turns.0: a branch must be the last step of its turns"),
    ([{"branch": [{"when_request_contains": "X", "turns": [_text("x")]}]}],
     "turns.0.otherwise is missing"),
    ([{"branch": [{"when_request_contains": "X", "turns": [_text("x"), {"fault": "cut"}]}],
       "otherwise": [_text("y")]}],
     "fault steps after the last turn apply to no turn"),
    ([{"branch": [{"when_request_contains": "absent", "turns": [_text("x")]}],
       "otherwise": [_text("y")]}],
     "when_request_contains 'absent' is an arm's name"),
    ([{"branch": [{"when_request_contains": "X", "turns": [_text("x")], "arm": "present"}],
       "otherwise": [_text("y")]}],
     "turns.0.branch.0.arm is not a key of a script, a turn, a block, a branch or an "
     "alternative"),
    ([{"branch": [], "otherwise": [_text("y")]}], "turns[0].branch must hold at least 1 entry"),
], ids=["not-last", "no-otherwise", "trailing-fault", "arm-name", "extra-key", "no-alternative"])
def test_a_bad_branch_is_refused_naming_the_file_and_key(
        tmp_path: Path, turns: list[Any], said: str) -> None:
    (tmp_path / "HW-X.json").write_text(json.dumps({"match": "m", "turns": turns}))
    with pytest.raises(ScriptError, match=re.escape(said)) as caught:
        load_scripts(tmp_path)
    assert caught.value.path == tmp_path / "HW-X.json"
