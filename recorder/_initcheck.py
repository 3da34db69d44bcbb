"""The init-line check (docs/glossary.md RC-07, stricter than the spec).

`check_init` reads one ``system``/``init`` line and returns the reasons it
refuses the session ([] = accept). It polices the keys `recorder._initkeys` decides
``policed`` and fails closed: a policed field that is missing (on a release that prints
it: `recorder._initkeys.required`), or has a shape this module does not know, refuses.
The six below are the pinned release's own, required of every release; the fields that
can widen what a session reaches (additional directories, a messaging socket, the
harness's sandbox toggle, capabilities, ``original_cwd``) are `recorder._initfields`'s.
A key no decision names is never a refusal by itself (`recorder._initkeys.unknown_init_keys`).

Shapes understood (2.1.197 prints the first of each; the others come from
older and newer releases, tests/fixtures/bug_inputs/BC-08_*):

- ``permissionMode``: a string, equal to the mode the driver asked for
  (an allow-list of one, not "anything but bypassPermissions").
- ``plugins``: a list of ``{"name", "path", "source"?}`` objects or of
  ``"name@marketplace"`` strings. Builtin means what the CLI prints for its
  own plugins: ``path == "builtin"`` and ``source`` (when given) ending in
  ``@builtin``; the string form ending in ``@builtin``. (Read off the 2.1.197
  binary: builtin plugins get ``path: "builtin"``, ``source: "<name>@builtin"``;
  ``--plugin-dir`` gives ``"<name>@inline"`` with its real path.)
- ``mcp_servers``: a list of ``{"name": str, "status": str}``; every name must
  be declared by the workspace's ``.mcp.json``, whatever its status.
- ``skills``: a list of strings; none may carry a plugin namespace
  (``plugin:skill``) or be the name of a host skill directory.
- ``memory_paths``: an object of string paths, or a list of string paths
  (older shape; ``[]`` = none); every path inside the config directory.
- ``cwd``: a string, exactly the batch's workspace path (RC-02: one fixed path
  for every session, naming nothing of its arm, probe, session or batch).

A declared MCP server reported ``failed`` is not a refusal here: it makes the
session ``env-fault`` (`failed_declared_mcp_servers`, docs/batch.md "Session states").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from recorder._initfields import VALUE_REPR_CHARS as VALUE_REPR_CHARS
from recorder._initfields import check_widening_fields, inside, missing_or_shape
from recorder._initfields import refusal as refusal

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

BUILTIN_PLUGIN_PATH: Final = "builtin"
"""The ``path`` the CLI prints for a plugin compiled into it (2.1.197: ``GWe="builtin"``)."""
BUILTIN_SOURCE_SUFFIX: Final = "@builtin"
"""The marketplace part of a builtin plugin's id, ``<name>@builtin``."""
PLUGIN_NAMESPACE_SEPARATOR: Final = ":"
"""Skills of a plugin are listed as ``<plugin>:<skill>``."""
FAILED_STATUS: Final = "failed"
"""The ``mcp_servers[].status`` of a server that did not start."""
MAX_MCP_JSON_BYTES: Final = 8 << 20
"""The most of a workspace's ``.mcp.json`` read (bytes); a bigger one is refused unread
(the corpus's own is held to the same bound by the arms: docs/arms.md)."""
MCP_JSON: Final = ".mcp.json"
"""The server declaration's name, at a workspace's (and a corpus's) root."""
SERVER_NAME: Final = re.compile(r"\A[A-Za-z0-9_-]+\Z")
"""A declared MCP server name: one that fits in ``mcp__<server>`` and in a space-joined tool
list (the ``mcp`` arm allows each as a tool; docs/arms.md)."""


class McpConfigError(ValueError):
    """The workspace's ``.mcp.json`` exists but cannot be read as a server declaration."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}; the init line's MCP servers are checked "
                         "against the declared ones (docs/glossary.md: RC-07)")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True)
class InitPolicy:
    """What an init line may show (RC-07)."""

    permission_mode: str
    """The mode the driver asked for (``dontAsk``, RC-04)."""
    declared_mcp_servers: frozenset[str]
    """Server names the workspace's ``.mcp.json`` declares (`declared_mcp_servers_of`)."""
    host_skill_names: frozenset[str]
    """Directory names under the host's skill directories (`host_skill_names`)."""
    config_dir: str
    """The session's config directory as the session sees it (absolute POSIX path)."""
    cwd: str | None = None
    """The batch's workspace path, the only ``cwd`` an init line may show; None: ``cwd``
    is not policed (a probe of the harness in a scratch directory, never a session)."""


