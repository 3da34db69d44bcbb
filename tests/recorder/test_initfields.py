"""RC-07, the fields that widen what a session reaches: each good value passes, each bad value
or shape refuses (naming the field and the value), a missing one refuses on a release that
prints it and passes on 2.1.197 (which does not)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from recorder._initcheck import InitPolicy, check_init

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "init_lines"
WORKSPACE = "/workspace/corpus"
POLICY = InitPolicy("dontAsk", frozenset(), frozenset(), "/run/headwater/config", cwd=WORKSPACE)
NEW = json.loads((FIXTURE / "2.1.332.json").read_text())
"""2.1.332's init line, clean: it prints every widening field."""
OLD = json.loads((FIXTURE / "2.1.197.json").read_text())
"""2.1.197's init line: it prints none of them."""
ABSENT = object()


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    init = copy.deepcopy(base)
    for key, value in changes.items():
        if value is ABSENT:
            init.pop(key, None)
        else:
            init[key] = value
    return init


def _refusals(**changes: Any) -> list[str]:
    return check_init(_with(NEW, **changes), POLICY)


def test_the_clean_lines_pass() -> None:
    assert check_init(NEW, POLICY) == [] and check_init(OLD, POLICY) == []


# --- additional_directories ----------------------------------------------------------------

def test_no_additional_directory_passes() -> None:
    assert _refusals(additional_directories=[]) == []


@pytest.mark.parametrize(("value", "named"), [
    (["/home/hostuser/src"], "additional_directories[0] = '/home/hostuser/src': a directory "
                             "beyond the workspace: the driver grants none"),
    ([WORKSPACE], f"additional_directories[0] = '{WORKSPACE}'"),  # even the workspace again
    (["/tmp/x", "/etc"], "additional_directories[1] = '/etc'"),
    ([{"path": "/x"}], "additional_directories[0] = {'path': '/x'}"),
    ("/home/hostuser/src", "additional_directories = '/home/hostuser/src': unknown shape (str"),
    (None, "additional_directories = None: unknown shape (NoneType"),
    ({}, "additional_directories = {}: unknown shape (dict"),
])
def test_any_additional_directory_or_other_shape_refuses(value: Any, named: str) -> None:
    reasons = _refusals(additional_directories=value)
    assert any(r.startswith(named) for r in reasons), reasons
    assert all(r.endswith("(docs/glossary.md: RC-07)") for r in reasons)


def test_every_extra_directory_is_named() -> None:
    assert len(_refusals(additional_directories=["/a", "/b"])) == 2


# --- messaging_socket_path ------------------------------------------------------------------

@pytest.mark.parametrize("value", ["/tmp/cc-socks/2.sock", "/tmp/x", "/tmp/a/../b.sock",
                                   None, ABSENT])
def test_a_socket_in_the_private_tmp_or_none_passes(value: Any) -> None:
    assert _refusals(messaging_socket_path=value) == []


@pytest.mark.parametrize(("value", "why"), [
    ("/run/user/1000/x.sock", "not under /tmp/"),
    ("/tmp/../run/x.sock", "not under /tmp/"),
    ("/tmp", "not under /tmp/"),
    ("/tmp/", "not under /tmp/"),
    ("/tmpx/a.sock", "not under /tmp/"),
    ("tmp/a.sock", "not under /tmp/"),
    ("/workspace/corpus/a.sock", "not under /tmp/"),
    ("", "not under /tmp/"),
    ("/tmp/\x00/../run/x.sock", "not under /tmp/"),
    ("/tmp/a/..\x00", "not under /tmp/"),  # read up to the NUL: /tmp itself
    (5, "unknown shape (int"),
    (["/tmp/a"], "unknown shape (list"),
])
def test_a_socket_elsewhere_or_of_another_shape_refuses(value: Any, why: str) -> None:
    (reason,) = _refusals(messaging_socket_path=value)
    assert reason.startswith(f"messaging_socket_path = {value!r}: {why}"), reason


# --- sandbox_enabled ------------------------------------------------------------------------

def test_the_harness_sandbox_off_passes() -> None:
    assert _refusals(sandbox_enabled=False) == []


@pytest.mark.parametrize(("value", "why"), [
    (True, "the harness's own sandbox is on"),
    (0, "unknown shape (int"),
    ("false", "unknown shape (str"),
    (None, "unknown shape (NoneType"),
])
def test_the_harness_sandbox_on_or_another_shape_refuses(value: Any, why: str) -> None:
    (reason,) = _refusals(sandbox_enabled=value)
    assert reason.startswith(f"sandbox_enabled = {value!r}: {why}"), reason


