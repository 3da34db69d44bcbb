"""The harness's own command line (RC-04): the flags every arm gets, and the prompt.

Pure: the caller wraps the result in bwrap's argv (sandbox._argv).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DISALLOWED_TOOLS", "PERMISSION_MODE", "SETTING_SOURCES", "harness_command"]

PERMISSION_MODE: Final = "dontAsk"
"""The only permission mode the driver asks for; the init check (RC-07) refuses any other."""
SETTING_SOURCES: Final = "project,local"
"""Settings the harness may load: the workspace's, never the user's (RC-04)."""
DISALLOWED_TOOLS: Final = ("WebSearch", "WebFetch")
"""Denied on every arm (RC-04): a session must not reach the web."""


def harness_command(
    *, harness_mount: str, task: str, model: str, allowed_tools: Sequence[str]
) -> list[str]:
    """Return the argv of one headless harness session (RC-04).

    The result is::

        [harness_mount, "--output-format", "stream-json", "--verbose",
         "--model", model, "--permission-mode", "dontAsk",
         "--setting-sources", "project,local",
         "--allowedTools", " ".join(allowed_tools),
         "--disallowedTools", "WebSearch WebFetch",
         "-p", "--", task]

    The task is the last argument, word for word, directly after ``-p`` and
    the end-of-options marker ``--``. Measured with the pinned CLI (Claude
    Code 2.1.197): ``-p`` is a boolean flag and the prompt a positional
    argument, so ``claude -p "-x task" ...`` fails with ``error: unknown
    option '-x task'`` (exit 1, no stream), and ``-p=...``/``--print=...`` are
    refused the same way. After ``--`` every argument is positional, so every
    flag must come before it; the CLI then sends the task unchanged (leading
    ``-``, inner ``--``, newlines and trailing blanks included) as the first
    user turn. This form is used for every task, not only those starting
    with ``-``, so the argv has one shape.

    Args:
        harness_mount: Absolute path of the harness binary inside the sandbox.
        task: The body of the probe's ``## Task`` section, unchanged.
        model: The ``--model`` value; always passed (RC-14 ``model``).
        allowed_tools: The arm's tool list, passed as ONE argument joined by
            spaces (a tool pattern may contain spaces inside parentheses).

    Raises:
        TypeError: ``allowed_tools`` is a single string (it would be split
            into characters).
        ValueError: ``harness_mount`` is not absolute, ``task`` or ``model``
            is empty, or a tool name is empty.
    """
    if isinstance(allowed_tools, str):
        raise TypeError(
            f"allowed_tools must be a sequence of names, not the string {allowed_tools!r}"
        )
    if not PurePosixPath(harness_mount).is_absolute():
        raise ValueError(f"harness_mount must be an absolute path, but got {harness_mount!r}")
    if not task.strip():
        raise ValueError("task is empty: the probe's ## Task section is the whole first turn")
    if not model:
        raise ValueError("model is empty: --model is always passed")
    if any(not tool.strip() for tool in allowed_tools):
        raise ValueError(f"allowed_tools contains an empty name: {list(allowed_tools)!r}")
    return [
        harness_mount,
        "--output-format", "stream-json",
        "--verbose",
        "--model", model,
        "--permission-mode", PERMISSION_MODE,
        "--setting-sources", SETTING_SOURCES,
        "--allowedTools", " ".join(allowed_tools),
        "--disallowedTools", " ".join(DISALLOWED_TOOLS),
        "-p", "--", task,
    ]  # fmt: skip