def check_init(init: dict[str, Any], policy: InitPolicy) -> list[str]:
    """Return every reason RC-07 refuses this init line; [] accepts it.

    Args:
        init: one parsed ``{"type": "system", "subtype": "init", ...}`` line.
        policy: what the driver asked for and what the workspace declares.

    Returns:
        Human reasons in field order, each naming the rule, the field and
        the value: ``"<field> = <value repr>: <why> (docs/glossary.md: RC-07)"`` (`refusal`), or
        ``"<field> is missing from the init line: ... (docs/glossary.md: RC-07)"``.
    """
    reasons: list[str] = []
    reasons += _check_permission_mode(init, policy)
    reasons += _check_plugins(init)
    reasons += _check_mcp_servers(init, policy)
    reasons += _check_skills(init, policy)
    reasons += _check_memory_paths(init, policy)
    reasons += _check_cwd(init, policy)
    reasons += check_widening_fields(init, policy.cwd)
    return reasons


def failed_declared_mcp_servers(init: dict[str, Any], policy: InitPolicy) -> list[str]:
    """Names of declared MCP servers this init line reports ``failed`` (env-fault).

    Undeclared servers and unknown shapes are `check_init`'s business, not this one's.
    """
    servers = init.get("mcp_servers")
    if not isinstance(servers, list):
        return []
    return [
        server["name"]
        for server in servers
        if isinstance(server, dict)
        and server.get("status") == FAILED_STATUS
        and server.get("name") in policy.declared_mcp_servers
    ]


@dataclass(frozen=True, slots=True)
class McpDeclaration:
    """The MCP servers a directory's ``.mcp.json`` declares, read and checked once."""

    path: Path
    """The file read (it may be absent: then ``servers`` is empty)."""
    servers: frozenset[str]
    """The keys of ``mcpServers``, each matching `SERVER_NAME`."""

    def sorted(self) -> tuple[str, ...]:
        """``servers`` in code-point order (the ``mcp`` arm's tool order)."""
        return tuple(sorted(self.servers))


