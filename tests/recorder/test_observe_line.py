"""observe_line (the typed decoder the transform reads with) against parse_line (the reference).

The definition: `observe_line` gives the keys of `LINE_KEYS` (what the transform
and the init check read) that `parse_line` gives, value for value and type for
type (a ``Decimal`` with the same digits), no other key, and None exactly when
it gives None; an init line whole, as `parse_line` gives it (its every key is
decided or listed: RC-07); and it decodes each other line once. Every capture,
every bug input, the edge cases of JSON text, and generated lines are held to
it; so are whole observations.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recorder._harness as _harness
from recorder._harness import LINE_KEYS, observe_line, parse_line
from recorder._initcheck import InitPolicy
from recorder._transform import StreamObserver

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
STREAMS = sorted([*FIXTURES.glob("captures/*.jsonl"), *FIXTURES.glob("bug_inputs/*.jsonl")])


def expected(line: bytes) -> str:
    """What observe_line must give, from the definition: parse_line's keys of `LINE_KEYS`, as
    a repr so that types and a Decimal's digits count."""
    ref = parse_line(line)
    if ref is None:
        return repr(None)
    if ref.get("type") == "system" and ref.get("subtype") == "init":
        return repr(ref)
    return repr({key: ref[key] for key in LINE_KEYS if key in ref})


def got(line: bytes) -> str:
    return repr(observe_line(line))


@pytest.mark.parametrize("path", STREAMS, ids=[p.name for p in STREAMS])
def test_observe_line_agrees_with_the_reference_on_every_fixture_line(path: Path) -> None:
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        assert got(line) == expected(line), f"{path.name}:{number}"


EDGES = {
    "invalid utf-8 in a skipped key": b'{"type":"user","junk":"\xff"}',
    "overlong utf-8 in a skipped key": b'{"type":"user","junk":"\xc0\xaf"}',
    "invalid utf-8 in a kept key": b'{"type":"user","result":"\xc0\xaf"}',
    "a cut character at a 64 KiB piece boundary": (
        b'{"type":"user","junk":"' + b"a" * (64 * 1024 - 24) + b'\xe2\x82"}'),
    "a character across a 64 KiB piece boundary": (
        b'{"type":"user","junk":"' + b"a" * (64 * 1024 - 24) + "\u20ac\u20ac".encode() + b'"}'),
    "five continuation bytes across a piece boundary": (
        b'{"type":"user","junk":"' + b"a" * (64 * 1024 - 25) + b"\x80" * 5 + b'"}'),
    "raw control character in a skipped key": b'{"type":"user","junk":"a\x01b"}',
    "bad escape in a skipped key": b'{"type":"user","junk":"\\x"}',
    "lone surrogate escaped in a skipped key": b'{"type":"user","junk":"\\udc80"}',
    "lone surrogate escaped in a kept key": b'{"type":"result","result":"a\\udc80b"}',
    "lone surrogate as bytes in a kept key": b'{"type":"result","result":"\xed\xb2\x80"}',
    "lone surrogate as bytes in a skipped key": b'{"type":"user","junk":"\xed\xb2\x80"}',
    "surrogate pair": b'{"type":"result","result":"\\ud83d\\ude00"}',
    "duplicate observed key": b'{"type":"user","type":"result","is_error":false}',
    "duplicate nested key": b'{"type":"user","message":{"a":1,"a":2}}',
    "big integer": b'{"type":"result","num_turns":100000000000000000000000000000}',
    "float with exponent": b'{"type":"result","total_cost_usd":1e400}',
    "cost digits": b'{"type":"result","total_cost_usd":0.011000000000000003}',
    "cost negative zero": b'{"type":"result","total_cost_usd":-0.0}',
    "cost integer": b'{"type":"result","total_cost_usd":3}',
    "NaN": b'{"type":"result","total_cost_usd":NaN}',
    "Infinity in a skipped key": b'{"type":"user","junk":-Infinity}',
    "UTF-8 byte-order mark": b'\xef\xbb\xbf{"type":"user"}',
    "UTF-16 with its mark": '{"type":"user"}'.encode("utf-16"),
    "UTF-16 without a mark": '{"type":"user"}'.encode("utf-16-le"),
    "UTF-16 with its mark and a non-ASCII character": '{"type":"user","x":"\u00e9"}'.encode(
        "utf-16"),
    "trailing white space": b'{"type":"user"}  \r',
    "trailing bytes": b'{"type":"user"} x',
    "trailing comma": b'{"type":"user",}',
    "a list": b'[{"type":"user"}]',
    "a number": b"1.5",
    "empty": b"",
    "deep in a skipped key": b'{"type":"user","junk":' + b"[" * 5000 + b"]" * 5000 + b"}",
    "deep in a kept key": b'{"type":"user","message":' + b"[" * 5000 + b"]" * 5000 + b"}",
    "init": b'{"type":"system","subtype":"init","x":[1.50,2],"permissionMode":"dontAsk"}',
    "init, observed keys twice": b'{"type":"system","subtype":"init","subtype":"init","y":1}',
    "not init": b'{"type":"system","subtype":"hook_started","x":1}',
    "wrong types": b'{"type":5,"message":"text","parent_tool_use_id":[],"is_error":"no"}',
    "non-breaking space as white space": b'{\xc2\xa0"type":"user"}',
    "raw DEL": b'{"type":"result","result":"a\x7fb"}',
}


