"""The printout's "recorder reads" column: from the recorder's own key lists and tables."""

from __future__ import annotations

import io
import json
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import recorder
from census import INIT_KIND, NOT_DECIDED, NOT_READ, READ, print_census, recorder_keys, take_census


def test_every_key_the_recorder_observes_is_read_of_every_kind() -> None:
    reads = recorder_keys(_module())
    for key in recorder.OBSERVED_KEYS:
        assert reads.reading("assistant", key) == READ
        assert reads.reading(INIT_KIND, key) == READ


def test_an_init_key_is_read_on_the_init_line_only_and_another_is_not_decided() -> None:
    reads = recorder_keys(_module())
    for key in recorder.INIT_KEYS:
        assert reads.reading(INIT_KIND, key) == READ
        assert reads.reading("user", key) == NOT_READ
    assert reads.reading(INIT_KIND, "view_mode") == NOT_DECIDED
    assert reads.reading("assistant", "uuid") == NOT_READ


@dataclass(frozen=True)
class _Row:
    key: str
    decision: str


def _module(**tables: object) -> types.ModuleType:
    module = types.ModuleType("fake_recorder")
    module.OBSERVED_KEYS = recorder.OBSERVED_KEYS  # type: ignore[attr-defined]
    module.INIT_KEYS = recorder.INIT_KEYS  # type: ignore[attr-defined]
    for name, value in tables.items():
        setattr(module, name, value)
    return module


def test_the_recorder_s_decision_tables_decide_init_and_result_keys() -> None:
    reads = recorder_keys(_module(
        INIT_KEY_DECISIONS=(_Row("sandbox_enabled", "policed"), _Row("cwd", "policed")),
        RESULT_KEYS=(_Row("result_index", "ignored"),)))
    assert reads.reading(INIT_KIND, "sandbox_enabled") == "policed"
    assert reads.reading(INIT_KIND, "cwd") == "policed"  # the table's word over "read"
    assert reads.reading("result", "result_index") == "ignored"
    assert reads.reading("result", "is_error") == READ
    assert reads.tables == ("INIT_KEY_DECISIONS", "RESULT_KEYS")
    keys: dict[str, Any] = {"cwd": {}, "sandbox_enabled": {}, "view_mode": {}}
    census: dict[str, Any] = {"kinds": {INIT_KIND: {"keys": keys}}}
    assert reads.undecided_init_keys(census) == ["view_mode"]


def test_the_printout_names_what_the_recorder_does_with_each_key() -> None:
    line = (b'{"type":"system","subtype":"init","cwd":"/w","tools":["Bash"],'
            b'"view_mode":"default"}\n')
    census = take_census("9.9.9", [("one", line)])
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_census(console, census, None, recorder_keys(_module()))
    rows = {cells[0]: cells for cells in _rows(console)}
    assert rows["cwd"][-1] == READ
    assert rows["type"][-1] == READ
    assert rows["view_mode"][-1] == NOT_DECIDED
    assert rows["tools"][-1] == NOT_DECIDED


def _rows(console: Console) -> list[list[str]]:
    assert isinstance(console.file, io.StringIO)
    out = []
    for text in console.file.getvalue().splitlines():
        if text.startswith("│"):
            out.append([cell.strip() for cell in text.strip("│").split("│")])
    return out


def test_the_printout_marks_new_and_gone_keys_against_the_baseline() -> None:
    old = take_census("1.0.0", [("one", b'{"type":"result","total_cost_usd":1,"gone_key":1}\n')])
    new = take_census("2.0.0", [("one",
                                 b'{"type":"result","total_cost_usd":1,"result_index":0}\n')])
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_census(console, new, old, recorder_keys())
    rows = {cells[0]: cells for cells in _rows(console)}
    assert rows["result_index"][3] == "NEW"
    assert rows["gone_key"][3] == "GONE"
    assert rows["total_cost_usd"][3] == ""


CENSUSES = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "census").glob("*.json"))


@pytest.mark.parametrize("path", CENSUSES, ids=[p.stem for p in CENSUSES])
def test_every_committed_census_agrees_with_the_recorder_s_decisions(path: Path) -> None:
    """RC-07: every init key a covered release printed is decided, every capability it listed
    is one the init check allows, and each committed census is of a covered release."""
    census = json.loads(path.read_text(encoding="utf-8"))
    assert path.stem in recorder.COVERED_RELEASES
    assert recorder_keys().undecided_init_keys(census) == []
    members = census["kinds"][INIT_KIND]["members"].get("capabilities", {})
    assert set(members) <= set(recorder.KNOWN_CAPABILITIES)
