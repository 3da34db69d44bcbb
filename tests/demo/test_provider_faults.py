"""The scripted provider's fault kinds, delays, repeats and chunks, over real HTTP.

What each kind must do comes from the captures' provider (tests/fixtures/captures/
*.script.json) and from what the CLI was seen to do with it (STREAM_JSON_FACTS section 4):
an error status with its error object and headers, a connection reset after so many SSE
events, an ``error`` event mid-stream, a fault that spares the non-streaming fallback, a
late answer, the last turn played again, and deltas of a given size.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import pytest

from demo import Script, ScriptedProvider, ScriptError, load_scripts
from demo._server import NO_SCRIPT_TEXT


def _script(turns: list[dict[str, Any]], **extra: Any) -> Script:
    return Script.model_validate({"match": "FAULT-TASK", "turns": turns, "name": "s", **extra})


def _text(text: str, **extra: Any) -> dict[str, Any]:
    return {"blocks": [{"type": "text", "text": text}], **extra}


def _body(*, assistants: int = 0, stream: bool = True) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "do the FAULT-TASK"}]}]
    for n in range(assistants):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"t{n}"}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"x{n}", "content": "ok"}]})
    body: dict[str, Any] = {"model": "claude-opus-4-8", "messages": messages}
    if stream:
        body["stream"] = True
    return body


def _post(url: str, body: Mapping[str, Any], *,
          session: str = "s1") -> tuple[int, http.client.HTTPMessage, bytes]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request("POST", "/v1/messages?beta=true", json.dumps(body).encode(),
                     {"Content-Type": "application/json", "X-Claude-Code-Session-Id": session})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def _raw(url: str, body: Mapping[str, Any], *, late_s: float = 0.0) -> tuple[bytes, bool]:
    """Everything the server sent on one connection, and whether it ended in a reset;
    ``late_s``: how long the client waits after sending before it reads (a busy reader)."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    data = json.dumps(body).encode()
    head = (f"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Type: "
            f"application/json\r\nX-Claude-Code-Session-Id: s1\r\nContent-Length: "
            f"{len(data)}\r\n\r\n").encode()
    received = b""
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head + data)
        time.sleep(late_s)
        while True:
            try:
                piece = sock.recv(65536)
            except ConnectionResetError:
                return received, True
            if not piece:
                return received, False
            received += piece


def _events(raw: bytes) -> list[dict[str, Any]]:
    """The SSE events of a chunked response (a cut one too: its whole frames)."""
    _, _, rest = raw.partition(b"\r\n\r\n")
    payload = b""
    while rest:
        size_line, sep, rest = rest.partition(b"\r\n")
        if not sep or not size_line:
            break
        size = int(size_line, 16)
        if size == 0:
            break
        payload += rest[:size]
        rest = rest[size + 2:]
    events = []
    for frame in payload.decode().split("\n\n"):
        if frame.strip():
            fields = dict(line.split(": ", 1) for line in frame.splitlines())
            data = json.loads(fields["data"])
            assert fields["event"] == data["type"]
            events.append(data)
    return events


@pytest.mark.parametrize(("status", "kind"), [
    (400, "invalid_request_error"), (401, "authentication_error"), (403, "permission_error"),
    (404, "not_found_error"), (429, "rate_limit_error"), (500, "api_error"),
    (529, "overloaded_error")])
def test_an_http_fault_answers_its_status_with_the_messages_api_error(
        status: int, kind: str) -> None:
    script = _script([{"fault": "http", "status": status, "times": 2}, _text("ok")])
    with ScriptedProvider([script]) as provider:
        answers = [_post(provider.url, _body()) for _ in range(3)]
    assert [a[0] for a in answers] == [status, status, 200]
    assert json.loads(answers[0][2]) == {
        "type": "error", "error": {"type": kind, "message": f"scripted {status}"}}


