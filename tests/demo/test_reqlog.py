"""The scripted provider's request log: off by default, one line per request, bounded.

Expected values come from the log's definition (docs/provider.md): a line is
``{"path", "session", "body"}`` with the body as sent; a body's line past
4 MiB is a ``dropped`` line; the log stops at 64 MiB with one line saying so,
and its stop writes how many requests it dropped.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from campaign.batch._options import BatchOptions, Provider
from campaign.cli._provider import start_provider
from demo import REQUEST_LOG_ENV, Script, ScriptedProvider
from demo._reqlog import REQUEST_LOG_BODY_BYTES, REQUEST_LOG_BYTES, RequestLog

MIB = 1024 * 1024
SCRIPT = Script.model_validate(
    {"match": "TASK-LOG", "name": "log", "turns": [{"blocks": [{"type": "text", "text": "ok"}]}]}
)


def _body(task: str = "TASK-LOG", pad: str = "") -> dict[str, Any]:
    return {"model": "m", "stream": False, "system": [{"type": "text", "text": pad}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": task}]}]}


def _post(url: str, body: dict[str, Any], session: str) -> int:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        conn.request("POST", "/v1/messages?beta=true", json.dumps(body).encode(),
                     {"Content-Type": "application/json", "X-Claude-Code-Session-Id": session})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_the_bounds_are_4_mib_per_request_and_64_mib_per_log() -> None:
    assert (REQUEST_LOG_BODY_BYTES, REQUEST_LOG_BYTES) == (4 * MIB, 64 * MIB)


def test_a_provider_without_a_request_log_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with ScriptedProvider([SCRIPT]) as provider:
        assert _post(provider.url, _body(), "sess-a") == 200
    assert list(tmp_path.iterdir()) == []


def test_each_request_is_one_line_with_its_path_session_and_body(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    first, second = _body(), _body("TASK-OTHER")
    with ScriptedProvider([SCRIPT], request_log=log) as provider:
        assert _post(provider.url, first, "sess-a") == 200
        assert _post(provider.url, second, "sess-b") == 200
    assert _lines(log) == [
        {"path": "/v1/messages?beta=true", "session": "sess-a", "body": first},
        {"path": "/v1/messages?beta=true", "session": "sess-b", "body": second},
    ]


def test_a_request_past_4_mib_is_a_line_that_says_it_was_dropped(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    big = _body(pad="x" * (4 * MIB))  # its line is over 4 MiB by the envelope alone
    with ScriptedProvider([SCRIPT], request_log=log) as provider:
        assert _post(provider.url, big, "sess-big") == 200  # still answered
        assert _post(provider.url, _body(), "sess-small") == 200
    dropped, kept = _lines(log)
    assert dropped["body"] is None and dropped["session"] == "sess-big"
    assert "over the 4194304 kept per request" in dropped["dropped"]
    assert kept["body"] == _body() and "dropped" not in kept
    assert log.stat().st_size < MIB


def test_the_log_stops_at_its_bound_and_says_what_it_dropped(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    body = {"pad": "y" * 100}
    one = len(json.dumps({"path": "/p", "session": "s", "body": body},
                         separators=(",", ":")).encode()) + 1
    log = RequestLog(path, max_bytes=3 * one + one // 2)  # room for three lines and a half
    for _ in range(5):
        log.append("/p", "s", body)
    assert log.dropped == 2
    log.close()
    lines = _lines(path)
    assert [line.get("body") for line in lines[:3]] == [body] * 3
    assert "reached its bound" in lines[3]["dropped"] and "body" not in lines[3]
    assert lines[4:] == [{"dropped_requests": 2}]
    log.close()  # idempotent: no second count
    assert len(_lines(path)) == 5


def test_an_appended_log_counts_what_the_file_already_holds(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"x" * 1000 + b"\n")
    log = RequestLog(path, max_bytes=1010)
    log.append("/p", "s", {"a": 1})
    log.close()
    old, *new = path.read_bytes().splitlines()
    assert old == b"x" * 1000 and json.loads(new[-1]) == {"dropped_requests": 1}


def test_a_closed_log_takes_no_more_lines(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    log = RequestLog(path)
    log.close()
    log.append("/p", "s", {"a": 1})
    assert path.read_bytes() == b""


def _options(provider: Provider, scripts: str | None) -> BatchOptions:
    return BatchOptions(command="run", corpus="/c", tier="campaign", seed=0, harness_path="/h",
                        provider=provider, scripts=scripts)


def test_the_cli_ignores_the_variable_for_a_real_provider_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv(REQUEST_LOG_ENV, str(log))
    notes: list[str] = []
    with start_provider(_options("anthropic", None), notes.append) as (_, scripted):
        assert scripted is None
    assert notes == [f"warning: {REQUEST_LOG_ENV} is ignored: the provider is not scripted"]
    assert not log.exists()


def test_the_cli_logs_the_scripted_providers_requests_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "log.json").write_text(SCRIPT.model_dump_json(exclude={"name"}))
    log = tmp_path / "requests.jsonl"
    monkeypatch.delenv(REQUEST_LOG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    notes: list[str] = []
    with start_provider(_options("scripted", str(scripts)), notes.append) as (url, scripted):
        assert scripted is not None and _post(url, _body(), "sess-a") == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scripts"]
    monkeypatch.setenv(REQUEST_LOG_ENV, str(log))
    with start_provider(_options("scripted", str(scripts)), notes.append) as (url, _):
        assert _post(url, _body(), "sess-b") == 200
    assert [line["session"] for line in _lines(log)] == ["sess-b"] and notes == []
