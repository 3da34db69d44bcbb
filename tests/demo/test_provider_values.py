"""What a request body decodes to is bounded before it is decoded (docs/provider.md,
"Bounds"; demo/_server.py `MAX_REQUEST_VALUES`, `VALUES_IN_FLIGHT`): four 32 MiB bodies of
empty objects, each within the byte bounds, once held the runner 3.2 GB."""

from __future__ import annotations

import gc
import http.client
import json
import tracemalloc
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from demo import Script, ScriptedProvider
from demo._server import MAX_REQUEST_VALUES
from recorder._harness import json_values

MiB = 1024 * 1024
SCRIPT = Script.model_validate({"match": "TASK-WIDE", "name": "wide", "turns": [
    {"blocks": [{"type": "text", "text": "ok"}]}] * 3})


def _body(extra: int = 0) -> bytes:
    """A request for `SCRIPT` with a tool_result, and ``extra`` empty messages before it."""
    head = (b'{"model":"m","stream":false,"messages":[' + b"{}," * extra
            + b'{"role":"user","content":[{"type":"text","text":"TASK-WIDE"}]},'
            b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1",'
            b'"content":"seen"}]}]}')
    return head


def _post(url: str, data: bytes) -> tuple[int, dict[str, Any]]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        conn.request("POST", "/v1/messages", data, {"Content-Type": "application/json",
                                                    "X-Claude-Code-Session-Id": "s"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_body_past_the_values_bound_is_answered_413_undecoded(tmp_path: Path) -> None:
    """Past `max_request_values` the body is refused as too large and nothing of it is read
    (its tool_result is not noted); at the bound it is served."""
    log = tmp_path / "log.jsonl"
    at_bound, past = _body(20), _body(21)
    bound = json_values(at_bound)
    assert json_values(past) == bound + 2
    with ScriptedProvider([SCRIPT], max_request_values=bound + 1, request_log=log) as provider:
        status, answer = _post(provider.url, past)
        assert status == 413 and answer["error"]["type"] == "request_too_large", answer
        assert f"may hold {bound + 2} JSON values, over the {bound + 1}" in \
            answer["error"]["message"]
        assert provider.tool_results == {} and provider.errors == 1
        assert _post(provider.url, at_bound)[0] == 200
        assert provider.tool_results == {"t1": (False, "seen")}
    first = json.loads(log.read_text().splitlines()[0])
    assert first["body"] is None and "undecoded" in first["dropped"]


def test_a_body_past_the_values_in_flight_is_answered_529_and_the_budget_comes_back() -> None:
    """A body within its own bound that does not fit the budget of the bodies being handled
    is refused overloaded (the CLI retries); a body that fits is served, again and again (a
    budget not given back would refuse the second)."""
    small, wide = _body(0), _body(30)
    with ScriptedProvider([SCRIPT], values_in_flight=json_values(small) + 5) as provider:
        for _ in range(3):
            assert _post(provider.url, small)[0] == 200
        status, answer = _post(provider.url, wide)
        assert status == 529 and answer["error"]["type"] == "overloaded_error", answer
        assert _post(provider.url, small)[0] == 200


def test_a_wide_body_costs_the_provider_its_bytes_not_its_objects() -> None:
    """At the real bounds: a 9 MiB body of three million empty objects is refused before it
    is decoded; the provider allocates about its bytes (the read), not the 200 MB and more
    that decoding it takes."""
    data = _body(3 * MiB)
    assert json_values(data) > MAX_REQUEST_VALUES
    with ScriptedProvider([SCRIPT]) as provider:
        gc.collect()
        tracemalloc.start()
        try:
            status = _post(provider.url, data)[0]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 4 * len(data), f"{peak / MiB:.0f} MiB allocated for a {len(data)} byte body"
    assert status == 413
