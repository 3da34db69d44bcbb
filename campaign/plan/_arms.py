"""Arms: documented transformations of a sealed workspace's harness layer, and their identity.

The *layer* is what the harness loads from the workspace rather than reads
as corpus: every file under a ``.claude/`` directory (any depth), every
``CLAUDE.md`` and ``CLAUDE.local.md`` (any depth) and the root ``.mcp.json``.
The full table is in docs/arms.md:

============== ================================================================
arm            what it changes, relative to the sealed corpus
============== ================================================================
present        nothing (the layer as the corpus has it; the plan's tools)
absent         removes the whole layer (every ``.claude/`` file: settings and
               MCP settings, hooks, skills, commands, agents; every CLAUDE.md
               and CLAUDE.local.md; ``.mcp.json``)
no-hook        removes the ``hooks`` key of every ``.claude/settings.json`` and
               ``.claude/settings.local.json`` (the file goes when nothing else
               is left in it) and every file under ``.claude/hooks/``
no-skills      removes every file under ``.claude/skills/``
no-claude-md   removes every CLAUDE.md and CLAUDE.local.md
mcp            the layer of present; the allowed tools extended with
               ``mcp__<server>`` for each server the root ``.mcp.json`` declares
============== ================================================================

An arm's identity (`ArmSpec`) is a digest of its workspace layer (the tree
formula over the layer files it keeps, as it leaves them) and of its harness
flags (permission mode, setting sources, allowed and disallowed tools), so
two batches can be known to have run the same arm. An arm whose identity
equals present's changes nothing (`arms_without_effect`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, Literal

from campaign._errors import ArmError
from recorder import ARMS as ARMS
from recorder import (
    DISALLOWED_TOOLS,
    PERMISSION_MODE,
    SETTING_SOURCES,
    digest_bytes,
    digest_text,
    tree_digest,
)
from recorder import MCP_JSON as MCP_JSON
from recorder import Arm as Arm

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from campaign.corpus import Corpus


_CLAUDE_MD: Final = frozenset({"CLAUDE.md", "CLAUDE.local.md"})
_SETTINGS: Final = frozenset({"settings.json", "settings.local.json"})

NOTHING: Final[dict[str, str]] = {
    "absent": "the corpus has no harness layer (no .claude/, CLAUDE.md, CLAUDE.local.md or "
              ".mcp.json)",
    "no-hook": "no .claude/settings*.json has a `hooks` key and no file is under .claude/hooks/",
    "no-skills": "no file is under .claude/skills/",
    "no-claude-md": "the corpus has no CLAUDE.md or CLAUDE.local.md",
    "mcp": "the root .mcp.json declares no MCP server",
}
"""Why an arm would differ from present in nothing: its component is missing from the corpus."""


@dataclass(frozen=True, slots=True)
class Removal:
    """One thing the seal or an arm took out of a workspace (what ``seal --explain`` lists)."""

    path: str
    """Corpus- (= workspace-) relative POSIX path."""
    reason: str
    """Why, naming the rule (RC-09 or the arm)."""
    line: int | None = None
    """1-based line: the removed line, or the line that decided a whole file's removal;
    None when no line decided it (the shelf, an answer key, an arm's component)."""
    kind: str = "file"
    """``file`` (the whole file went), ``line`` (one line went), ``edit`` (an arm rewrote it)."""
    excerpt: str | None = None
    """The deciding line's text (stripped, cut), for people; never compared."""


@dataclass(frozen=True, slots=True)
class ArmEffect:
    """What an arm does to one file: keep it, remove it, or rewrite it as ``data``."""

    action: Literal["keep", "remove", "rewrite"]
    reason: str = ""
    data: bytes | None = None


KEEP: Final = ArmEffect("keep")


def is_layer_path(path: str) -> bool:
    """True when the workspace-relative POSIX ``path`` belongs to the harness layer."""
    return ("/" + path).find("/.claude/") >= 0 or path.rpartition("/")[2] in _CLAUDE_MD \
        or path == MCP_JSON


def _under(parts: tuple[str, ...], sub: str) -> bool:
    return any(a == ".claude" and b == sub for a, b in pairwise(parts[:-1]))


def _settings(path: str, data: bytes, arm: str) -> dict[str, object]:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArmError(arm, f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ArmError(arm, f"{path} is not a JSON object")
    return value


def check_arm(arm: str) -> None:
    """Raise unless ``arm`` is in the RC-14 vocabulary.

    Raises:
        ArmError: ``arm`` is not one of `ARMS` (the message lists them).
    """
    if arm not in ARMS:
        raise ArmError(arm, f"not an arm; the arms are {', '.join(ARMS)} (docs/glossary.md: RC-14)")


def reads_bytes(arm: str, path: str) -> bool:
    """True when `arm_effect` of ``arm`` on ``path`` looks at the file's bytes (a settings
    file ``no-hook`` edits); for every other file the effect follows from the path alone,
    and any bytes (``b""``) may be passed."""
    parts = PurePosixPath(path).parts
    return arm == "no-hook" and len(parts) > 1 and parts[-2] == ".claude" \
        and parts[-1] in _SETTINGS


MAX_READ_LAYER_BYTES: Final = 8 << 20
"""A settings file an arm reads (`reads_bytes`), or the root ``.mcp.json``, is at most this
many bytes (the load reads them whole; a bigger one is refused: docs/arms.md)."""


def read_layer_file(path: Path, rel: str, arm: str) -> bytes:
    """The bytes of the layer file ``rel`` (at ``path``) that ``arm`` must read; bounded.

    Raises:
        ArmError: the file is over `MAX_READ_LAYER_BYTES`.
        OSError: it cannot be read.
    """
    with path.open("rb") as fp:
        data = fp.read(MAX_READ_LAYER_BYTES + 1)
    if len(data) > MAX_READ_LAYER_BYTES:
        raise ArmError(arm, f"{rel} is over {MAX_READ_LAYER_BYTES:,} bytes, the most a settings "
                            "file the arm reads may hold")
    return data


def arm_effect(arm: str, path: str, data: bytes) -> ArmEffect:
    """What ``arm`` does to the workspace file ``path`` whose bytes are ``data``. Pure.

    Raises:
        ArmError: ``arm`` is unknown, or a settings file ``no-hook`` must edit
            is not a JSON object.
    """
    check_arm(arm)
    if arm in ("present", "mcp") or not is_layer_path(path):
        return KEEP
    parts = PurePosixPath(path).parts
    if arm == "absent":
        return ArmEffect("remove", "harness layer (arm absent)")
    if arm == "no-skills" and _under(parts, "skills"):
        return ArmEffect("remove", "a skill (arm no-skills)")
    if arm == "no-claude-md" and parts[-1] in _CLAUDE_MD:
        return ArmEffect("remove", "a CLAUDE.md file (arm no-claude-md)")
    if arm == "no-hook" and _under(parts, "hooks"):
        return ArmEffect("remove", "a hook script (arm no-hook)")
    if arm == "no-hook" and len(parts) > 1 and parts[-2] == ".claude" and parts[-1] in _SETTINGS:
        settings = _settings(path, data, arm)
        if "hooks" not in settings:
            return KEEP
        del settings["hooks"]
        if not settings:
            return ArmEffect("remove", "settings holding only `hooks` (arm no-hook)")
        new = (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        return ArmEffect("rewrite", "its `hooks` key removed (arm no-hook)", new)
    return KEEP


def _files_under(root: Path) -> list[str]:
    found: list[str] = []
    for dirpath, _dirs, files in os.walk(root):
        found += [(Path(dirpath) / name).relative_to(root).as_posix() for name in files]
    return sorted(found)


def apply_arm(workspace: Path, arm: str) -> list[Removal]:
    """Transform ``workspace`` in place into ``arm``'s workspace (the seal does this itself).

    Directories left empty are removed. Returns one `Removal` per file removed
    or rewritten, in path order.

    Raises:
        ArmError: see `arm_effect`.
    """
    done: list[Removal] = []
    for rel in _files_under(workspace):
        target = workspace / rel
        data = read_layer_file(target, rel, arm) if reads_bytes(arm, rel) else b""
        effect = arm_effect(arm, rel, data) if is_layer_path(rel) else KEEP
        if effect.action == "rewrite" and effect.data is not None:
            target.write_bytes(effect.data)
            done.append(Removal(rel, effect.reason, kind="edit"))
        elif effect.action == "remove":
            target.unlink()
            prune_empty(target.parent, workspace)
            done.append(Removal(rel, effect.reason))
    return done


def prune_empty(directory: Path, stop: Path) -> None:
    """Remove ``directory`` and its parents up to (not including) ``stop`` while empty."""
    while directory != stop and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def layer_of(paths: Iterable[str], read: Callable[[str], bytes], digests: dict[str, str],
             arm: str) -> dict[str, str]:
    """Path -> digest of every layer file ``arm`` keeps among ``paths``, as it leaves them.

    ``read`` is called only for the files whose effect needs their bytes (`reads_bytes`).
    """
    kept: dict[str, str] = {}
    for path in (p for p in paths if is_layer_path(p)):
        effect = arm_effect(arm, path, read(path) if reads_bytes(arm, path) else b"")
        if effect.action == "keep":
            kept[path] = digests[path]
        elif effect.action == "rewrite" and effect.data is not None:
            kept[path] = digest_bytes(effect.data)
    return kept


def mcp_servers(corpus: Corpus) -> tuple[str, ...]:
    """The server names the corpus's root ``.mcp.json`` declares (sorted; none without one).

    Read once, when the corpus was loaded, by the one reader
    (`recorder.read_mcp_declaration`, which refuses a name that is not ``[A-Za-z0-9_-]+``).
    """
    return corpus.mcp.sorted()


@dataclass(frozen=True, slots=True)
class ArmSpec:
    """One arm as a batch runs it: its allowed tools and its identity."""

    arm: str
    allowed_tools: tuple[str, ...]
    """The one ``--allowedTools`` list of this arm's sessions (RC-04)."""
    layer: str
    """Tree digest of the layer files the arm keeps, as it leaves them (``sha256:``)."""
    layer_files: int
    flags: str
    """Digest of the canonical JSON of `harness_flags`."""
    identity: str
    """Digest of the two lines ``layer <layer>`` and ``flags <flags>``: the arm's identity."""


def harness_flags(allowed_tools: Iterable[str]) -> dict[str, object]:
    """Permission mode, setting sources, allowed and disallowed tools, as a JSON-able dict."""
    return {"permission_mode": PERMISSION_MODE, "setting_sources": SETTING_SOURCES,
            "allowed_tools": list(allowed_tools), "disallowed_tools": list(DISALLOWED_TOOLS)}


def arm_spec(corpus: Corpus, arm: str, tools: Iterable[str]) -> ArmSpec:
    """The spec of ``arm`` over ``corpus`` with the plan's ``tools``.

    ``mcp`` appends ``mcp__<server>`` for each server of `mcp_servers` that
    ``tools`` does not already hold; every other arm runs with ``tools``.
    The layer is computed on the corpus: a seal that removes a layer file
    naming its probe changes that session's workspace, not the arm.

    Raises:
        ArmError: ``arm`` is unknown; a settings file is not JSON. (A bad
            ``.mcp.json`` was refused when the corpus was loaded.)
    """
    check_arm(arm)
    allowed = tuple(tools)
    if arm == "mcp":
        allowed += tuple(t for s in mcp_servers(corpus) if (t := f"mcp__{s}") not in allowed)
    layer = layer_of(corpus.files, lambda p: read_layer_file(corpus.root / p, p, arm),
                     dict(corpus.files), arm)
    layer_digest = tree_digest(layer)
    flags = digest_text(json.dumps(harness_flags(allowed), sort_keys=True, separators=(",", ":")))
    identity = digest_text(f"layer {layer_digest}\nflags {flags}\n")
    return ArmSpec(arm=arm, allowed_tools=allowed, layer=layer_digest, layer_files=len(layer),
                   flags=flags, identity=identity)


def arm_layer_digest(corpus: Corpus, arm: str) -> str:
    """The layer part of ``arm``'s identity (`ArmSpec.layer`)."""
    return arm_spec(corpus, arm, corpus.config.tools).layer


def arms_without_effect(corpus: Corpus, arms: Iterable[str], tools: Iterable[str], *,
                        identities: Mapping[str, str] | None = None) -> list[str]:
    """One message per arm of ``arms`` whose identity equals present's or an earlier arm's.

    Such an arm's component does not exist in the corpus, so its sessions would
    repeat present's: ``"arm no-skills differs from present in nothing: no file
    is under .claude/skills/"``; or two arms remove the same files (``absent``
    and ``no-claude-md`` on a corpus whose only layer is CLAUDE.md files), so
    the later one's sessions would repeat the earlier one's: ``"arm
    no-claude-md is the same as arm absent: they remove the same files"``.

    ``identities`` (arm -> `ArmSpec.identity`, a plan's ``arm_specs``) are taken as given:
    only an arm not in it (present, when the tier runs without it) is computed.

    Raises:
        ArmError: see `arm_spec`.
    """
    tools = tuple(tools)
    known = dict(identities or {})

    def identity_of(arm: str) -> str:
        if arm not in known:
            known[arm] = arm_spec(corpus, arm, tools).identity
        return known[arm]

    present = identity_of("present")
    found: list[str] = []
    seen: dict[str, str] = {present: "present"}
    for arm in arms:
        if arm == "present":
            continue
        identity = identity_of(arm)
        if identity == present:
            found.append(f"arm {arm} differs from present in nothing: {NOTHING[arm]}")
        elif identity in seen:
            found.append(f"arm {arm} is the same as arm {seen[identity]}: they remove the "
                         "same files and run with the same flags")
        else:
            seen[identity] = arm
    return found