# --- capabilities ---------------------------------------------------------------------------

@pytest.mark.parametrize("value", [[], ["interrupt_receipt_v1"], NEW["capabilities"]])
def test_capabilities_the_census_saw_pass(value: list[str]) -> None:
    assert _refusals(capabilities=value) == []


@pytest.mark.parametrize(("value", "named"), [
    (["interrupt_receipt_v1", "remote_shell_v1"],
     "capabilities[1] = 'remote_shell_v1': a capability the census has not seen: `make census`"),
    ([7], "capabilities[0] = 7: unknown shape"),
    ("interrupt_receipt_v1", "capabilities = 'interrupt_receipt_v1': unknown shape (str"),
    ({"interrupt_receipt_v1": True}, "capabilities = {'interrupt_receipt_v1': True}: unknown"),
])
def test_an_unseen_capability_or_another_shape_refuses(value: Any, named: str) -> None:
    (reason,) = _refusals(capabilities=value)
    assert reason.startswith(named), reason


# --- original_cwd ---------------------------------------------------------------------------

def test_the_workspace_path_as_original_cwd_passes() -> None:
    assert _refusals(original_cwd=WORKSPACE) == []


@pytest.mark.parametrize(("value", "why"), [
    ("/workspace/present-HW-PRB-0001", "is not the batch's workspace path /workspace/corpus"),
    ("/workspace/corpus/", "is not the batch's workspace path"),
    ("/home/hostuser", "is not the batch's workspace path"),
    (None, "unknown shape (NoneType"),
    ([WORKSPACE], "unknown shape (list"),
])
def test_another_original_cwd_refuses(value: Any, why: str) -> None:
    (reason,) = _refusals(original_cwd=value)
    assert reason.startswith(f"original_cwd = {value!r}: {why}"), reason


def test_original_cwd_is_not_policed_without_a_workspace_path() -> None:
    probe = InitPolicy("dontAsk", frozenset(), frozenset(), "/run/headwater/config")
    assert check_init(_with(NEW, original_cwd="/scratch", cwd="/scratch"), probe) == []
    assert check_init(_with(NEW, original_cwd=ABSENT), probe) == []


# --- presence -------------------------------------------------------------------------------

REQUIRED_ON_2_1_332 = ["additional_directories", "sandbox_enabled", "capabilities",
                       "original_cwd"]


@pytest.mark.parametrize("field", REQUIRED_ON_2_1_332)
def test_missing_on_a_release_that_prints_it_refuses(field: str) -> None:
    (reason,) = _refusals(**{field: ABSENT})
    assert reason.startswith(f"{field} is missing from the init line: a policed field every "
                             "release since "), reason
    assert "claude_code_version '2.1.332' is not older; fail closed" in reason


@pytest.mark.parametrize("field", REQUIRED_ON_2_1_332)
def test_missing_on_a_later_or_unreadable_release_refuses(field: str) -> None:
    assert _refusals(**{field: ABSENT, "claude_code_version": "2.2.0"})
    reasons = _refusals(**{field: ABSENT, "claude_code_version": "2.1.332-beta"})
    assert reasons and "'2.1.332-beta' is not MAJOR.MINOR.PATCH" in reasons[0]
    reasons = _refusals(**{field: ABSENT, "claude_code_version": ABSENT})
    assert reasons and "no claude_code_version says the release is older" in reasons[0]


def test_capabilities_are_required_from_2_1_250_the_others_from_2_1_332() -> None:
    init_250 = json.loads((FIXTURE / "2.1.250.json").read_text())
    assert check_init(init_250, POLICY) == []  # it prints capabilities, not the 2.1.332 keys
    (reason,) = check_init(_with(init_250, capabilities=ABSENT), POLICY)
    assert reason.startswith("capabilities is missing") and "since 2.1.250" in reason


@pytest.mark.parametrize("field", [*REQUIRED_ON_2_1_332, "messaging_socket_path"])
def test_missing_on_2_1_197_passes(field: str) -> None:
    assert field not in OLD
    assert check_init(OLD, POLICY) == []


@pytest.mark.parametrize(("field", "bad"), [("additional_directories", ["/x"]),
                                            ("sandbox_enabled", True),
                                            ("capabilities", ["unseen_v9"]),
                                            ("original_cwd", "/elsewhere"),
                                            ("messaging_socket_path", "/run/x.sock")])
def test_an_older_release_printing_a_field_is_still_held_to_it(field: str, bad: Any) -> None:
    """Absence is fine on a release that does not print the key; a value it prints is not."""
    assert check_init(_with(OLD, **{field: bad}), POLICY)
