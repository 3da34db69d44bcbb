"""The scripted Messages API: SSE shape, turn choice, faults, and the real CLI against it."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from demo import Script, ScriptedProvider, ScriptError, load_scripts
from demo._server import NO_SCRIPT_TEXT
from demo._wire import first_user_text, turn_index

SERVED = "claude-opus-4-8-20261101"
TOOL_INPUT = {"pattern": "alpha", "path": "docs", "output_mode": "content", "-n": True}
REMINDER = "<system-reminder>\nContents of CLAUDE.md: mentions TASK-BETA\n</system-reminder>\n\n"


def _script(match: str, turns: list[dict[str, Any]], **extra: Any) -> Script:
    return Script.model_validate({"match": match, "turns": turns, **extra})


def _text_turn(text: str, **extra: Any) -> dict[str, Any]:
    return {"blocks": [{"type": "text", "text": text}], **extra}


ALPHA = _script(
    "TASK-ALPHA",
    [
        {
            "blocks": [
                {"type": "thinking", "thinking": "Search first.", "signature": "c2ln"},
                {"type": "tool_use", "id": "toolu_a1", "name": "Grep", "input": TOOL_INPUT},
            ],
            "model": "claude-turn-model",
            "usage": {"input_tokens": 1000, "output_tokens": 40, "cache_read_input_tokens": 7},
        },
        _text_turn("Done.\nalpha"),
    ],
    model=SERVED,
    name="alpha",
)
BETA = _script("TASK-BETA", [_text_turn("beta")], name="beta")


def _body(task: str, *, assistants: int = 0, stream: bool = True) -> dict[str, Any]:
    """A request shaped like the CLI's: reminder block, task block, a system message."""
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": task}],
        },
        {"role": "system", "content": "Available agent types ..."},
    ]
    for n in range(assistants):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"turn {n}"}]})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}],
            }
        )
    body: dict[str, Any] = {"model": "claude-opus-4-8", "messages": messages, "max_tokens": 64000}
    if stream:
        body["stream"] = True
    return body


def _post(
    url: str,
    body: Mapping[str, Any] | bytes,
    *,
    session: str = "s1",
    path: str = "/v1/messages?beta=true",
) -> tuple[int, http.client.HTTPMessage, bytes]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)  # a loaded host
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request(
            "POST",
            path,
            data,
            {"Content-Type": "application/json", "X-Claude-Code-Session-Id": session},
        )
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def _sse(raw: bytes) -> list[dict[str, Any]]:
    """Parse an SSE body; each event's ``event:`` name must equal its data's ``type``."""
    events = []
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        fields = dict(line.split(": ", 1) for line in frame.splitlines())
        data = json.loads(fields["data"])
        assert fields["event"] == data["type"]
        events.append(data)
    return events


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider([ALPHA, BETA]) as running:
        yield running