def read_mcp_declaration(directory: Path, *,
                         max_bytes: int = MAX_MCP_JSON_BYTES) -> McpDeclaration:
    """The one reader of a ``.mcp.json``: the servers ``directory``'s declares, every check made.

    Rules: at most ``max_bytes`` read (`MAX_MCP_JSON_BYTES` unless given; a bigger
    file is refused unread);
    UTF-8 JSON; an object; its ``mcpServers`` (absent: none) an object; every
    server name `SERVER_NAME`. Refusing to guess keeps RC-07 closed, and the
    ``mcp`` arm can allow every declared server as ``mcp__<server>``.

    Args:
        directory: a corpus root or a sealed workspace on the host.
        max_bytes: the most read of the file, bytes.

    Returns:
        The declaration; empty servers when the file is absent.

    Raises:
        McpConfigError: any rule above is broken (naming the file and the rule).
    """
    path = directory / MCP_JSON
    try:
        with path.open("rb") as fp:
            raw = fp.read(max_bytes + 1)
    except FileNotFoundError:
        return McpDeclaration(path, frozenset())
    if len(raw) > max_bytes:
        raise McpConfigError(path, f"over {max_bytes:,} bytes, the most a server "
                                   "declaration is read")
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise McpConfigError(path, f"not UTF-8 JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise McpConfigError(path, f"top level is {type(value).__name__}, not an object")
    servers = value.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(path, f"mcpServers is {type(servers).__name__}, not an object")
    for name in servers:
        if not SERVER_NAME.match(name):
            raise McpConfigError(path, f"server name {name!r} is not [A-Za-z0-9_-]+, so it "
                                       "cannot be allowed as mcp__<server>")
    return McpDeclaration(path, frozenset(servers))


def declared_mcp_servers_of(workspace: Path) -> frozenset[str]:
    """The MCP server names the workspace's ``.mcp.json`` declares (`read_mcp_declaration`).

    Raises:
        McpConfigError: see `read_mcp_declaration`.
    """
    return read_mcp_declaration(workspace).servers


def host_skill_names(dirs: Iterable[Path]) -> frozenset[str]:
    """Names of the skill directories under each of ``dirs`` (absent dirs contribute none).

    Args:
        dirs: the host's skill directories, e.g. ``$CLAUDE_CONFIG_DIR/skills``
            and ``~/.claude/skills`` of the runner's user (RC-07).
    """
    names: set[str] = set()
    for directory in dirs:
        if directory.is_dir():
            names.update(entry.name for entry in directory.iterdir() if entry.is_dir())
    return frozenset(names)


def _check_permission_mode(init: dict[str, Any], policy: InitPolicy) -> list[str]:
    mode = init.get("permissionMode")
    if not isinstance(mode, str):
        return [missing_or_shape("permissionMode", init)]
    if mode != policy.permission_mode:
        return [refusal("permissionMode", mode,
                        f"the driver asked for {policy.permission_mode!r} (an allow-list of one)")]
    return []


def _check_plugins(init: dict[str, Any]) -> list[str]:
    plugins = init.get("plugins")
    if not isinstance(plugins, list):
        return [missing_or_shape("plugins", init)]
    reasons = []
    for index, plugin in enumerate(plugins):
        field = f"plugins[{index}]"
        if isinstance(plugin, str):
            if not plugin.endswith(BUILTIN_SOURCE_SUFFIX):
                why = f"not builtin (not *{BUILTIN_SOURCE_SUFFIX})"
                reasons.append(refusal(field, plugin, why))
        elif isinstance(plugin, dict) and isinstance(plugin.get("path"), str):
            source = plugin.get("source")
            builtin = plugin["path"] == BUILTIN_PLUGIN_PATH and (
                source is None
                or (isinstance(source, str) and source.endswith(BUILTIN_SOURCE_SUFFIX))
            )
            if not builtin:
                reasons.append(refusal(f"{field}.path", plugin["path"],
                                       f"plugin {plugin.get('name')!r} is not builtin"))
        else:
            reasons.append(refusal(field, plugin, "unknown shape (fail closed)"))
    return reasons


def _check_mcp_servers(init: dict[str, Any], policy: InitPolicy) -> list[str]:
    servers = init.get("mcp_servers")
    if not isinstance(servers, list):
        return [missing_or_shape("mcp_servers", init)]
    reasons = []
    for index, server in enumerate(servers):
        if not (
            isinstance(server, dict)
            and isinstance(server.get("name"), str)
            and isinstance(server.get("status"), str)
        ):
            reasons.append(refusal(f"mcp_servers[{index}]", server, "unknown shape (fail closed)"))
        elif server["name"] not in policy.declared_mcp_servers:
            reasons.append(refusal(
                f"mcp_servers[{index}].name", server["name"],
                f"not declared by the workspace's .mcp.json (status {server['status']!r})"))
    return reasons


def _check_skills(init: dict[str, Any], policy: InitPolicy) -> list[str]:
    skills = init.get("skills")
    if not isinstance(skills, list):
        return [missing_or_shape("skills", init)]
    reasons = []
    for index, skill in enumerate(skills):
        field = f"skills[{index}]"
        if not isinstance(skill, str):
            reasons.append(refusal(field, skill, "unknown shape (fail closed)"))
        elif PLUGIN_NAMESPACE_SEPARATOR in skill:
            reasons.append(refusal(field, skill, "carries a plugin namespace (plugin:skill)"))
        elif skill in policy.host_skill_names:
            reasons.append(refusal(field, skill, "is the name of a host skill directory"))
    return reasons


def _check_memory_paths(init: dict[str, Any], policy: InitPolicy) -> list[str]:
    memory = init.get("memory_paths")
    if isinstance(memory, dict):
        items = [(f"memory_paths.{key}", value) for key, value in memory.items()]
    elif isinstance(memory, list):
        items = [(f"memory_paths[{index}]", value) for index, value in enumerate(memory)]
    else:
        return [missing_or_shape("memory_paths", init)]
    reasons = []
    for field, path in items:
        if not isinstance(path, str):
            reasons.append(refusal(field, path, "unknown shape (fail closed)"))
        elif not inside(path, policy.config_dir):
            reasons.append(refusal(field, path,
                                   f"outside the session's config directory {policy.config_dir}"))
    return reasons


def _check_cwd(init: dict[str, Any], policy: InitPolicy) -> list[str]:
    if policy.cwd is None:
        return []
    cwd = init.get("cwd")
    if not isinstance(cwd, str):
        return [missing_or_shape("cwd", init)]
    if cwd != policy.cwd:
        return [refusal("cwd", cwd, f"is not the batch's workspace path {policy.cwd}")]
    return []
