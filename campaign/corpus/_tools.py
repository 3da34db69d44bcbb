"""The tools the pinned harness knows, and the check of a plan's allowed-tools list (RC-04).

A name the harness does not know in ``--allowedTools`` is silently
meaningless to it: a corpus that asks for ``Reed`` would run every session
without Read while its transcripts say "one allowed-tools list (Reed)". So
`check_allowed_tools` refuses, at plan time, every entry that is not one of:

* a tool name the pinned harness knows (`KNOWN_TOOLS`), or an alias it
  accepts for one (`ALIASES`);
* a permission rule over such a tool, ``Name(specifier)``: ``Bash(git log:*)``,
  ``Read(./docs/**)`` (the specifier is the harness's business, not checked);
* ``mcp__<server>``, ``mcp__<server>__<tool>`` or ``mcp__<server>__*`` for a
  server the corpus's root ``.mcp.json`` declares (the server reports its
  tools only when it runs, so the tool part is not checked).

**Where the list comes from, and how to add a version.** Each entry of
`KNOWN_TOOLS` is the union of the ``tools`` of the ``system``/``init``
lines the real CLI of that version printed (the committed streams under tests/fixtures/
whose init line names that version: captures/ for 2.1.197),
without the ``mcp__`` tools of the capture's own MCP server. Grep and Glob
appear there only when they are allowed, so they are in the union.
To pin another version: capture a few sessions with it (one that allows
Grep and Glob), add ``"<version>": frozenset({...})`` here from their init
lines, add its aliases, and set the recorder's `PINNED_RELEASE` and the Makefile's
``HARNESS_VERSION`` together; tests/campaign/test_tools.py compares each list
with the committed streams of its version and the pin with the Makefile.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from campaign._errors import UnknownTool
from recorder import PINNED_RELEASE

PINNED_HARNESS_VERSION: Final = PINNED_RELEASE
"""The Claude Code version the Makefile installs (``HARNESS_VERSION``) and the plan checks
(the recorder's `PINNED_RELEASE`: one pin)."""

KNOWN_TOOLS: Final[Mapping[str, frozenset[str]]] = MappingProxyType({
    "2.1.197": frozenset({
        "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterWorktree", "ExitWorktree",
        "Glob", "Grep", "NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup",
        "SendMessage", "Skill", "Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput",
        "TaskStop", "TaskUpdate", "WebFetch", "WebSearch", "Workflow", "Write",
    }),
    # 2.1.332 lists ListAgents, Monitor and ToolSearch, and no longer TaskCreate, TaskGet,
    # TaskList, TaskOutput or TaskUpdate (tests/fixtures/cost/, tests/fixtures/resultkeys/).
    "2.1.332": frozenset({
        "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterWorktree", "ExitWorktree",
        "Glob", "Grep", "ListAgents", "Monitor", "NotebookEdit", "Read", "ReportFindings",
        "ScheduleWakeup", "SendMessage", "Skill", "Task", "TaskStop", "ToolSearch", "WebFetch",
        "WebSearch", "Workflow", "Write",
    }),
})
"""Harness version -> the tool names its init line lists (module docstring)."""

ALIASES: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType({
    "2.1.197": MappingProxyType({"Agent": "Task"}),
    "2.1.332": MappingProxyType({"Agent": "Task"}),
})
"""Harness version -> {alias: tool}: names the harness accepts for a tool its init line lists
under another name. 2.1.197 lists the subagent tool as ``Task`` and sends it to the model as
``Agent``; ``--allowedTools 'Read Agent'`` allowed an Agent call without a permission denial
(capture d_subagent; d2_subagent_taskname is the same with ``Task``)."""

_RULE_RE: Final = re.compile(r"\A([A-Za-z][A-Za-z0-9]*)\((.+)\)\Z", re.DOTALL)
"""A permission rule ``Name(specifier)`` (the specifier non-empty)."""
_MCP_PREFIX: Final = "mcp__"
_MCP_TOOL_RE: Final = re.compile(r"\A(?:\*|[A-Za-z0-9_-]+)\Z")


def known_tools(version: str = PINNED_HARNESS_VERSION) -> frozenset[str]:
    """The tool names (and aliases) ``version`` knows.

    Raises:
        KeyError: no list is committed for ``version`` (see the module docstring).
    """
    return KNOWN_TOOLS[version] | frozenset(ALIASES.get(version, {}))


def _mcp_entry_ok(entry: str, servers: frozenset[str]) -> bool:
    rest = entry[len(_MCP_PREFIX):]
    return any(rest == server or (rest.startswith(server + "__")
                                  and _MCP_TOOL_RE.match(rest[len(server) + 2:]) is not None)
               for server in servers)


def _problem(entry: str, known: frozenset[str], servers: frozenset[str]) -> str | None:
    """Why ``entry`` is refused, or None when it is accepted."""
    if entry in known:
        return None
    if entry.startswith(_MCP_PREFIX):
        if _mcp_entry_ok(entry, servers):
            return None
        declared = ", ".join(sorted(servers)) or "none"
        return (f"{entry!r} names an MCP server the corpus's .mcp.json does not declare, or is "
                f"not of the form mcp__<server>, mcp__<server>__<tool> or mcp__<server>__* "
                f"(declared servers: {declared})")
    rule = _RULE_RE.match(entry)
    if rule is not None:
        if rule.group(1) in known:
            return None
        return f"{entry!r} is a permission rule over {rule.group(1)!r}, which is not a tool"
    close = difflib.get_close_matches(entry, sorted(known), n=1)
    return f"{entry!r} is not a tool" + (f" (did you mean {close[0]!r}?)" if close else "")


def check_allowed_tools(tools: Iterable[str], *, mcp_servers: Iterable[str], source: str,
                        version: str = PINNED_HARNESS_VERSION) -> None:
    """Refuse an allowed-tools list with an entry the pinned harness would not understand.

    Args:
        tools: the list (probe.yml ``tools``, or a plan file's).
        mcp_servers: the server names the corpus's root ``.mcp.json`` declares.
        source: where the list comes from, for the message (``.headwater/probe.yml``).
        version: the harness version whose `KNOWN_TOOLS` apply.

    Raises:
        UnknownTool: the first entry that is not a known tool, an alias, a
            permission rule over a known tool, or an ``mcp__`` name of a
            declared server; the message lists the names ``version`` knows.
        KeyError: no list is committed for ``version``.
    """
    known, servers = known_tools(version), frozenset(mcp_servers)
    for entry in tools:
        problem = _problem(entry, known, servers)
        if problem is not None:
            raise UnknownTool(entry, problem, source=source, version=version,
                              known=sorted(KNOWN_TOOLS[version]))