def test_stream_text_turn_event_sequence(provider: ScriptedProvider) -> None:
    status, headers, raw = _post(provider.url, _body("TASK-ALPHA", assistants=1))
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["request-id"].startswith("req_")
    events = _sse(raw)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["message_start", "ping", "content_block_start"]
    assert kinds[-4:] == [
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert set(kinds[3:-3]) == {"content_block_delta"}
    message = events[0]["message"]
    assert message["id"].startswith("msg_")
    assert message["model"] == SERVED
    assert message["usage"] == {
        "input_tokens": 100,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert {d["type"] for d in deltas} == {"text_delta"}
    assert "".join(d["text"] for d in deltas) == "Done.\nalpha"
    assert events[-2]["delta"]["stop_reason"] == "end_turn"
    assert events[-2]["usage"]["output_tokens"] == 20


def test_stream_tool_use_turn_reassembles_input(provider: ScriptedProvider) -> None:
    _, _, raw = _post(provider.url, _body("TASK-ALPHA"))
    events = _sse(raw)
    assert events[0]["message"]["model"] == "claude-turn-model"
    assert events[0]["message"]["usage"]["input_tokens"] == 1000
    assert events[0]["message"]["usage"]["cache_read_input_tokens"] == 7
    by_index: dict[int, list[dict[str, Any]]] = {}
    for event in events:
        if "index" in event:
            by_index.setdefault(event["index"], []).append(event)
    thinking, tool = by_index[0], by_index[1]
    assert thinking[0]["content_block"]["type"] == "thinking"
    assert [e["delta"]["type"] for e in thinking[1:-1]][-1] == "signature_delta"
    assert "".join(e["delta"].get("thinking", "") for e in thinking[1:-1]) == "Search first."
    assert tool[0]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_a1",
        "name": "Grep",
        "input": {},
    }
    pieces = [e["delta"]["partial_json"] for e in tool if e["type"] == "content_block_delta"]
    assert len(pieces) > 1
    assert json.loads("".join(pieces)) == TOOL_INPUT
    assert tool[-1]["type"] == "content_block_stop"
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"]["output_tokens"] == 40


def test_non_streaming_request_gets_the_same_turn_whole(provider: ScriptedProvider) -> None:
    status, headers, raw = _post(provider.url, _body("TASK-ALPHA", stream=False))
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    message = json.loads(raw)
    assert message["type"] == "message"
    assert message["model"] == "claude-turn-model"
    assert message["stop_reason"] == "tool_use"
    assert message["content"][1] == {
        "type": "tool_use",
        "id": "toolu_a1",
        "name": "Grep",
        "input": TOOL_INPUT,
    }
    assert message["content"][0]["signature"] == "c2ln"
    assert message["usage"]["output_tokens"] == 40


def test_turn_index_counts_assistant_messages_only() -> None:
    assert turn_index(_body("x")) == 0
    assert turn_index(_body("x", assistants=3)) == 3
    assert turn_index({}) == 0


def test_script_is_picked_by_match_inside_the_wrapped_first_message(
    provider: ScriptedProvider,
) -> None:
    # The reminder names TASK-BETA, but reminders never select a script.
    assert "TASK-BETA" not in first_user_text(_body("please do TASK-ALPHA now"))
    _, _, raw = _post(provider.url, _body("please do TASK-ALPHA now", assistants=1, stream=False))
    assert json.loads(raw)["content"][0]["text"] == "Done.\nalpha"
    _, _, raw = _post(provider.url, _body("and now TASK-BETA", stream=False))
    message = json.loads(raw)
    assert message["content"][0]["text"] == "beta"
    assert message["model"] == "claude-opus-4-8"  # no served model scripted: the request's
    assert provider.requests == {"alpha": 1, "beta": 1}
    assert provider.unmatched == 0


def test_first_user_text_accepts_string_content() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "Agent prompt"},
        ]
    }
    assert first_user_text(body) == "Agent prompt"


def test_unmatched_and_past_the_end_get_a_final_text_turn(provider: ScriptedProvider) -> None:
    _, _, raw = _post(provider.url, _body("nothing scripted", stream=False))
    message = json.loads(raw)
    assert message["content"] == [{"type": "text", "text": NO_SCRIPT_TEXT}]
    assert message["stop_reason"] == "end_turn"
    _, _, raw = _post(provider.url, _body("TASK-BETA", assistants=1))
    text = "".join(
        e["delta"].get("text", "") for e in _sse(raw) if e["type"] == "content_block_delta"
    )
    assert text == NO_SCRIPT_TEXT
    assert provider.unmatched == 2
    assert provider.requests == {"alpha": 0, "beta": 1}


def test_http_faults_precede_their_turn_per_session() -> None:
    script = _script(
        "FAULTY", [{"fault": "http", "status": 529, "times": 2}, _text_turn("ok")], name="f"
    )
    with ScriptedProvider([script]) as provider:
        statuses = [_post(provider.url, _body("FAULTY"), session="one")[0] for _ in range(3)]
        assert statuses == [529, 529, 200]
        status, headers, raw = _post(provider.url, _body("FAULTY"), session="two")
        assert status == 529
        assert headers["request-id"].startswith("req_")
        assert json.loads(raw) == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "scripted 529"},
        }
        assert provider.requests == {"f": 4}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "fallback"])
def test_cut_fault_resets_the_connection_once(stream: bool) -> None:
    script = _script("CUT", [{"fault": "cut"}, _text_turn("after the cut")], name="c")
    with ScriptedProvider([script]) as provider:
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            _post(provider.url, _body("CUT", stream=stream))
        status, _, raw = _post(provider.url, _body("CUT", stream=False))
        assert status == 200
        assert json.loads(raw)["content"][0]["text"] == "after the cut"


def test_other_paths_and_bad_bodies_are_refused(provider: ScriptedProvider) -> None:
    assert _post(provider.url, _body("TASK-ALPHA"), path="/v1/complete")[0] == 404
    status, _, raw = _post(provider.url, b"not json")
    assert status == 400
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"
    assert provider.errors == 1


def test_requests_are_counted_across_threads(provider: ScriptedProvider) -> None:
    threads = [
        threading.Thread(target=_post, args=(provider.url, _body("TASK-BETA", stream=False)))
        for _ in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)  # a loaded host may take a while; a hang still fails below
    assert provider.requests["beta"] == 16


def test_stop_is_idempotent_and_frees_the_url() -> None:
    provider = ScriptedProvider([BETA])
    url = provider.start()
    assert provider.start() == url
    provider.stop()
    provider.stop()
    with pytest.raises(RuntimeError):
        _ = provider.url
    with pytest.raises(ConnectionError):
        _post(url, _body("TASK-BETA"))


