"""What the gateway reads of a body as it streams past: the system prompt's digest and the model,
the same as from the body parsed whole, within bounds (sandbox/gateway/_scan.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox.gateway._digest import system_digest
from sandbox.gateway._scan import MAX_PENDING_BYTES, MAX_SYSTEM_CHARS, BodyScan

SYSTEM = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.abc;"},
          {"type": "text", "text": "You are a test agent.\nToday's date is 2026-12-03.\nGo."}]
BODIES: list[Any] = [
    {"model": "claude-opus-4-8", "messages": [{"role": "user", "content": "hi"}],
     "system": SYSTEM, "tools": [{"name": "Read", "input_schema": {"system": "nested"}}]},
    {"messages": [{"role": "user", "content": "x", "system": "inside a message"}],
     "model": "m", "system": "a plain string system"},
    {"model": "m", "messages": []},
    {"system": [{"type": "text", "text": "é ☃ \u2028"}, {"type": "image", "text": "no"}]},
    {"system": {"not": ["a", "list"]}, "model": 7},
    {"system.item": [{"type": "text", "text": "a dotted top-level key"}], "model": "m"},
    {"system": None, "model": None},
    [{"system": SYSTEM}],
    "a string body",
]


def scanned(raw: bytes, piece: int) -> BodyScan:
    scan = BodyScan()
    for start in range(0, len(raw), piece):
        scan.feed(raw[start:start + piece])
    scan.end()
    return scan


@pytest.mark.parametrize("piece", [1, 7, 4096])
@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_the_scan_reads_what_the_whole_body_parsed_says(body: Any, piece: int) -> None:
    raw = json.dumps(body, ensure_ascii=piece == 7).encode()
    scan = scanned(raw, piece)
    whole = json.loads(raw)
    assert scan.digest == system_digest(whole)
    model = whole.get("model") if isinstance(whole, dict) else None
    assert scan.model == (model if isinstance(model, str) else None)


def test_a_key_given_twice_counts_as_its_last_value() -> None:
    raw = b'{"system": "first", "model": "a", "system": "second", "model": "b"}'
    scan = scanned(raw, 5)
    assert scan.digest == system_digest(json.loads(raw)) == system_digest({"system": "second"})
    assert scan.model == "b"


@pytest.mark.parametrize("raw", [
    b'{"system": "cut off', b'{"system": "x"} trailing', b'{"system": "x"}{"system": "y"}',
    b'{"system": "\xff"}', b'not json at all'])
def test_a_body_that_is_not_one_whole_json_object_has_no_digest(raw: bytes) -> None:
    scan = scanned(raw, 3)
    assert scan.digest is None
    assert scan.model is None


def test_a_body_that_did_not_arrive_whole_has_no_digest() -> None:
    scan = BodyScan()
    scan.feed(json.dumps({"model": "m", "system": SYSTEM}).encode())
    assert (scan.digest, scan.model) == (None, None)  # no end: it broke off


def test_a_system_at_the_bound_is_digested_and_one_past_it_is_not() -> None:
    at = {"system": "a" * MAX_SYSTEM_CHARS, "model": "m"}
    past = {"system": [{"type": "text", "text": "a" * (MAX_SYSTEM_CHARS - 3)},
                       {"type": "text", "text": "bbbb"}], "model": "m"}
    assert scanned(json.dumps(at).encode(), 65536).digest == system_digest(at)
    scan = scanned(json.dumps(past).encode(), 65536)
    assert scan.digest is None
    assert scan.model == "m"  # the rest of the body is still read


def test_a_value_longer_than_the_pending_bound_stops_the_scan() -> None:
    """A string that does not end within the bound is not held: the scan stops, so the system
    prompt after it is not read, and the request has no digest."""
    scan = BodyScan()
    scan.feed(b'{"model": "m", "messages": [{"content": "')
    sent = 0
    while sent <= MAX_PENDING_BYTES + 65536:
        scan.feed(b"a" * 65536)
        sent += 65536
    scan.feed(b'"}], "system": "short"}')
    scan.end()
    assert scan.digest is None
    assert scan.model == "m"  # read before the scan stopped
