"""The census of a set of streams: kinds, keys, types, subtypes, members; stable bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from census import ALL, INIT_KIND, NOT_AN_OBJECT, dump_census, json_type, line_kind, take_census

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CAPTURES = FIXTURES / "captures"
CENSUSES = FIXTURES / "census"


def _lines(*objs: object) -> bytes:
    return b"".join(json.dumps(obj).encode() + b"\n" for obj in objs)


INIT = {"type": "system", "subtype": "init", "cwd": "/workspace", "session_id": "s-1",
        "tools": ["Bash", "Read"], "memory_paths": {"auto": "/x"},
        "mcp_servers": [{"name": "echo", "status": "connected"}]}


def test_a_line_kind_is_its_type_and_a_system_line_s_subtype() -> None:
    assert line_kind({"type": "assistant"}) == "assistant"
    assert line_kind({"type": "system", "subtype": "init"}) == INIT_KIND == "system/init"
    assert line_kind({"type": "system", "subtype": 3}) == "system/?"
    assert line_kind({"subtype": "x"}) == "(no type)"


@pytest.mark.parametrize(("value", "kind"), [(None, "null"), (True, "boolean"), (0, "number"),
                                             (0.5, "number"), ("x", "string"), ([], "array"),
                                             ({}, "object")])
def test_json_types_are_json_s_six(value: object, kind: str) -> None:
    assert json_type(value) == kind


def test_each_kind_counts_lines_and_situations_and_lists_every_key_with_types() -> None:
    census = take_census("9.9.9", [
        ("one", _lines(INIT, {"type": "result", "subtype": "success", "total_cost_usd": 0.5},
                       {"type": "result", "subtype": "success", "total_cost_usd": 1})),
        ("two", _lines(INIT, {"type": "result", "subtype": "error_max_turns", "is_error": True,
                              "total_cost_usd": None})),
    ])
    assert census["situations"] == ["one", "two"]
    result = census["kinds"]["result"]
    assert (result["lines"], result["situations"]) == (3, ["one", "two"])
    assert result["keys"]["total_cost_usd"] == {"types": ["null", "number"], "lines": 3,
                                                "situations": ALL}
    assert result["keys"]["is_error"] == {"types": ["boolean"], "lines": 1,
                                          "situations": ["two"]}
    assert result["subtypes"] == {"error_max_turns": {"lines": 1, "situations": ["two"]},
                                  "success": {"lines": 2, "situations": ["one"]}}


def test_the_init_line_lists_its_members_and_object_keys_and_no_value() -> None:
    census = take_census("9.9.9", [("one", _lines(INIT)),
                                   ("two", _lines({**INIT, "tools": ["Read", "Monitor"]}))])
    init = census["kinds"][INIT_KIND]
    assert init["members"] == {"tools": {"Bash": ["one"], "Monitor": ["two"], "Read": ALL}}
    assert init["object_keys"] == {"mcp_servers": {"name": ALL, "status": ALL},
                                   "memory_paths": {"auto": ALL}}
    text = dump_census(census)
    assert "s-1" not in text and "/workspace" not in text and "connected" not in text


def test_assistant_and_user_lines_list_their_message_keys() -> None:
    census = take_census("9.9.9", [("one", _lines(
        {"type": "assistant", "message": {"model": "m", "content": []}},
        {"type": "user", "message": {"role": "user", "content": "x"}, "timestamp": "t"}))])
    assert set(census["kinds"]["assistant"]["message_keys"]) == {"model", "content"}
    assert census["kinds"]["user"]["message_keys"]["role"]["types"] == ["string"]
    assert "message_keys" not in census["kinds"].get("result", {})


def test_a_line_that_is_not_a_json_object_is_counted_apart_and_blank_lines_are_skipped() -> None:
    census = take_census("9.9.9", [("one", b"not json\n\n[1, 2]\n" + _lines(INIT)[:-1])])
    assert census["kinds"][NOT_AN_OBJECT]["lines"] == 2
    assert census["kinds"][INIT_KIND]["lines"] == 1  # a last line without its newline counts


def test_the_census_is_the_same_bytes_whatever_the_order_of_its_streams() -> None:
    streams = [(path.stem, path.read_bytes()) for path in sorted(CAPTURES.glob("*.jsonl"))]
    assert dump_census(take_census("2.1.197", streams)) == dump_census(
        take_census("2.1.197", list(reversed(streams))))


def _committed(release: str, captures: Path) -> tuple[str, str]:
    streams = [(path.stem, path.read_bytes()) for path in sorted(captures.glob("*.jsonl"))]
    return (dump_census(take_census(release, streams)),
            (CENSUSES / f"{release}.json").read_text(encoding="utf-8"))


def test_the_census_of_the_committed_2_1_197_captures_is_the_committed_census() -> None:
    """A change to the census function, or to the 2.1.197 captures, is a diff of
    tests/fixtures/census/2.1.197.json, which `make census CENSUS_VERSION=2.1.197` writes."""
    taken, committed = _committed("2.1.197", CAPTURES)
    assert taken == committed

