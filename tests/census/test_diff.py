"""What is new and gone between two censuses, against small hand-made ones."""

from __future__ import annotations

from typing import Any

from census import KindDiff, diff_census


def _census(kinds: dict[str, Any]) -> dict[str, Any]:
    return {"format": 1, "release": "x", "situations": ["s"], "kinds": kinds}


def _kind(keys: list[str], **parts: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"lines": 1, "situations": ["s"],
                             "keys": {k: {"types": ["string"], "lines": 1, "situations": "all"}
                                      for k in keys}}
    entry.update(parts)
    return entry


OLD = _census({
    "result": _kind(["type", "total_cost_usd"], subtypes={"success": {}}),
    "system/init": _kind(["type", "cwd"], members={"tools": {"Bash": "all", "TaskList": "all"}},
                         object_keys={"memory_paths": {"auto": "all"}}),
    "assistant": _kind(["type", "message"], message_keys={"content": {}, "model": {}}),
    "system/task_updated": _kind(["type"]),
})
NEW = _census({
    "result": _kind(["type", "total_cost_usd", "result_index"],
                    subtypes={"success": {}, "error_during_execution": {}}),
    "system/init": _kind(["type", "cwd", "sandbox_enabled"],
                         members={"tools": {"Bash": "all", "Monitor": "all"},
                                  "capabilities": {"interrupt_receipt_v1": "all"}},
                         object_keys={"memory_paths": {"auto": "all", "team": "all"}}),
    "assistant": _kind(["type", "message"], message_keys={"content": {}}),
    "system/notification": _kind(["type"]),
})


def _by_kind() -> dict[str, KindDiff]:
    return {d.kind: d for d in diff_census(OLD, NEW)}


def test_a_kind_only_in_the_new_census_is_new_and_one_only_in_the_old_is_gone() -> None:
    diffs = _by_kind()
    assert diffs["system/notification"].presence == "new"
    assert diffs["system/task_updated"].presence == "gone"
    assert [d.kind for d in diff_census(OLD, NEW)] == sorted(diffs)


def test_keys_and_subtypes_new_and_gone() -> None:
    result = _by_kind()["result"]
    assert (result.new_keys, result.gone_keys) == (("result_index",), ())
    assert (result.new_subtypes, result.gone_subtypes) == (("error_during_execution",), ())
    assert _by_kind()["assistant"].gone_message_keys == ("model",)


def test_init_members_and_object_keys_new_and_gone_per_key() -> None:
    init = _by_kind()["system/init"]
    assert init.new_keys == ("sandbox_enabled",)
    assert init.new_members == {"tools": ("Monitor",), "capabilities": ("interrupt_receipt_v1",)}
    assert init.gone_members == {"tools": ("TaskList",)}
    assert init.new_object_keys == {"memory_paths": ("team",)}
    assert init.drifted


def test_a_census_against_itself_has_no_drift() -> None:
    assert not any(d.drifted for d in diff_census(NEW, NEW))
