"""RC-10's ``argument`` of a tool call, and the tool names the transform treats specially.

Split out of `recorder._transform` so that the argument table, a rule of its
own, reads in one place. Pure: no I/O (`relative_if_inside` is lexical).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING, Final

from recorder._paths import relative_if_inside

if TYPE_CHECKING:
    from pathlib import Path

PATH_ARGUMENT_KEYS: Final = {"Read": "file_path", "Write": "file_path", "Edit": "file_path",
                             "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
"""RC-10: tools whose argument is a path, written workspace-relative when inside."""
PLAIN_ARGUMENT_KEYS: Final = {"Bash": "command", "Glob": "pattern", "Agent": "description",
                              "Task": "description", "Skill": "skill"}
"""RC-10: tools whose argument is one input value, verbatim."""
WRITE_TOOLS: Final = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
                      "NotebookEdit": "notebook_path"}
"""RC-11: tools whose path is produced, whatever their result (MultiEdit where a harness has it)."""


def call_argument(tool: str, tool_input: object, *, workspace: Path,
                  inside: str | None = None) -> str:
    """RC-10's ``argument`` for one tool_use.

    Read/Write/Edit/MultiEdit ``file_path`` and NotebookEdit ``notebook_path``
    (relative to the workspace when lexically inside it), Bash ``command``
    verbatim, Grep ``pattern`` plus `` in <path>`` when a path is given (the
    path relative to the workspace when inside, ``.`` for the workspace
    itself), Glob ``pattern``, Agent/Task ``description``, Skill ``skill``.
    Anything else, and any of these whose key is missing or not a string: the
    canonical JSON of the input (sorted keys, no spaces, non-ASCII kept). So
    no path under the batch directory enters an argument through these tools:
    the same session recorded in two batches gives the same events.

    Args:
        tool: the tool's name exactly as the stream gives it (``Agent`` and
            ``Task`` are both the subagent tool; neither is renamed).
        tool_input: the tool_use ``input`` (any JSON value).
        workspace: the workspace's host copy.
        inside: the workspace path the session saw (RC-02); paths are made
            relative against it. None: the same as ``workspace``.
    """
    if isinstance(tool_input, dict):
        if (key := PATH_ARGUMENT_KEYS.get(tool)) and isinstance(value := tool_input.get(key), str):
            return relative_if_inside(value, workspace, inside=inside)
        if (key := PLAIN_ARGUMENT_KEYS.get(tool)) and isinstance(value := tool_input.get(key), str):
            return value
        if tool == "Grep" and isinstance(pattern := tool_input.get("pattern"), str):
            path = tool_input.get("path")
            if isinstance(path, str) and path:
                return f"{pattern} in {relative_if_inside(path, workspace, inside=inside)}"
            return pattern

    return canonical_json(tool_input)


def canonical_json(value: object) -> str:
    """JSON with sorted keys, ``(",", ":")`` separators, non-ASCII kept; Decimals as numbers."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=_json_default)


def _json_default(value: object) -> object:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"not JSON: {type(value).__name__}")
