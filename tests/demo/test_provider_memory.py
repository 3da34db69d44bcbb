"""What the scripted provider holds between requests is bounded (docs/provider.md "Bounds").

It runs in the runner's process for the whole batch: 24 requests of 60 MiB once took the
root runner from 58 MB to 1.57 GB, held to the batch's end (every tool_result text kept).
The bounds come from demo/_held.py and demo/_server.py; the held memory is measured with
tracemalloc (every thread's allocations), never inferred from the code's own counters.
"""

from __future__ import annotations

import gc
import http.client
import json
import socket
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from demo import Script, ScriptedProvider
from demo._held import (
    ENTRY_OVERHEAD_BYTES,
    TOOL_RESULT_TEXT_CHARS,
    TOOL_RESULTS_BYTES,
    TOOL_RESULTS_SESSION_BYTES,
    BoundedCounts,
    BoundedMap,
    ToolResults,
    tool_result_text,
)
from demo._reqlog import RequestLog
from demo._server import FAULT_KEYS, MISS_KINDS, MISS_OVERFLOW

MiB = 1024 * 1024
SCRIPT = Script.model_validate({"match": "TASK-BIG", "name": "big", "turns": [
    {"blocks": [{"type": "text", "text": "ok"}]}] * 3})


def _body(results: list[tuple[str, Any]], task: str = "TASK-BIG") -> dict[str, Any]:
    """A request whose second user message carries ``results`` (tool_use id, content)."""
    return {"model": "m", "stream": False, "messages": [
        {"role": "user", "content": [{"type": "text", "text": task}]},
        {"role": "assistant", "content": [{"type": "text", "text": "t"}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": content}
            for tid, content in results]}]}


def _post(url: str, data: bytes, *, session: str) -> int:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        conn.request("POST", "/v1/messages", data, {"Content-Type": "application/json",
                                                    "X-Claude-Code-Session-Id": session})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_forty_requests_of_8_mib_leave_the_provider_holding_a_bounded_few_mib() -> None:
    """40 x 8 MiB tool_result texts (4 sessions, distinct ids): what stays allocated after
    them is under the overall bound plus slack, not the 320 MiB sent (red: every text kept
    whole, 320 MiB held)."""
    text = "r" * (8 * MiB)
    with ScriptedProvider([SCRIPT]) as provider:
        _post(provider.url, json.dumps(_body([("warm", "x")])).encode(), session="warm")
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for n in range(40):
                data = json.dumps(_body([(f"toolu_{n}", text)])).encode()
                assert _post(provider.url, data, session=f"s{n % 4}") == 200
                del data
            time.sleep(0.2)  # the last handler thread lets go of its body
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        kept = provider.tool_results
    assert held < 8 * MiB, f"{held / MiB:.1f} MiB held after 320 MiB sent"
    assert len(kept) == 41
    assert all(len(t) <= TOOL_RESULT_TEXT_CHARS for _, t in kept.values())
    assert kept["toolu_39"] == (False, "r" * TOOL_RESULT_TEXT_CHARS)


def test_one_session_holds_at_most_its_bound_and_its_latest_results() -> None:
    table = ToolResults()
    text = "y" * TOOL_RESULT_TEXT_CHARS
    for n in range(10_000):
        table.note(f"toolu_{n}", is_error=False, text=text, session="one")
    kept = table.snapshot()
    measured = sum(sys.getsizeof(k) + sys.getsizeof(t) + ENTRY_OVERHEAD_BYTES
                   for k, (_, t) in kept.items())
    assert measured == table.held_bytes <= TOOL_RESULTS_SESSION_BYTES
    assert "toolu_9999" in kept and "toolu_0" not in kept  # the least recently sent went


def test_all_sessions_together_hold_at_most_the_overall_bound() -> None:
    table = ToolResults()
    text = "z" * TOOL_RESULT_TEXT_CHARS
    for n in range(20_000):  # a new session per result: the per-session bound never bites
        table.note(f"toolu_{n}", is_error=True, text=text, session=f"sess-{n}")
    measured = sum(sys.getsizeof(k) + sys.getsizeof(t) + ENTRY_OVERHEAD_BYTES
                   for k, (_, t) in table.snapshot().items())
    assert measured == table.held_bytes <= TOOL_RESULTS_BYTES
    assert table.held_bytes > TOOL_RESULTS_BYTES // 2  # it keeps what fits, not nothing