def test_an_http_fault_says_its_own_type_message_and_headers() -> None:
    fault = {"fault": "http", "status": 529, "error_type": "api_error",
             "message": "prompt is too long: 250000 tokens > 200000 maximum",
             "headers": {"retry-after": "0"}}
    with ScriptedProvider([_script([fault, _text("ok")])]) as provider:
        status, headers, raw = _post(provider.url, _body())
    assert status == 529
    assert headers["retry-after"] == "0"
    assert json.loads(raw)["error"] == {  # the type given, not the status's overloaded_error
        "type": "api_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}


@pytest.mark.parametrize("fault", [
    {"fault": "http", "status": 418},
    {"fault": "http", "status": 503},
    {"fault": "http", "status": 429, "headers": {"set-cookie": "a=b"}},
    {"fault": "http", "status": 429, "headers": {"retry-after": "0\r\nx-injected: 1"}},
    {"fault": "http", "status": 429, "error_type": "teapot_error"},
    {"fault": "cut", "after_events": -1},
    {"fault": "sse_error", "error_type": "no_such_error"},
    {"fault": "sse_error", "status": 529},
], ids=["418", "503", "header-not-allowed", "header-line-break", "error-type", "cut-negative",
        "sse-type", "sse-status"])
def test_a_fault_outside_the_allow_lists_is_refused(fault: dict[str, Any], tmp_path: Any) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"match": "m", "turns": [fault, _text("x")]}))
    with pytest.raises(ScriptError):
        load_scripts(tmp_path)


def test_a_cut_resets_the_stream_after_its_events() -> None:
    script = _script([{"fault": "cut", "after_events": 3}, _text("after the cut")])
    with ScriptedProvider([script]) as provider:
        raw, reset = _raw(provider.url, _body())
        assert reset
        assert [e["type"] for e in _events(raw)] == [
            "message_start", "ping", "content_block_start"]
        status, _, body = _post(provider.url, _body(stream=False))
    assert status == 200
    assert json.loads(body)["content"][0]["text"] == "after the cut"


def test_a_cuts_events_reach_a_client_that_reads_them_late() -> None:
    """The CLI must see the events before the reset (a broken stream, which it retries
    without streaming, STREAM_JSON_FACTS 4), not a reset alone (a failed connection, which
    it retries as one, with an api_retry line): a reset drops what the client had not read."""
    script = _script([{"fault": "cut", "after_events": 3}, _text("after the cut")])
    with ScriptedProvider([script]) as provider:
        raw, reset = _raw(provider.url, _body(), late_s=0.05)
    assert reset
    assert [e["type"] for e in _events(raw)] == ["message_start", "ping", "content_block_start"]


def test_a_stream_only_cut_spares_the_non_streaming_fallback() -> None:
    script = _script([{"fault": "cut", "times": 99, "stream_only": True}, _text("fallback")])
    with ScriptedProvider([script]) as provider:
        assert _raw(provider.url, _body())[1]
        assert _raw(provider.url, _body())[1]  # still cut: 99 streams
        status, _, body = _post(provider.url, _body(stream=False))
    assert status == 200
    assert json.loads(body)["content"][0]["text"] == "fallback"


def test_a_cut_without_stream_only_resets_the_fallback_too() -> None:
    script = _script([{"fault": "cut", "times": 99}, _text("never")])
    with ScriptedProvider([script]) as provider:
        raw, reset = _raw(provider.url, _body(stream=False))
    assert reset
    assert raw == b""


def test_an_sse_error_sends_an_error_event_after_its_events() -> None:
    fault = {"fault": "sse_error", "error_type": "overloaded_error", "message": "Overloaded",
             "after_events": 2, "times": 1}
    with ScriptedProvider([_script([fault, _text("after")])]) as provider:
        raw, reset = _raw(provider.url, _body())
        assert not reset
        events = _events(raw)
        assert [e["type"] for e in events] == ["message_start", "ping", "error"]
        assert events[-1] == {"type": "error",
                              "error": {"type": "overloaded_error", "message": "Overloaded"}}
        assert raw.endswith(b"0\r\n\r\n")  # the stream ends after the error, no reset
        again = _events(_raw(provider.url, _body())[0])
    assert again[-1]["type"] == "message_stop"


@pytest.mark.parametrize(("kind", "status"), [("overloaded_error", 529), ("api_error", 500)])
def test_an_sse_error_answers_the_fallback_with_its_types_status(kind: str, status: int) -> None:
    fault = {"fault": "sse_error", "error_type": kind, "message": "m", "times": 99}
    with ScriptedProvider([_script([fault, _text("never")])]) as provider:
        got, _, raw = _post(provider.url, _body(stream=False))
    assert got == status
    assert json.loads(raw)["error"] == {"type": kind, "message": "m"}