@pytest.mark.anyio
async def test_provider_is_an_async_context_manager() -> None:
    async with ScriptedProvider([BETA]) as provider:
        status, _, _ = await anyio.to_thread.run_sync(_post, provider.url, _body("TASK-BETA"))
    assert status == 200
    assert provider.requests == {"beta": 1}


def test_scripts_with_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="not unique"):
        ScriptedProvider([BETA, BETA])


def test_load_scripts_templates_home_and_names_scripts_by_file(tmp_path: Path) -> None:
    turn = {
        "blocks": [
            {
                "type": "tool_use",
                "id": "t",
                "name": "Read",
                "input": {"file_path": "{home}/.bashrc"},
            }
        ]
    }
    (tmp_path / "HW-X.json").write_text(json.dumps({"match": "m", "turns": [turn]}))
    (script,) = load_scripts(tmp_path, home="/home/runner")
    assert script.name == "HW-X"
    assert script.model_dump()["turns"][0]["blocks"][0]["input"] == {
        "file_path": "/home/runner/.bashrc"
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "Expecting property name"),
        ('{"match": "m", "turns": [], "extra": 1}', "extra"),
        ('{"match": "m", "turns": [{"blocks": [{"type": "image"}]}]}', "turns.0"),
        ('{"match": "m", "turns": [{"fault": "http", "status": 418}]}', "status"),
        (json.dumps({"match": "m", "turns": [_text_turn("x"), {"fault": "cut"}]}), "after"),
    ],
    ids=["json", "extra-key", "bad-block", "bad-status", "trailing-fault"],
)
def test_load_scripts_names_the_bad_file(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "good.json").write_text(json.dumps({"match": "g", "turns": [_text_turn("g")]}))
    (tmp_path / "broken.json").write_text(text)
    with pytest.raises(ScriptError, match=reason) as caught:
        load_scripts(tmp_path)
    assert caught.value.path == tmp_path / "broken.json"
    assert "broken.json" in str(caught.value)


def test_load_scripts_refuses_an_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="no"):
        load_scripts(tmp_path)


# --- the real CLI against the provider ---------------------------------------------------------

