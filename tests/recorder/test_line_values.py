"""What one stdout line may decode to is bounded, not only its bytes (docs/recorder.md,
"What one line may decode to"; `recorder._bounds.MAX_LINE_VALUES`)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

from recorder._harness import json_values, observe_line, parse_line
from recorder._initcheck import InitPolicy
from recorder._record_bounds import RecordBounds
from recorder._transform import MAX_LINE_VALUES, Observation, StreamObserver

POLICY = InitPolicy("dontAsk", frozenset({"docs"}), frozenset(), "/home/agent")
INIT = json.dumps({"type": "system", "subtype": "init", "cwd": "/workspace", "mcp_servers": [],
                   "permissionMode": "dontAsk", "skills": [], "plugins": [],
                   "memory_paths": {"auto": "/home/agent/projects/-workspace/memory/"},
                   "claude_code_version": "2.1.197"}).encode()
RESULT = json.dumps({"type": "result", "subtype": "success", "is_error": False,
                     "num_turns": 1, "result": "done", "total_cost_usd": 0}).encode()
MIB = 1 << 20


def _assistant(content: bytes, text: str = "the answer") -> bytes:
    """An assistant line whose content is ``content`` (JSON array items, raw) and a text."""
    head = b'{"type":"assistant","parent_tool_use_id":null,"message":{"id":"m","model":"s",'
    block = json.dumps({"type": "text", "text": text}).encode()
    return head + b'"content":[' + content + block + b"]}}"


def _observe(*lines: bytes, bounds: RecordBounds | None = None) -> Observation:
    observer = StreamObserver(policy=POLICY, workspace=Path("/workspace"), bounds=bounds)
    for line in lines:
        observer.feed(line)
    return observer.finish(end="exited", exit_status=0, tail=None)


def test_json_values_counts_braces_brackets_and_commas_an_over_count() -> None:
    assert json_values(b"{}") == 1
    assert json_values(b'{"a":[1,2,{}]}') == 5  # { [ , , {
    assert json_values(b'"a,b{c["') == 3  # inside a string: counted too
    assert json_values(b"1.5") == 0


def test_a_line_past_the_values_bound_is_not_decoded_and_ends_the_session() -> None:
    """Its text is not read (not decoded), the reason names the line and the bound."""
    at_bound = _assistant(b"{}," * 10, "kept")  # 28: 20, 6 in the head, 2 in the block
    past = _assistant(b"{}," * 20, "never read")  # 48
    assert json_values(at_bound) <= 40 < json_values(past) and len(past) > 40
    obs = _observe(INIT, at_bound, past, RESULT, bounds=RecordBounds(line_values=40))
    assert obs.state == "limit-exceeded", obs.reason
    assert f"stdout line 3 ({len(past)} bytes) may hold {json_values(past)} JSON values" \
        in obs.reason
    assert "over the 40 one line may decode to: it was not decoded" in obs.reason
    assert obs.final_text == "kept"  # the line past it supplied nothing
    assert obs.anomaly_count == 0 and obs.lines == 4


def test_a_real_large_line_is_kept_at_the_real_bound() -> None:
    """A 1.4 MB tool result of base64 text (BC-03's shape) and a 2 MB text full of commas
    (1 of 4 bytes, a CSV) stay far below `MAX_LINE_VALUES`."""
    image = json.dumps([{"type": "tool_result", "tool_use_id": "t",
                         "content": "iVBORw0KGgo" * (1400 * 1024 // 11)}]).encode()
    csv = ("abc," * (MIB // 2))[:-1]
    obs = _observe(INIT, _assistant(image + b",", csv), RESULT)
    assert (obs.state, obs.final_text) == ("recorded", csv)


def test_a_wide_line_costs_the_transform_a_bounded_memory() -> None:
    """At the real bound: a 9 MiB line of three million empty objects is refused before it
    is decoded, so feeding it allocates nothing near what decoding it does (256 MB at its
    peak, measured with tracemalloc); the line itself is the caller's."""
    line = _assistant(b"{}," * (3 * MIB))
    assert json_values(line) > MAX_LINE_VALUES
    observer = StreamObserver(policy=POLICY, workspace=Path("/workspace"))
    observer.feed(INIT)
    gc.collect()
    tracemalloc.start()
    try:
        observer.feed(line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MIB, f"feeding the line allocated {peak} bytes at its peak"
    obs: Any = observer.finish(end="exited", exit_status=0, tail=None)
    assert obs.state == "limit-exceeded"


def _peak(decode: Any, line: bytes) -> int:
    """Bytes allocated at the peak of ``decode(line)`` (what it returns let go after)."""
    gc.collect()
    tracemalloc.start()
    try:
        decode(line)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_init_line_is_decoded_by_one_decoder_at_a_time() -> None:
    """An init line is read whole by the reference decoder after the typed one saw its type:
    the typed decoder's objects are let go first, so the line costs what the reference
    alone costs (kept alive, twice that: 42 MiB against 21 for this line), within a margin."""
    line = (b'{"type":"system","subtype":"init","cwd":"/w","message":['
            + b"{}," * 300_000 + b"{}]}")
    assert _peak(observe_line, line) < 1.25 * _peak(parse_line, line)
