"""The init-line fields that can widen what a session reaches (docs/glossary.md RC-07).

Each check takes one parsed init line and returns its refusals ([] accepts), in the one form
`refusal` writes. Every one fails closed: a shape this module does not know refuses, and so
does a missing key on a release that prints it (`recorder._initkeys.required`: a release
older than the first that prints the key may omit it). Shapes and values are the ones the
releases of `recorder._initkeys.DECIDED_FROM` print in a confined session
(tests/fixtures/init_lines/):

- ``additional_directories`` (2.1.332): a list, which must be empty: the driver grants no
  directory beyond the workspace, so any entry refuses, named.
- ``messaging_socket_path`` (2.1.250): absent, null, or an absolute string path holding no
  NUL (`inside`) that, ``..`` resolved lexically, lies under ``/tmp/``: the sandbox's
  private tmpfs (``--tmpfs /tmp`` for every session, `sandbox._argv.bwrap_options`; no
  workspace path may lie under ``/tmp``), which nothing outside the sandbox reaches. 2.1.332 prints
  ``/tmp/cc-socks/<n>.sock``.
- ``sandbox_enabled`` (2.1.332): exactly ``false``: the harness's own sandbox, which the
  driver never asks for; a workspace setting turning it on changes what Bash may reach.
- ``capabilities`` (2.1.250): a list of strings, each one of
  `recorder._initkeys.KNOWN_CAPABILITIES`; one the census has not seen refuses.
- ``original_cwd`` (2.1.332): a string, exactly the batch's workspace path (like ``cwd``);
  not policed when the policy names no workspace path (a probe of the harness).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any, Final

from recorder._initkeys import DECISIONS, KNOWN_CAPABILITIES, required
from recorder._releases import parse_release

if TYPE_CHECKING:
    from collections.abc import Callable

VALUE_REPR_CHARS: Final = 120
"""Characters of a refused value quoted in a reason: enough to recognise it, never a flood."""
VERSION_REPR_CHARS: Final = 40
"""Characters of an unreadable ``claude_code_version`` quoted in a missing-field refusal."""
PRIVATE_TMP: Final = "/tmp"
"""The sandbox's private tmpfs, the one place a messaging socket may be (docs/confinement.md)."""
CENSUS_HINT: Final = "`make census` on this release, then decide it (docs/census.md)"
"""What to do about a value the census has not seen."""


def refusal(field: str, value: object, why: str) -> str:
    """One RC-07 refusal, naming the rule, the field and the value.

    ``refusal("permissionMode", "plan", "...")`` ->
    ``"permissionMode = 'plan': ... (docs/glossary.md: RC-07)"``. The value is its ``repr``,
    cut at `VALUE_REPR_CHARS` characters, so a quote or a newline in it
    cannot be mistaken for the message around it.
    """
    shown = repr(value)
    if len(shown) > VALUE_REPR_CHARS:
        shown = shown[: VALUE_REPR_CHARS - 3] + "..."
    return f"{field} = {shown}: {why} (docs/glossary.md: RC-07)"


def missing_or_shape(field: str, init: dict[str, Any]) -> str:
    """The refusal of a policed ``field`` that is missing from ``init`` or of a shape not known."""
    if field not in init:
        return (f"{field} is missing from the init line: a policed field (fail closed) "
                "(docs/glossary.md: RC-07)")
    shape = type(init[field]).__name__
    return refusal(field, init[field], f"unknown shape ({shape}; fail closed)")


def inside(path: str, directory: str) -> bool:
    """True when absolute ``path`` is ``directory`` or under it, ``..`` resolved lexically.

    A path holding a NUL is under nothing: the kernel reads a path only up to its first NUL,
    so what it names is not what the check would read (fail closed).
    """
    if not posixpath.isabs(path) or "\x00" in path:
        return False
    norm_path = posixpath.normpath(path)
    norm_dir = posixpath.normpath(directory)
    return norm_path == norm_dir or norm_path.startswith(norm_dir.rstrip("/") + "/")