TASK = (
    "Count the alpha lines in docs/x.md (PROVIDER-IT-TASK)."
    " End with the number alone on the last line."
)
IT_SCRIPT = {
    "match": "PROVIDER-IT-TASK",
    "model": SERVED,
    "turns": [
        {
            "blocks": [
                {"type": "thinking", "thinking": "Read and search."},
                {
                    "type": "tool_use",
                    "id": "toolu_it_read",
                    "name": "Read",
                    "input": {"file_path": "docs/x.md"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_it_grep",
                    "name": "Grep",
                    "input": {"pattern": "alpha"},
                },
            ],
            "usage": {"input_tokens": 2000, "output_tokens": 60},
        },
        {
            "blocks": [
                {
                    "type": "tool_use",
                    "id": "toolu_it_write",
                    "name": "Write",
                    "input": {"file_path": "notes/count.md", "content": "alpha: 2\n"},
                },
            ],
            "usage": {"input_tokens": 300, "output_tokens": 50, "cache_read_input_tokens": 2000},
        },
        {
            "blocks": [{"type": "text", "text": "Two lines say alpha.\n2"}],
            "usage": {"input_tokens": 200},
        },
    ],
}


def _run_cli(harness: Path, provider: ScriptedProvider, tmp_path: Path) -> list[dict[str, Any]]:
    workspace = tmp_path / "ws"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "x.md").write_text("# X\nalpha one\nbeta\nalpha two\n")
    config = tmp_path / "cfg"
    config.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(config),
        "CLAUDE_CONFIG_DIR": str(config),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": provider.url,
        "ANTHROPIC_API_KEY": "sk-fake-provider-test",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    argv = [
        str(harness),
        "-p",
        TASK,
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-opus-4-8",
        "--permission-mode",
        "dontAsk",
        "--setting-sources",
        "project,local",
        "--allowedTools",
        "Read Grep Glob Write",
    ]
    done = subprocess.run(
        argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=100, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (workspace / "notes" / "count.md").read_text() == "alpha: 2\n"
    shutil.rmtree(config)
    return [json.loads(line) for line in done.stdout.splitlines()]


def _check_stream(lines: list[dict[str, Any]]) -> None:
    assert any(line["type"] == "system" and line.get("subtype") == "init" for line in lines)
    uses = [b for line in lines if line["type"] == "assistant" for b in line["message"]["content"]]
    assert [b["id"] for b in uses if b["type"] == "tool_use"] == [
        "toolu_it_read",
        "toolu_it_grep",
        "toolu_it_write",
    ]
    results = {
        b["tool_use_id"]: b
        for line in lines
        if line["type"] == "user" and isinstance(line["message"]["content"], list)
        for b in line["message"]["content"]
        if b.get("type") == "tool_result"
    }
    assert set(results) == {"toolu_it_read", "toolu_it_grep", "toolu_it_write"}
    assert not any(r.get("is_error") for r in results.values())
    assert "alpha two" in json.dumps(results["toolu_it_read"]["content"])
    assert {line["message"]["model"] for line in lines if line["type"] == "assistant"} == {SERVED}
    assert [b["text"] for b in uses if b["type"] == "text"][-1] == "Two lines say alpha.\n2"
    (result,) = [line for line in lines if line["type"] == "result"]
    assert result["is_error"] is False
    assert result["result"] == "Two lines say alpha.\n2"
    assert result["total_cost_usd"] > 0


@pytest.mark.harness
@pytest.mark.timeout(120)
def test_real_cli_plays_the_script(harness: Path, tmp_path: Path) -> None:
    with ScriptedProvider([Script.model_validate(IT_SCRIPT)]) as provider:
        lines = _run_cli(harness, provider, tmp_path)
    _check_stream(lines)
    assert provider.requests == {"script0": 3}
    assert provider.unmatched == 0
    # opus-4-8 at $5/M in, $25/M out, $0.50/M cache reads: the CLI prices the scripted usage.
    (result,) = [line for line in lines if line["type"] == "result"]
    assert result["total_cost_usd"] == pytest.approx(2500 * 5e-6 + 130 * 25e-6 + 2000 * 0.5e-6)


@pytest.mark.harness
@pytest.mark.timeout(120)
def test_real_cli_recovers_from_a_cut_stream_through_the_fallback(
    harness: Path, tmp_path: Path
) -> None:
    """A cut stream is retried without streaming (STREAM_JSON_FACTS 4); the session ends well."""
    faulty = {
        **IT_SCRIPT,
        "turns": [IT_SCRIPT["turns"][0], {"fault": "cut"}, *IT_SCRIPT["turns"][1:]],
    }
    with ScriptedProvider([Script.model_validate(faulty)]) as provider:
        lines = _run_cli(harness, provider, tmp_path)
    _check_stream(lines)
    assert provider.requests == {"script0": 4}


def test_load_scripts_takes_a_string_and_names_a_directory_that_is_not_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"match": "x", "turns": [_text_turn("hi")]}))
    assert [s.name for s in load_scripts(str(tmp_path))] == ["a"]
    with pytest.raises(ScriptError, match="not a directory"):
        load_scripts(str(tmp_path / "a.json"))


def test_each_no_script_answer_is_counted_with_why(provider: ScriptedProvider) -> None:
    _post(provider.url, _body("a task no script knows about at all, asked twice"))
    _post(provider.url, _body("a task no script knows about at all, asked twice"))
    assert provider.misses == {
        "no script matches a task that begins 'a task no script knows about at all, asked "
        "twice'": 2}
    assert provider.unmatched == 2


@pytest.mark.parametrize(("body", "said"), [
    ('{"match": "x", "turn": []}', "turns is missing"),
    ('{"match": "x",\n "turns" []}', "not JSON: Expecting ':' delimiter at line 2, column 10"),
    ('{"match": "x", "turns": [{"blocks": [{"type": "txt", "text": "a"}]}]}',
     "type 'txt' is not one of 'text', 'thinking', 'tool_use'"),
])
def test_a_bad_script_is_explained_in_words(tmp_path: Path, body: str, said: str) -> None:
    (tmp_path / "p.json").write_text(body)
    with pytest.raises(ScriptError, match=re.escape(said)):
        load_scripts(tmp_path)


def test_a_body_past_the_bound_is_refused_unread(provider: ScriptedProvider) -> None:
    """The server runs in the runner's process: a body whose Content-Length passes
    `MAX_REQUEST_BYTES` is answered 413 before a byte of it is read (a session's 900 MB
    POST, through the egress proxy, held the runner 977 MB, and 64 such connections are
    within a session's cap; red: the server tries to read the 1 TiB announced here, fails
    to allocate it in its thread and drops the connection unanswered)."""
    from demo._server import MAX_REQUEST_BYTES

    parts = urlsplit(provider.url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    conn.putrequest("POST", "/v1/messages")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(1 << 40))
    conn.endheaders(b"{")
    response = conn.getresponse()
    assert response.status == 413 and MAX_REQUEST_BYTES < 1 << 40
    assert json.loads(response.read())["error"]["type"] == "request_too_large"
    conn.close()