@pytest.mark.parametrize("line", EDGES.values(), ids=EDGES.keys())
def test_observe_line_agrees_with_the_reference_on_the_edges_of_json(line: bytes) -> None:
    assert got(line) == expected(line)


def test_observe_line_never_builds_what_the_transform_does_not_read() -> None:
    line = json.dumps({"type": "user", "message": {"content": []},
                       "tool_use_result": {"file": {"content": "x" * 1000}}}).encode()
    assert observe_line(line) == {"type": "user", "message": {"content": []}}


def test_an_init_line_is_read_whole_and_another_line_once() -> None:
    """An init line is given whole, every key it prints (the unknown ones are listed, RC-07);
    a line of another kind goes through the typed decoder alone: the reference is never
    called for it (seen by a profile hook, nothing replaced)."""
    init = {"type": "system", "subtype": "init", "cwd": "/workspace", "permissionMode": "dontAsk",
            "plugins": [], "mcp_servers": [], "skills": [], "memory_paths": {},
            "claude_code_version": "2.1.332", "tools": ["Read"] * 50, "uuid": "u",
            "a_new_key": {"x": 1}}
    assert observe_line(json.dumps(init).encode()) == init
    called: list[str] = []

    def watch(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            called.append(frame.f_code.co_name)

    hook = {**init, "subtype": "hook_started"}
    sys.setprofile(watch)
    try:
        obj = observe_line(json.dumps(hook).encode())
    finally:
        sys.setprofile(None)
    assert "parse_line" not in called
    assert obj == {key: value for key, value in hook.items()
                   if key not in ("tools", "uuid", "a_new_key")}


_KEYS = st.sampled_from([*LINE_KEYS, "tool_use_result", "uuid", "junk"])
_TEXT = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF,
                                       exclude_categories=()), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers(-(10**30), 10**30) | _TEXT
            | st.sampled_from(["system", "init", "user", "assistant", "result"])
            | st.decimals(allow_nan=False, places=None).map(lambda d: _Literal(str(d))))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(_KEYS | _TEXT, inner, max_size=3), max_leaves=12)


class _Literal(str):
    """A JSON number written as this text (a float's digits as they are)."""


def _dump(value: Any, ensure_ascii: bool) -> str:
    if isinstance(value, _Literal):
        return str(value) if any(c.isdigit() for c in value) else "0.5"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=ensure_ascii)}:"
                              f"{_dump(v, ensure_ascii)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(v, ensure_ascii) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ensure_ascii)


@settings(max_examples=400, deadline=None)
@given(obj=st.dictionaries(_KEYS, _VALUES, max_size=6), ensure_ascii=st.booleans(),
       cut=st.integers(0, 400), byte=st.integers(0, 255), mutate=st.booleans())
def test_observe_line_agrees_with_the_reference_on_generated_lines(
    obj: dict[str, Any], ensure_ascii: bool, cut: int, byte: int, mutate: bool,
) -> None:
    text = _dump(obj, ensure_ascii)
    line = text.encode("utf-8", "surrogatepass")
    if mutate and line:  # one byte replaced: malformed JSON, bad UTF-8, or still fine
        at = cut % len(line)
        line = line[:at] + bytes([byte]) + line[at + 1 :]
    assert got(line) == expected(line)


def _observe(lines: list[bytes],
             decode: Callable[[bytes], dict[str, Any] | None] = observe_line) -> str:
    policy = InitPolicy("dontAsk", frozenset(), frozenset(), "/home/agent")
    observer = StreamObserver(policy=policy, workspace=Path("/workspace"), decode=decode)
    for line in lines:
        observer.feed(line)
    return repr(observer.finish(end="exited", exit_status=0, tail=None))


@pytest.mark.parametrize("path", STREAMS, ids=[p.name for p in STREAMS])
def test_a_whole_observation_is_the_same_with_the_reference_decoder(path: Path) -> None:
    lines = path.read_bytes().split(b"\n")[:-1]
    assert _observe(lines) == _observe(lines, decode=parse_line)


@pytest.mark.parametrize("shift", range(-4, 5))
@pytest.mark.parametrize("char", ["\u00e9", "\u20ac", "\U0001f600", "\udc80"])
def test_the_utf8_check_takes_a_character_across_its_piece_boundary(shift: int,
                                                                    char: str) -> None:
    """The line is checked in pieces; a piece never ends inside a character, so a valid line
    is valid wherever its characters fall (were it cut inside one, the fast path would be
    lost, not the answer: a line found invalid goes to the reference)."""
    line = b"a" * (_harness._UTF8_PIECE_BYTES + shift) + char.encode("utf-8", "surrogatepass")
    line += b"b" * 10
    assert _harness._is_utf8(line)
    assert not _harness._is_utf8(line[:-11] + b"\xff" + line[-10:])