def check_widening_fields(init: dict[str, Any], workspace: str | None) -> list[str]:
    """Every refusal of the fields that can widen what the session reaches (module docstring).

    Args:
        init: one parsed init line.
        workspace: the batch's workspace path, the only ``original_cwd`` allowed; None: not
            policed (a probe of the harness in a scratch directory, never a session).

    Returns:
        The refusals in the order of the module docstring; [] accepts.
    """
    reasons: list[str] = []
    for check in _CHECKS:
        reasons += check(init, workspace)
    return reasons


def _absent(field: str, init: dict[str, Any]) -> list[str] | None:
    """[] when ``field`` is absent and may be, its refusal when it must not be; None: present."""
    if field in init:
        return None
    version = init.get("claude_code_version")
    if not required(field, version):
        return []
    readable = isinstance(version, str) and parse_release(version) is not None
    if not isinstance(version, str):
        why = "no claude_code_version says the release is older"
    elif readable:
        why = f"claude_code_version {version!r} is not older"
    else:
        shown = repr(version) if len(version) <= VERSION_REPR_CHARS else "given"
        why = f"claude_code_version {shown} is not MAJOR.MINOR.PATCH"
    return [f"{field} is missing from the init line: a policed field every release since "
            f"{DECISIONS[field].since} prints ({why}; fail closed) (docs/glossary.md: RC-07)"]


def _additional_directories(init: dict[str, Any], _workspace: str | None) -> list[str]:
    field = "additional_directories"
    if (absent := _absent(field, init)) is not None:
        return absent
    value = init[field]
    if not isinstance(value, list):
        return [missing_or_shape(field, init)]
    return [refusal(f"{field}[{index}]", entry, "a directory beyond the workspace: the driver "
                    "grants none")
            for index, entry in enumerate(value)]


def _messaging_socket_path(init: dict[str, Any], _workspace: str | None) -> list[str]:
    field = "messaging_socket_path"
    if (absent := _absent(field, init)) is not None:
        return absent
    value = init[field]
    if value is None:
        return []
    if not isinstance(value, str):
        return [missing_or_shape(field, init)]
    if not (inside(value, PRIVATE_TMP) and posixpath.normpath(value) != PRIVATE_TMP):
        return [refusal(field, value, f"not under {PRIVATE_TMP}/, the sandbox's private tmpfs "
                                      "(a socket elsewhere may be reached from outside it)")]
    return []


def _sandbox_enabled(init: dict[str, Any], _workspace: str | None) -> list[str]:
    field = "sandbox_enabled"
    if (absent := _absent(field, init)) is not None:
        return absent
    value = init[field]
    if not isinstance(value, bool):
        return [missing_or_shape(field, init)]
    if value:
        return [refusal(field, value, "the harness's own sandbox is on: the driver never asks "
                                      "for it, and it changes what Bash may reach")]
    return []


def _capabilities(init: dict[str, Any], _workspace: str | None) -> list[str]:
    field = "capabilities"
    if (absent := _absent(field, init)) is not None:
        return absent
    value = init[field]
    if not isinstance(value, list):
        return [missing_or_shape(field, init)]
    reasons = []
    for index, capability in enumerate(value):
        if not isinstance(capability, str):
            reasons.append(refusal(f"{field}[{index}]", capability,
                                   "unknown shape (fail closed)"))
        elif capability not in KNOWN_CAPABILITIES:
            reasons.append(refusal(f"{field}[{index}]", capability,
                                   f"a capability the census has not seen: {CENSUS_HINT}"))
    return reasons


def _original_cwd(init: dict[str, Any], workspace: str | None) -> list[str]:
    field = "original_cwd"
    if workspace is None:
        return []
    if (absent := _absent(field, init)) is not None:
        return absent
    value = init[field]
    if not isinstance(value, str):
        return [missing_or_shape(field, init)]
    if value != workspace:
        return [refusal(field, value, f"is not the batch's workspace path {workspace}")]
    return []


_CHECKS: Final[tuple[Callable[[dict[str, Any], str | None], list[str]], ...]] = (
    _additional_directories, _messaging_socket_path, _sandbox_enabled, _capabilities,
    _original_cwd)