def test_a_stream_only_sse_error_spares_the_fallback() -> None:
    fault = {"fault": "sse_error", "times": 99, "stream_only": True}
    with ScriptedProvider([_script([fault, _text("fallback")])]) as provider:
        assert _events(_raw(provider.url, _body())[0])[-1]["type"] == "error"
        status, _, raw = _post(provider.url, _body(stream=False))
    assert status == 200
    assert json.loads(raw)["content"][0]["text"] == "fallback"


def test_a_stream_only_http_fault_spares_the_fallback() -> None:
    fault = {"fault": "http", "status": 500, "times": 99, "stream_only": True}
    with ScriptedProvider([_script([fault, _text("fallback")])]) as provider:
        assert _post(provider.url, _body())[0] == 500
        assert _post(provider.url, _body(stream=False))[0] == 200


def test_a_turns_delay_holds_its_answer_back() -> None:
    script = _script([_text("slow", delay_s=0.6)])
    with ScriptedProvider([script]) as provider:
        started = time.monotonic()
        status, _, _ = _post(provider.url, _body())
        assert status == 200
        assert time.monotonic() - started >= 0.6


def test_stopping_the_provider_ends_a_delay_early() -> None:
    script = _script([_text("slow", delay_s=60)])
    provider = ScriptedProvider([script])
    provider.start()
    done: list[float] = []

    def ask() -> None:
        with contextlib.suppress(OSError, http.client.HTTPException):
            _post(provider.url, _body())
        done.append(time.monotonic())

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    time.sleep(0.3)
    stopped = time.monotonic()
    provider.stop()
    asking.join(10)
    assert done and done[0] - stopped < 8


def test_a_delay_past_its_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="delay_s"):
        _script([_text("slow", delay_s=121)])


def test_repeat_last_plays_the_last_turn_again_with_fresh_tool_ids() -> None:
    read = {"blocks": [{"type": "tool_use", "id": "toolu_r", "name": "Read",
                        "input": {"file_path": "docs/x.md"}}]}
    with ScriptedProvider([_script([read], after_last="repeat_last")]) as provider:
        first = json.loads(_post(provider.url, _body(stream=False))[2])
        later = [json.loads(_post(provider.url, _body(assistants=n, stream=False))[2])
                 for n in (1, 2)]
        assert provider.unmatched == 0
    assert [m["content"][0]["id"] for m in [first, *later]] == [
        "toolu_r", "toolu_r_1", "toolu_r_2"]
    assert all(m["content"][0]["input"] == {"file_path": "docs/x.md"} for m in later)


def test_without_repeat_last_a_request_past_the_end_gets_no_script() -> None:
    with ScriptedProvider([_script([_text("once")])]) as provider:
        message = json.loads(_post(provider.url, _body(assistants=1, stream=False))[2])
        assert provider.unmatched == 1
    assert message["content"][0]["text"] == NO_SCRIPT_TEXT


def test_chunk_sets_the_size_of_every_delta() -> None:
    turn = {"blocks": [
        {"type": "thinking", "thinking": "pondering"},
        {"type": "text", "text": "Hello partial world"},
        {"type": "tool_use", "id": "toolu_c", "name": "Read", "input": {"file_path": "a.md"}}],
        "chunk": 5}
    with ScriptedProvider([_script([turn])]) as provider:
        events = _events(_raw(provider.url, _body())[0])
    deltas: dict[int, list[str]] = {}
    for event in events:
        if event["type"] == "content_block_delta":
            delta = event["delta"]
            piece = delta.get("text", delta.get("thinking", delta.get("partial_json")))
            if delta["type"] != "signature_delta":
                deltas.setdefault(event["index"], []).append(piece)
    assert deltas[0] == ["ponde", "ring"]
    assert deltas[1] == ["Hello", " part", "ial w", "orld"]
    assert deltas[2] == ['{"fil', 'e_pat', 'h": "', 'a.md"', "}"]
