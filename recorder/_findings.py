"""RC-11 ``findings``: run the corpus's configured checker over a session's workspace.

The interface (docs/recorder.md, "Findings"):

- ``checker:`` in ``.headwater/probe.yml`` is a command line, split like a
  shell would (`shlex.split`, no shell runs). Its first word names one
  executable file: a path relative to the corpus root (``.headwater/check.py``:
  the seal removes ``.headwater/``, so the session never sees the checker) or
  an absolute host path. Further words are its arguments; the workspace path
  is appended as the last one.
- It runs after the session, once, as the session's user (a root runner's
  sessions run as ``headwater-session``, `sandbox.users`), confined like
  a session (`sandbox.open_confined`: the RC-02 mounts, the lifeline) but with
  the workspace read-only and a network namespace with no way out: it sees
  ``/usr``, ``/etc``, the workspace and itself (bound read-only at
  `CHECKER_MOUNT`), and no host home, batch directory, corpus or other
  session. It must be a self-contained file run by an interpreter under
  ``/usr`` (``#!/usr/bin/python3``, ``#!/bin/sh``). Its environment is
  ``PATH``, ``LANG=C.UTF-8``, ``HOME`` (an empty scratch directory) and
  ``PYTHONSAFEPATH=1`` (a Python does not import from its working directory,
  which the session wrote); its working directory is the workspace; stdin is
  ``/dev/null``; it has no network (``--unshare-net``: a loopback interface only).
- It prints one JSON object per line on stdout, ``{"path": P, "rule": R}``:
  ``P`` a path relative to the workspace (or absolute inside it), ``R`` the
  rule that reported over that file (a non-empty string). Blank lines are
  ignored, and so are other keys of the object. Exit status 0 means "checked";
  reporting findings is not a failure.
- Anything else is a failed check and never a pass: a missing or
  non-executable checker, a non-zero exit or a signal, a timeout, a line that
  is not such an object, a path outside the workspace. Then no artifact gets a
  ``findings`` key (RC-12: not checked), and the outcome carries a note that
  the session's ledger line and the transcript's prose repeat.

With no ``checker:`` there is no call here at all, and no ``findings`` key.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from recorder._driver import drive_child
from sandbox import (
    SESSION_PATH,
    ConfinedDirs,
    ConfinedSpec,
    SessionUserUnusable,
    SpawnFailed,
    open_confined,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sandbox import HostLayout, SessionUser

CHECKER_MOUNT: Final = "/opt/headwater/checker"
"""Where the checker executable appears inside its sandbox: a path of its own."""
CHECKER_WALL_LIMIT_S: Final = 300.0
"""Seconds a checker may run in all; a checker over a workspace is not a session."""
CHECKER_WATCHDOG_S: Final = 120.0
"""Seconds of stdout silence after which the checker is stopped."""
NOTE_TEXT_CHARS: Final = 200
"""Characters of an offending checker line quoted in a note."""
MAX_FINDING_LINE_BYTES: Final = 64 * 1024
"""Bytes of one checker stdout line (without its newline): a finding is a path and a rule."""
MAX_RULE_CHARS: Final = 256
"""Characters of one rule: an identifier, not a message (a rule may echo what the session
wrote, and every rule reaches the ledger and the transcript)."""
MAX_FINDINGS: Final = 10_000
"""Distinct (path, rule) pairs one check may report: past it the check fails, as no partial
verdict may count as checked (RC-12)."""


@dataclass(frozen=True, slots=True)
class CheckerOutcome:
    """The result of one checker run (RC-11, RC-12).

    Exactly one of the two fields is set: ``findings`` when the check ran to
    a clean exit, ``note`` when it did not (then nothing counts as checked).
    """

    findings: Mapping[str, tuple[str, ...]] | None
    """Workspace-relative POSIX path -> the sorted, unique rules reported over it."""
    note: str | None = None
    """Why there is no verdict; None when the check ran."""

    @classmethod
    def failed(cls, note: str) -> CheckerOutcome:
        """A check that did not run to a verdict."""
        return cls(findings=None, note=f"findings checker failed: {note}")


class FindingsParser:
    """Collects ``{"path", "rule"}`` lines; the first bad line ends collection with a reason."""

    def __init__(self, workspace: Path) -> None:
        self._root = posixpath.normpath(str(workspace))
        self._lines = 0
        self._count = 0
        self.by_path: dict[str, set[str]] = {}
        self.error: str | None = None

    def feed(self, line: bytes) -> None:
        """Take one stdout line of the checker (without its newline).

        Sets `error` (and takes nothing more) at the first line that is not a
        finding, names a path outside the workspace, is over `MAX_FINDING_LINE_BYTES`,
        has a rule over `MAX_RULE_CHARS`, or would make more than
        `MAX_FINDINGS` distinct findings: the bounds on what a checker adds to
        the ledger and the transcript (RC-11).
        """
        self._lines += 1
        if self.error is not None or not line.strip():
            return
        if len(line) > MAX_FINDING_LINE_BYTES:
            self.error = (f"line {self._lines} is {len(line):,} bytes, over the "
                          f"{MAX_FINDING_LINE_BYTES:,} a finding may take")  # fmt: skip
            return
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        path = value.get("path") if isinstance(value, dict) else None
        rule = value.get("rule") if isinstance(value, dict) else None
        if not (isinstance(path, str) and path and isinstance(rule, str) and rule):
            shown = line[:NOTE_TEXT_CHARS].decode("utf-8", errors="replace")
            self.error = f'line {self._lines} is not {{"path": ..., "rule": ...}}: {shown!r}'
            return
        if len(rule) > MAX_RULE_CHARS:
            self.error = (f"line {self._lines} has a rule of {len(rule):,} characters, over "
                          f"the {MAX_RULE_CHARS} a rule may have")  # fmt: skip
            return
        absolute = posixpath.normpath(posixpath.join(self._root, path))
        if not absolute.startswith(self._root + "/"):
            shown = path[:NOTE_TEXT_CHARS]
            self.error = f"line {self._lines} names {shown!r}, outside the workspace"
            return
        rules = self.by_path.setdefault(posixpath.relpath(absolute, self._root), set())
        if rule not in rules:
            if self._count >= MAX_FINDINGS:
                self.error = (f"line {self._lines} is past the {MAX_FINDINGS:,} distinct "
                              "findings a check may report")  # fmt: skip
                return
            self._count += 1
            rules.add(rule)

    def findings(self) -> Mapping[str, tuple[str, ...]]:
        """Path -> sorted unique rules (call only when `error` is None)."""
        return MappingProxyType({p: tuple(sorted(r)) for p, r in sorted(self.by_path.items())})


def resolve_checker(checker: str, *, corpus_root: Path) -> tuple[Path, list[str]]:
    """Split ``checker`` into the host path of its executable and its arguments.

    Raises:
        ValueError: the command is empty or badly quoted, or its first word is
            not an executable regular file (relative words are taken from the
            corpus root).
    """
    try:
        words = shlex.split(checker)
    except ValueError as exc:
        raise ValueError(f"checker {checker!r} cannot be split into words: {exc}") from exc
    if not words:
        raise ValueError("checker is an empty command")
    executable = Path(words[0])
    if not executable.is_absolute():
        executable = corpus_root / executable
    executable = executable.resolve()
    if not executable.is_file():
        raise ValueError(f"checker executable {executable} is not a file")
    if not executable.stat().st_mode & 0o111:
        raise ValueError(f"checker executable {executable} is not executable")
    return executable, words[1:]


async def run_checker(
    checker: str,
    *,
    corpus_root: Path,
    workspace: Path,
    bwrap: str,
    layout: HostLayout,
    stderr_tail: Path,
    user: SessionUser | None = None,
    wall_limit_s: float = CHECKER_WALL_LIMIT_S,
    watchdog_s: float = CHECKER_WATCHDOG_S,
) -> CheckerOutcome:
    """Run the configured checker over ``workspace`` under bwrap (module docstring).

    **Cancellation:** the checker is reaped by the driver and the scratch
    directory removed; the cancellation propagates.

    Args:
        checker: ``ProbeConfig.checker``, the command line.
        corpus_root: Where a relative executable is found.
        workspace: The session's workspace after the session (host path).
        bwrap: The bwrap executable.
        layout: The host's /bin, /lib, /lib64, /sbin (`measure_host_layout`).
        stderr_tail: File that receives the last 64 KiB of the checker's stderr.
        user: The session user a root runner's sessions run as (`sandbox.users`):
            the checker runs as that user too, never as root; None runs it as the runner.
        wall_limit_s: Seconds in all; watchdog_s: seconds of stdout silence.

    Returns:
        The findings, or a failed outcome with a note. A failing checker is
        data here, not an exception; only a bug raises.
    """
    try:
        executable, args = resolve_checker(checker, corpus_root=corpus_root)
    except (ValueError, OSError) as exc:
        return CheckerOutcome.failed(str(exc))
    parser = FindingsParser(workspace)
    spec = ConfinedSpec(
        command=[CHECKER_MOUNT, *args, str(workspace)], executable=executable,
        mount=CHECKER_MOUNT, network="none", env=_checker_env, bwrap=bwrap, layout=layout,
        user=user, workspace=workspace, workspace_read_only=True, name="checker",
    )  # fmt: skip
    try:  # as for a session: the user owns the scratch dirs and can reach the checker
        async with open_confined(spec) as sandbox:
            result = await drive_child(sandbox.child, on_line=parser.feed,
                                       stderr_tail=stderr_tail, wall_limit_s=wall_limit_s,
                                       watchdog_s=watchdog_s)  # fmt: skip
    except (SessionUserUnusable, SpawnFailed) as exc:
        return CheckerOutcome.failed(str(exc))
    if result.tail is not None:
        parser.feed(result.tail)
    if result.end != "exited":
        return CheckerOutcome.failed(f"stopped ({result.end}) after {result.duration_s:.1f} s")
    if result.exit_status != 0:
        return CheckerOutcome.failed(f"exit status {result.exit_status} (its stderr's tail: "
                                     f"{stderr_tail.name} of the session)")
    if parser.error is not None:
        return CheckerOutcome.failed(parser.error)
    return CheckerOutcome(findings=parser.findings())


def _checker_env(dirs: ConfinedDirs) -> dict[str, str]:
    """``PATH``, ``LANG``, ``HOME`` (the sandbox's empty scratch config directory) and
    ``PYTHONSAFEPATH=1``: the working directory is the workspace, and a Python started with
    ``-c`` or ``-m`` would otherwise import first what the session left there."""
    return {"PATH": SESSION_PATH, "LANG": "C.UTF-8", "HOME": str(dirs.config_dir),
            "PYTHONSAFEPATH": "1"}  # fmt: skip
