"""Arms: documented transformations of a sealed workspace's harness layer (RC-14).

The *layer* is what the harness loads from the workspace rather than reads
as corpus: every file under a ``.claude/`` directory (any depth), every
``CLAUDE.md`` and ``CLAUDE.local.md`` (any depth) and the root ``.mcp.json``.

============== ================================================================
arm            what it removes from the workspace
============== ================================================================
present        nothing
absent         the whole layer (every ``.claude/`` file, every CLAUDE.md and
               CLAUDE.local.md, ``.mcp.json``)
no-hook        the ``hooks`` key of every ``.claude/settings.json`` and
               ``.claude/settings.local.json`` (the file goes when nothing else
               is left in it), and every file under ``.claude/hooks/``
no-skills      every file under ``.claude/skills/``
no-claude-md   every CLAUDE.md and CLAUDE.local.md
mcp            not implemented: `ArmUnsupported`
============== ================================================================

An arm is applied after sealing and before the manifest is computed, so the
manifest describes the workspace as the session sees it. `plan_arm` is pure;
`apply_arm` executes it on a workspace.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, Literal, get_args

from recorder._digest import digest_bytes, tree_digest

from ._errors import ArmError, ArmUnsupported

if TYPE_CHECKING:
    from ._corpus import Corpus

Arm = Literal["present", "absent", "no-hook", "no-skills", "no-claude-md", "mcp"]
"""The closed arm vocabulary of RC-14."""
ARMS: Final[tuple[str, ...]] = get_args(Arm)

_CLAUDE_MD: Final = frozenset({"CLAUDE.md", "CLAUDE.local.md"})
_SETTINGS: Final = frozenset({"settings.json", "settings.local.json"})
_MCP_JSON: Final = ".mcp.json"


@dataclass(frozen=True, slots=True)
class Removal:
    """One thing the seal or an arm took out of a workspace.

    ``line`` is the 1-based line of the corpus file for a removed line, or for
    a removed file the line of the text that decided it; None when no line
    decided it (the probe shelf, an arm's component, a binary file).
    """

    path: str
    """Corpus- (= workspace-) relative POSIX path."""
    reason: str
    """Why, naming the rule (RC-09 or the arm)."""
    line: int | None = None


@dataclass(frozen=True, slots=True)
class ArmPlan:
    """What an arm does to a set of workspace files, computed without writing."""

    removed: list[Removal] = field(default_factory=list)
    rewritten: dict[str, bytes] = field(default_factory=dict)
    """Path -> the file's new bytes (a settings file with its hooks taken out)."""


def is_layer_path(path: str) -> bool:
    """True when the workspace-relative POSIX ``path`` belongs to the harness layer."""
    parts = PurePosixPath(path).parts
    return ".claude" in parts[:-1] or parts[-1] in _CLAUDE_MD or path == _MCP_JSON


def _under(parts: tuple[str, ...], sub: str) -> bool:
    return any(a == ".claude" and b == sub for a, b in pairwise(parts[:-1]))


def _drop_hooks(path: str, data: bytes) -> bytes | None:
    """``data`` without its ``hooks`` key; None when nothing else is left."""
    try:
        settings = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArmError("no-hook", f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(settings, dict):
        raise ArmError("no-hook", f"{path} is not a JSON object")
    settings.pop("hooks")
    if not settings:
        return None
    return (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _has_hooks(path: str, data: bytes) -> bool:
    try:
        settings = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArmError("no-hook", f"{path} is not valid JSON: {exc}") from exc
    return isinstance(settings, dict) and "hooks" in settings


def check_arm(arm: str) -> None:
    """Raise unless this build can apply ``arm``.

    Raises:
        ArmError: ``arm`` is not in the RC-14 vocabulary.
        ArmUnsupported: ``arm`` is ``mcp``.
    """
    if arm not in ARMS:
        raise ArmError(arm, f"not an arm of the RC-14 vocabulary ({', '.join(ARMS)})")
    if arm == "mcp":
        raise ArmUnsupported(arm)


def plan_arm(paths: Iterable[str], read: Callable[[str], bytes], arm: str) -> ArmPlan:
    """Compute what ``arm`` removes and rewrites among ``paths``. Pure but for ``read``.

    Args:
        paths: workspace-relative POSIX paths of every file of the workspace.
        read: returns a path's bytes; called only for settings files.
        arm: a member of `ARMS`.

    Raises:
        ArmError: ``arm`` is not in the vocabulary, or a settings file the arm
            must edit is not a JSON object.
        ArmUnsupported: ``arm`` is ``mcp``.
    """
    check_arm(arm)
    result = ArmPlan()
    for path in sorted(paths):
        if not is_layer_path(path) or arm == "present":
            continue
        parts = PurePosixPath(path).parts
        if arm == "absent":
            result.removed.append(Removal(path, "harness layer (arm absent)"))
        elif arm == "no-skills" and _under(parts, "skills"):
            result.removed.append(Removal(path, "skill (arm no-skills)"))
        elif arm == "no-claude-md" and parts[-1] in _CLAUDE_MD:
            result.removed.append(Removal(path, "CLAUDE.md file (arm no-claude-md)"))
        elif arm == "no-hook" and _under(parts, "hooks"):
            result.removed.append(Removal(path, "hook script (arm no-hook)"))
        elif arm == "no-hook" and len(parts) > 1 and parts[-2] == ".claude" \
                and parts[-1] in _SETTINGS and _has_hooks(path, data := read(path)):
            new = _drop_hooks(path, data)
            if new is None:
                result.removed.append(Removal(path, "hooks settings, nothing else (arm no-hook)"))
            else:
                result.rewritten[path] = new
                result.removed.append(Removal(path, "its `hooks` key (arm no-hook)"))
    return result


def _workspace_files(workspace: Path) -> list[str]:
    found: list[str] = []
    for dirpath, _dirs, files in os.walk(workspace):
        for name in files:
            found.append((Path(dirpath) / name).relative_to(workspace).as_posix())
    return found


def apply_arm(workspace: Path, arm: str) -> list[Removal]:
    """Transform the sealed ``workspace`` in place into ``arm``'s workspace.

    Call after sealing and before computing the manifest. Directories left
    empty are removed.

    Returns:
        What was removed or rewritten, one `Removal` per file, in path order.

    Raises:
        ArmError: see `plan_arm`. ArmUnsupported: ``mcp``.
    """
    plan = plan_arm(_workspace_files(workspace), lambda p: (workspace / p).read_bytes(), arm)
    for removal in plan.removed:
        target = workspace / removal.path
        if removal.path in plan.rewritten:
            target.write_bytes(plan.rewritten[removal.path])
        else:
            target.unlink()
            _prune_empty(target.parent, workspace)
    return plan.removed


def _prune_empty(directory: Path, stop: Path) -> None:
    while directory != stop and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def arm_layer_digest(corpus: Corpus, arm: str) -> str:
    """The identity of the layer ``arm`` keeps from ``corpus``: the tree formula over it.

    Covers the corpus's layer files that the arm keeps, each by the digest of
    its bytes as the arm leaves them (a rewritten settings file by its new
    bytes). The seal of one probe may remove more (a layer file that names the
    probe); this digest is per arm, not per session. ``absent`` gives the
    digest of the empty list.

    Raises:
        ArmError, ArmUnsupported: see `plan_arm`.
    """
    layer = [p for p in corpus.files if is_layer_path(p)]
    plan = plan_arm(layer, lambda p: (corpus.root / p).read_bytes(), arm)
    gone = {r.path for r in plan.removed if r.path not in plan.rewritten}
    kept = {
        p: digest_bytes(plan.rewritten[p]) if p in plan.rewritten else corpus.files[p]
        for p in layer
        if p not in gone
    }
    return tree_digest(kept)
