"""The census of a set of streams: kinds, keys, types, subtypes, members; stable bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from census import (
    ALL,
    INIT_KIND,
    NOT_AN_OBJECT,
    diff_census,
    dump_census,
    json_type,
    line_kind,
    take_census,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CAPTURES = FIXTURES / "captures"
CENSUSES = FIXTURES / "census"
SITUATIONS = CENSUSES / "situations"


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


def _taken(release: str, streams: Path) -> dict[str, Any]:
    return take_census(release, [(path.stem, path.read_bytes())
                                 for path in sorted(streams.glob("*.jsonl"))])


def _committed(release: str) -> str:
    return (CENSUSES / f"{release}.json").read_text(encoding="utf-8")


def test_the_census_of_the_committed_2_1_332_streams_is_the_committed_census() -> None:
    """The streams `make census CENSUS_VERSION=2.1.332 CENSUS_ARGS=--captures` kept give
    exactly the census it wrote: a change to the census function, or to the streams, is a
    diff of tests/fixtures/census/2.1.332.json."""
    assert dump_census(_taken("2.1.332", FIXTURES / "captures-2.1.332")) == _committed("2.1.332")


def _shape(census: dict[str, Any]) -> dict[str, Any]:
    """What a drift is about: per kind its keys and their types, subtypes, message keys,
    members and object keys (no counts, no situations)."""
    def names(entry: dict[str, Any], part: str) -> Any:
        return {key: sorted(value) if part == "members" or part == "object_keys" else
                value.get("types") if isinstance(value, dict) else None
                for key, value in entry.get(part, {}).items()}
    return {kind: {part: names(entry, part) for part in ("keys", "subtypes", "message_keys",
                                                         "members", "object_keys")}
            for kind, entry in census["kinds"].items()}


def test_the_2_1_197_captures_show_exactly_the_kinds_keys_and_members_of_its_census() -> None:
    """The recorded 2.1.197 captures and the committed census of 2.1.197 (the situations
    replayed through it under the census's sandbox) agree on every kind, key, JSON type,
    subtype, message key and init member: the replay reproduces what the captures
    recorded. Counts and situations may differ (the best-effort situations; the captures'
    provider streamed thinking in other pieces)."""
    taken = _taken("2.1.197", CAPTURES)
    committed = json.loads(_committed("2.1.197"))
    assert [d for d in diff_census(committed, taken) if d.drifted] == []
    assert _shape(taken) == _shape(committed)
    assert taken["situations"] == committed["situations"]


@pytest.mark.parametrize("release", ["2.1.197", "2.1.250", "2.1.300", "2.1.332"])
def test_each_committed_census_is_of_its_release_and_of_every_situation(release: str) -> None:
    census = json.loads(_committed(release))
    assert census["release"] == release
    assert census["situations"] == sorted(p.name for p in SITUATIONS.iterdir() if p.is_dir())
    assert census["kinds"][INIT_KIND]["keys"]["claude_code_version"]["types"] == ["string"]


def test_the_committed_2_1_332_streams_are_of_2_1_332() -> None:
    versions = {json.loads(line)["claude_code_version"]
                for path in (FIXTURES / "captures-2.1.332").glob("*.jsonl")
                for line in path.read_bytes().splitlines() if b'"subtype":"init"' in line}
    assert versions == {"2.1.332"}