def test_ids_and_sessions_a_session_chose_are_cut() -> None:
    table = ToolResults()
    table.note("i" * MiB, is_error=False, text="t", session="s" * MiB)
    assert table.held_bytes < 1024


def test_a_text_is_cut_to_its_start_without_joining_all_of_it() -> None:
    blocks = [{"type": "text", "text": "a" * 3000}, {"type": "image"},
              {"type": "text", "text": "b" * (64 * MiB)}]
    text = tool_result_text(blocks)
    assert text == ("a" * 3000 + "\n\n" + "b" * 4096)[:TOOL_RESULT_TEXT_CHARS]
    assert tool_result_text("c" * 10_000) == "c" * TOOL_RESULT_TEXT_CHARS
    assert tool_result_text(None) == "" and tool_result_text({"text": 1}) == ""


def test_a_session_that_sends_many_session_ids_keeps_a_bounded_fault_table() -> None:
    faulty = Script.model_validate({"match": "FAULTY", "name": "f", "turns": [
        {"fault": "http", "status": 529}, {"blocks": [{"type": "text", "text": "ok"}]}]})
    provider = ScriptedProvider([faulty])
    first = {"model": "m", "messages": [{"role": "user", "content": "FAULTY"}]}
    for n in range(FAULT_KEYS + 500):
        provider._decide(first, session=f"session-{n}")
    assert len(provider._fault_hits) == FAULT_KEYS
    # A session still sees its fault once, then its turn.
    assert provider._decide(first, session="last").fault is not None
    assert provider._decide(first, session="last").fault is None


def test_the_misses_count_every_request_under_a_bounded_number_of_reasons() -> None:
    provider = ScriptedProvider([SCRIPT])
    for n in range(300):
        provider._decide(_body([], task=f"task number {n} nobody scripted"), session="s")
    misses = provider.misses
    assert len(misses) == MISS_KINDS + 1 and misses[MISS_OVERFLOW] == 300 - MISS_KINDS
    assert sum(misses.values()) == provider.unmatched == 300


def test_bounded_tables_refuse_no_room() -> None:
    with pytest.raises(ValueError):
        BoundedMap[str, int](0)
    with pytest.raises(ValueError):
        BoundedCounts[str](0, "x")
    with pytest.raises(ValueError):
        ToolResults(total_bytes=1)


def test_a_body_past_the_bodies_in_flight_is_answered_529_unread() -> None:
    """Bodies being handled at once are bounded: one held half-sent takes the budget, the
    next is refused before a byte of it is read; once the first is done, it is served."""
    with ScriptedProvider([SCRIPT], bodies_in_flight_bytes=MiB) as provider:
        parts = urlsplit(provider.url)
        held = socket.create_connection((parts.hostname or "", parts.port or 0), timeout=30)
        held.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: %d\r\n\r\n{" % MiB)
        time.sleep(0.3)  # its handler has taken the budget and waits for the rest
        small = json.dumps(_body([])).encode()
        assert _post(provider.url, small, session="other") == 529
        held.close()
        time.sleep(0.3)
        assert _post(provider.url, small, session="other") == 200


def test_a_body_past_max_request_bytes_is_answered_413() -> None:
    with ScriptedProvider([SCRIPT], max_request_bytes=1024) as provider:
        assert _post(provider.url, json.dumps(_body([("t", "x" * 2048)])).encode(),
                     session="s") == 413
        assert provider.tool_results == {}


def test_the_request_log_drops_a_huge_body_without_encoding_it(tmp_path: Path) -> None:
    """8 MiB of control characters would be a 48 MiB line (``\\u0001`` each): the log must
    not build it to find out it is too long (red: peak about 50 MiB)."""
    body = _body([("t", "\x01" * (8 * MiB))])
    log = RequestLog(tmp_path / "log.jsonl")
    tracemalloc.start()
    try:
        log.append("/v1/messages", "s", body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        log.close()
    assert peak < MiB, f"{peak / MiB:.1f} MiB to log one request"
    (line,) = (tmp_path / "log.jsonl").read_text().splitlines()
    assert json.loads(line)["body"] is None and "over the" in json.loads(line)["dropped"]
