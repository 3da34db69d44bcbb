"""An init line that repeats a key the recorder reads is refused (docs/glossary.md RC-07).

Python's decoders keep a repeated key's last copy; a reader keeping the first would see
another line, so the line says two things and the init check fails closed. Memory paths
holding a NUL are under no directory (the kernel reads a path up to its first NUL, so
``<dir>/..\x00`` names ``<dir>``'s parent while lexically under ``<dir>``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder._harness import repeated_keys
from recorder._initcheck import InitPolicy, check_init
from recorder._transform import StreamObserver

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "init_lines" / "2.1.332.json"
WORKSPACE = "/workspace/corpus"
CONFIG = "/run/headwater/config"
POLICY = InitPolicy("dontAsk", frozenset(), frozenset(), CONFIG, cwd=WORKSPACE)
CLEAN = json.dumps(json.loads(FIXTURE.read_text())).encode()
"""2.1.332's init line, clean, on one line."""


def _refusals(line: bytes) -> tuple[str, ...]:
    observer = StreamObserver(policy=POLICY, workspace=Path("/nonexistent"), inside=WORKSPACE)
    observer.feed(line)
    return observer.finish(end="exited", exit_status=0, tail=None).refusals


def _appended(extra: str) -> bytes:
    return CLEAN[:-1] + b", " + extra.encode() + b"}"


def test_the_clean_line_repeats_nothing_and_is_accepted() -> None:
    assert repeated_keys(CLEAN) == []
    assert _refusals(CLEAN) == ()


@pytest.mark.parametrize(("extra", "key"), [
    ('"additional_directories": ["/etc"]', "additional_directories"),  # last copy widens
    ('"sandbox_enabled": false', "sandbox_enabled"),  # both copies clean: still two
    ('"cwd": "/workspace/corpus"', "cwd"),
    ('"claude_code_version": "2.1.197"', "claude_code_version"),  # decides what is required
    ('"subtype": "init"', "subtype"),
])
def test_a_repeated_key_the_recorder_reads_refuses_naming_it(extra: str, key: str) -> None:
    line = _appended(extra)
    assert repeated_keys(line) == [key]
    assert f"{key} is printed twice in the init line: which copy counts is unknown (fail " \
           "closed) (docs/glossary.md: RC-07)" in _refusals(line)


def test_a_first_copy_that_widens_refuses_though_the_last_is_clean() -> None:
    line = CLEAN.replace(b'"additional_directories": []',
                         b'"additional_directories": ["/etc"], "additional_directories": []')
    assert line != CLEAN
    assert check_init(json.loads(line), POLICY) == []  # the last copy alone passes
    assert _refusals(line) == ("additional_directories is printed twice in the init line: "
                               "which copy counts is unknown (fail closed) "
                               "(docs/glossary.md: RC-07)",)


def test_a_repeated_unknown_or_nested_key_is_no_refusal() -> None:
    line = _appended('"betas": [], "betas": [1], "nested": {"cwd": 1, "cwd": 2}')
    assert repeated_keys(line) == []
    assert _refusals(line) == ()


def test_a_memory_path_holding_a_nul_is_outside_the_config_directory() -> None:
    init = json.loads(CLEAN)
    # Lexically inside (its last part is "..\x00", not ".."); read up to the NUL, the
    # config directory's parent.
    init["memory_paths"] = {"auto": f"{CONFIG}/..\x00"}
    (reason,) = check_init(init, POLICY)
    assert reason.startswith("memory_paths.auto = "), reason
    assert "outside the session's config directory" in reason
