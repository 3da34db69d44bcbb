"""RC-07's decision table: every init key of the census releases decided, held to the fixtures.

The fixtures are one init line of each release (tests/fixtures/init_lines/, from demo batches
under the real sandbox). A new release's key fails `test_every_key_of_every_fixture_line_is_
decided` until the table decides it; docs/recorder.md holds the table the code generates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import recorder
from recorder._harness import INIT_KEYS, _Observed
from recorder._initcheck import InitPolicy, check_init
from recorder._initkeys import (
    DECIDED_FROM,
    DECISIONS,
    INIT_KEY_DECISIONS,
    KNOWN_CAPABILITIES,
    MAX_INIT_KEY_CHARS,
    POLICED_INIT_KEYS,
    decisions_markdown,
    required,
    unknown_init_keys,
)

REPO = Path(__file__).resolve().parents[2]
INIT_LINES = REPO / "tests" / "fixtures" / "init_lines"
LINES = {path.stem: json.loads(path.read_text()) for path in sorted(INIT_LINES.glob("*.json"))}
DEMO_POLICY = InitPolicy("dontAsk", frozenset(), frozenset(), "/run/headwater/config",
                         cwd="/workspace/corpus")
"""What a demo batch holds its sessions to: dontAsk, no .mcp.json, no host skills, the fixed
config directory and the default workspace path of the demo corpus (docs/confinement.md)."""


def test_there_is_one_fixture_line_per_release_the_table_decides() -> None:
    assert sorted(LINES) == sorted(DECIDED_FROM)
    for release, init in LINES.items():
        assert (init["type"], init["subtype"], init["claude_code_version"]) == (
            "system", "init", release)


@pytest.mark.parametrize("release", DECIDED_FROM)
def test_every_key_of_every_fixture_line_is_decided(release: str) -> None:
    assert [key for key in LINES[release] if key not in DECISIONS] == []
    assert unknown_init_keys(LINES[release]) == []


@pytest.mark.parametrize("release", DECIDED_FROM)
def test_each_fixture_line_passes_the_init_check(release: str) -> None:
    assert check_init(LINES[release], DEMO_POLICY) == []


def test_each_decision_names_the_first_release_that_prints_its_key() -> None:
    for decision in INIT_KEY_DECISIONS:
        printing = [r for r in DECIDED_FROM if decision.key in LINES[r]]
        assert printing and printing[0] == decision.since, decision.key
        # once printed, printed by every later release of the census
        assert printing == list(DECIDED_FROM[DECIDED_FROM.index(decision.since):]), decision.key


def test_the_widening_fields_are_policed_and_the_version_is_prose() -> None:
    policed = {"cwd", "permissionMode", "plugins", "mcp_servers", "skills", "memory_paths",
               "additional_directories", "messaging_socket_path", "sandbox_enabled",
               "capabilities", "original_cwd"}
    assert set(POLICED_INIT_KEYS) == policed
    assert [d.key for d in INIT_KEY_DECISIONS if d.decision == "prose"] == ["claude_code_version"]
    assert all(d.reason and not d.reason.endswith(".") for d in INIT_KEY_DECISIONS)
    assert len({d.key for d in INIT_KEY_DECISIONS}) == len(INIT_KEY_DECISIONS)


def test_the_typed_decoder_reads_every_policed_key() -> None:
    """A policed key the decoder skipped would read as missing from every init line."""
    assert set(POLICED_INIT_KEYS) | {"claude_code_version"} == set(INIT_KEYS)
    assert set(INIT_KEYS) <= set(_Observed.__struct_fields__)


def test_the_capabilities_allowed_are_the_union_the_releases_print() -> None:
    printed = {c for init in LINES.values() for c in init.get("capabilities", [])}
    assert printed == KNOWN_CAPABILITIES


@pytest.mark.parametrize(("key", "version", "needed"), [
    ("sandbox_enabled", "2.1.332", True),
    ("sandbox_enabled", "2.1.333", True),
    ("sandbox_enabled", "3.0.0", True),
    ("sandbox_enabled", "2.1.331", False),
    ("sandbox_enabled", "2.1.197", False),
    ("capabilities", "2.1.250", True),
    ("capabilities", "2.1.249", False),
    ("additional_directories", "2.1.300", False),
    ("original_cwd", "2.1.332", True),
    # unreadable: fail closed
    ("sandbox_enabled", "0.0.0-standin", True),
    ("sandbox_enabled", None, True),
    ("sandbox_enabled", 2, True),
    ("sandbox_enabled", "2.1", True),
    # the oldest release's policed keys: required of every release
    ("skills", "0.0.1", True),
    ("cwd", "2.1.0", True),
    # absence is a value of the rule: never required
    ("messaging_socket_path", "2.1.332", False),
    # not policed: never required
    ("view_mode", "2.1.332", False),
    ("not_a_key", "2.1.332", False),
])
def test_required_from_the_first_release_that_prints_the_key(key: str, version: Any,
                                                           needed: bool) -> None:
    assert required(key, version) is needed


def test_unknown_keys_are_listed_in_line_order_and_bounded_in_length() -> None:
    long = "k" * (MAX_INIT_KEY_CHARS + 10)
    init = {"type": "system", "betas": [], "cwd": "/w", long: 1, "scratchpad_path": "/x"}
    assert unknown_init_keys(init) == [
        "betas", "k" * MAX_INIT_KEY_CHARS + f"... ({MAX_INIT_KEY_CHARS + 10} characters)",
        "scratchpad_path"]


def test_docs_hold_the_table_the_code_decides() -> None:
    """docs/recorder.md shows `decisions_markdown()` verbatim: the code is the source."""
    docs = (REPO / "docs" / "recorder.md").read_text()
    assert decisions_markdown() in docs
    assert decisions_markdown().count("\n") == len(INIT_KEY_DECISIONS) + 1


def test_the_table_is_exported_for_the_census() -> None:
    assert recorder.INIT_KEY_DECISIONS is INIT_KEY_DECISIONS
    assert frozenset(DECISIONS) == recorder.DECIDED_INIT_KEYS
    assert recorder.POLICED_INIT_KEYS == POLICED_INIT_KEYS
