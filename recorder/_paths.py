"""Paths a session named outside its workspace (RC-08, docs/glossary.md); in-workspace resolution.

A session sees its workspace at the batch's workspace path (RC-02: one fixed
path for every session, ``inside``), while its files are on the host at
another (``workspace``). A path the session names is resolved as the session
would resolve it, against ``inside``, and each component is looked up in the
host copy: the part under ``inside`` mapped under ``workspace``. Results are
in the session's terms (``inside``), so no host path, and no path under the
batch directory, enters what is recorded. Resolution:

1. A relative path is joined to the workspace path (the session's cwd).
2. ``..`` and ``.`` are collapsed lexically (`posixpath.normpath`), before any
   symlink is looked at (stated by RC-08; the kernel would differ for
   ``link/..``).
3. Symlinks are followed only while the path is inside the workspace: each
   component under the workspace is ``lstat``-ed in the host copy, a link's
   target (read in the session's terms: an absolute target is a path inside
   the sandbox) replaces it, and the result is normalised again. As soon as the path leaves
   the workspace nothing more is touched: the transform never looks at a host
   path outside the workspace (RC-11). A chain longer than
   `MAX_SYMLINK_HOPS` counts as outside (it names nothing the session could open).
4. Each ``lstat`` is a lookup, and one session's paths get `MAX_PATH_LOOKUPS` of them in
   all (a `Lookups` the caller shares between its calls): a path resolved once they are
   spent counts as outside, unresolved, and the budget says it ran out. A session can
   make each lookup cheap to ask for and slow to answer (a short word naming a link into
   a directory 60 levels deep whose bottom links to itself costs 41 walks of 63 levels:
   about 11 ms), and the runner resolves on its event loop's thread while the session
   runs: without the budget one 256 Ki command of such words held every session's
   timers, limits and pipes for about seven minutes.

Which words of a Bash command name a path (lexically, docs/recorder.md "Outside
paths"): a word that starts with ``/`` or ``~`` (or ``$HOME``/``${HOME}``); else,
in a word with ``=`` (``if=/x`` for dd, ``--opt=/x``, ``VAR=/x``), the part after
the first ``=`` when it starts with one of those or holds ``..``; else a word
that holds ``..``. ``~``, ``~/...``, ``$HOME`` and ``${HOME}`` mean the session's
config directory (its ``HOME``, `sandbox._argv.CONFIG_MOUNT` inside the sandbox:
the caller passes it as ``home``), never the workspace; ``~user`` stays as
written, outside.

Exempt from the count: ``/dev/null``, and a path the session named as
``/tmp/...`` (absolute, as written) that names nothing on the host: that is the
sandbox's private tmpfs (RC-02). A ``/tmp`` path that exists on the host (a
checkout or a batch under /tmp) is a host path the session reached for and is
counted, and so is a relative path whose ``..`` climbs into /tmp. Deciding this
takes one ``lstat`` of that host path: its existence, never its bytes.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from typing import TYPE_CHECKING, Any, Final

from recorder._shellwords import UnbalancedQuote, shell_words

if TYPE_CHECKING:
    from pathlib import Path

MAX_SYMLINK_HOPS: Final = 40
"""Links followed before giving up; Linux's own limit (ELOOP, path_resolution(7))."""
PATH_KEYS: Final = ("file_path", "notebook_path", "path")
"""Tool-input keys that name a path (Read, Write, Edit, NotebookEdit, Grep, Glob, ...)."""
PATTERN_TOOLS: Final = frozenset({"Glob"})
"""Tools whose ``pattern`` is itself a path pattern (counted when it looks like a path)."""
EXEMPT_EXACT: Final = frozenset({"/dev/null"})
EXEMPT_TREE: Final = "/tmp"
"""Private to the sandbox (RC-02 mounts a fresh tmpfs there)."""
MAX_PATH_LOOKUPS: Final = 100_000
"""The ``lstat`` calls one session's paths may cost, in all: about half a second here. An
honest session asks a few per path it names (its components inside the workspace)."""


class Lookups:
    """What is left of one session's `MAX_PATH_LOOKUPS` (shared by the calls that resolve its
    paths); ``exhausted`` once a resolution needed more than was left."""

    __slots__ = ("exhausted", "left")

    def __init__(self, budget: int = MAX_PATH_LOOKUPS) -> None:
        self.left = budget
        self.exhausted = False

    def take(self) -> bool:
        """One lookup, if any is left."""
        if self.left <= 0:
            self.exhausted = True
            return False
        self.left -= 1
        return True


def resolve_in_workspace(path: str, workspace: Path, lookups: Lookups | None = None, *,
                         inside: str | None = None, home: str | None = None) -> tuple[str, bool]:
    """Resolve ``path`` as the session would, following symlinks only inside the workspace.

    Args:
        path: a path the session named; relative paths are against the workspace path.
        workspace: the workspace's host copy, an absolute path.
        lookups: the session's budget of ``lstat`` calls (module docstring, 4); None: a
            fresh `Lookups` for this path alone.
        inside: the workspace's path inside the sandbox (the batch's workspace
            path, RC-02); None: the same as ``workspace``.
        home: the session's config directory, its ``HOME`` inside the sandbox
            (RC-03), against which ``~`` and ``~/...`` resolve; None: a ``~`` path
            is returned as given.

    Returns:
        ``(resolved, inside)``: the normalised absolute path, in the session's
        terms, after the workspace's symlinks, and whether it lies in the
        workspace (the workspace itself counts as inside). A ``~`` path is
        resolved against ``home`` (outside: the config directory is not the
        workspace); with no ``home``, and a ``~user`` path always, it is
        returned as given and is outside; so is a path whose resolution ran out
        of ``lookups``.
    """
    path = _expand_home(path, home)
    if path.startswith("~"):
        return path, False
    budget = Lookups() if lookups is None else lookups
    root = _root(workspace, inside)
    host = posixpath.normpath(str(workspace))
    current = posixpath.normpath(posixpath.join(root, path))
    for _ in range(MAX_SYMLINK_HOPS + 1):
        if not _within(current, root):
            return current, False
        followed = _follow_first_link(current, root, host, budget)
        if followed is None:
            return current, not budget.exhausted
        current = followed
    return current, False


def workspace_relative(resolved: str, workspace: Path, inside: str | None = None) -> str:
    """The workspace-relative form of a path `resolve_in_workspace` found inside (RC-10)."""
    return posixpath.relpath(resolved, _root(workspace, inside))


def _root(workspace: Path, inside: str | None) -> str:
    """The workspace's path in the session's terms, normalised."""
    return posixpath.normpath(inside if inside is not None else str(workspace))


def outside_paths(tool: str, tool_input: dict[str, Any], *, workspace: Path,
                  lookups: Lookups | None = None, inside: str | None = None,
                  home: str | None = None) -> set[str]:
    """The distinct paths one tool call names that resolve outside the workspace (RC-08).

    Args:
        tool: the tool's name as the stream gives it.
        tool_input: the tool_use ``input`` object.
        workspace: the workspace's host copy.
        inside: the workspace's path inside the sandbox; None: ``workspace``.
        lookups: the session's budget of ``lstat`` calls, shared by its calls (None: a
            fresh one for this call).
        home: the session's config directory (its ``HOME``, RC-03), against which
            ``~`` and ``$HOME`` resolve; None: such paths are kept as written (``~``).

    Returns:
        Resolved paths. For Bash, the path words of ``command`` (module
        docstring: a word starting with ``/``, ``~`` or ``$HOME``; the value of
        an ``x=value`` word; a word holding ``..``), split as shlex splits
        them, falling back to white space on bad quoting; redirection
        operators split off. For other tools, the top-level string values of
        ``file_path``, ``notebook_path`` and ``path``, and a Glob ``pattern``
        that looks like a path. ``/dev/null`` and private ``/tmp/...`` scratch
        (named absolute, absent on the host) are exempt.
    """
    if tool == "Bash":
        command = tool_input.get("command")
        candidates = _bash_path_words(command) if isinstance(command, str) else []
    else:
        candidates = [v for k in PATH_KEYS if isinstance(v := tool_input.get(k), str) and v]
        pattern = tool_input.get("pattern")
        if tool in PATTERN_TOOLS and isinstance(pattern, str) and _looks_like_path(pattern):
            candidates.append(pattern)
    budget = Lookups() if lookups is None else lookups
    found: set[str] = set()
    for candidate in candidates:
        resolved, within = resolve_in_workspace(candidate, workspace, budget, inside=inside,
                                                home=home)
        if not within and not _exempt(candidate, resolved):
            found.add(resolved)
    return found


def relative_if_inside(path: str, workspace: Path, *, inside: str | None = None) -> str:
    """``path`` relative to the workspace when it is lexically inside, else as given (RC-10).

    Symlinks are not followed: this is the name the session used, for
    ``argument``. Lexical against ``inside`` (the workspace path the session
    saw; None: ``workspace``); nothing is looked up.
    """
    if path.startswith("~"):
        return path
    root = _root(workspace, inside)
    absolute = posixpath.normpath(posixpath.join(root, path))
    if _within(absolute, root):
        return posixpath.relpath(absolute, root)
    return path


def _within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def _follow_first_link(path: str, root: str, host: str, lookups: Lookups) -> str | None:
    """Replace the first symlink component under ``root`` by its target; None if there is none
    (or ``lookups`` ran out: it says so). Each component is looked up under ``host``, the
    host copy of ``root``; paths and targets stay in the session's terms."""
    relative = posixpath.relpath(path, root)
    if relative == ".":
        return None
    parts = relative.split("/")
    probe, host_probe = root, host
    for index, part in enumerate(parts):
        probe, host_probe = posixpath.join(probe, part), posixpath.join(host_probe, part)
        if not lookups.take():
            return None
        try:
            mode = os.lstat(host_probe).st_mode
        except (OSError, ValueError):  # ValueError: a NUL, or a surrogate no byte encodes
            return None  # does not exist (yet): nothing further to follow
        if stat.S_ISLNK(mode):
            target = os.readlink(host_probe)
            base = posixpath.join(posixpath.dirname(probe), target)
            return posixpath.normpath(posixpath.join(base, *parts[index + 1 :]))
    return None


def _exempt(named: str, resolved: str) -> bool:
    if resolved in EXEMPT_EXACT:
        return True
    # Private scratch: named under /tmp as such, and nothing of the host is there.
    return (
        named.startswith("/")
        and _within(resolved, EXEMPT_TREE)
        and not os.path.lexists(resolved)
    )


def _looks_like_path(word: str) -> bool:
    return word.startswith(("/", "~")) or ".." in word


def _bash_path_words(command: str) -> list[str]:
    return [path for word in _shell_words(command) for each in _brace_expanded(word)
            if (path := _path_of_word(each)) is not None]


_BRACES: Final = re.compile(r"\{([^{}]*,[^{}]*)\}")
"""One brace group of alternatives (``{/etc,/usr}``), not nested."""
MAX_BRACE_WORDS: Final = 64
"""Words one shell word expands to at most (the first group's alternatives, each expanded
again); past it the word is taken as written."""


def _brace_expanded(word: str) -> list[str]:
    """The words bash's brace expansion makes of ``word`` (``cat {/etc,/usr}/x`` names
    ``/etc/x`` and ``/usr/x``), at most `MAX_BRACE_WORDS`; ``word`` alone when it holds no
    group. Lexical, as the rest of RC-08: quoting around a brace is not told apart."""
    words, done = [word], []
    while words:
        current = words.pop()
        group = _BRACES.search(current)
        if group is None:
            done.append(current)
        else:
            head, tail = current[:group.start()], current[group.end():]
            words.extend(head + alt + tail for alt in group.group(1).split(","))
        if len(done) + len(words) > MAX_BRACE_WORDS:
            return [word]
    return done


_GLUED_SHORT_OPTION: Final = re.compile(r"\A-[A-Za-z0-9](?=[/~])")
"""A short option with its value glued on (``tar -C/etc``, ``curl -o/etc/x``)."""


def _path_of_word(word: str) -> str | None:
    """The path one shell word names, lexically (module docstring), or None."""
    word = _home_word(word)
    if word.startswith(("/", "~")):
        return word
    glued = _GLUED_SHORT_OPTION.match(word)
    if glued is not None:
        return _home_word(word[glued.end():])
    _, equals, value = word.partition("=")
    if equals:
        value = _home_word(value)
        if _looks_like_path(value):
            return value  # if=/x, --opt=/x, VAR=/x: the value is the path
    return word if ".." in word else None


_HOME_VARIABLES: Final = ("${HOME}", "$HOME")


def _home_word(word: str) -> str:
    """``$HOME...``/``${HOME}...`` (the whole name, then ``/`` or the end) as ``~...``."""
    for variable in _HOME_VARIABLES:
        rest = word[len(variable):]
        if word.startswith(variable) and (not rest or rest.startswith("/")):
            return "~" + rest
    return word


def _expand_home(path: str, home: str | None) -> str:
    """``~`` and ``~/...`` under ``home`` (normalised); anything else, or no home, as given."""
    if home is None or not (path == "~" or path.startswith("~/")):
        return path
    return posixpath.normpath(posixpath.join(home, path[2:]))


def _shell_words(command: str) -> list[str]:
    """Shell words of ``command``; operators like ``>`` and ``;`` are split off.

    Linear in the command's length (`recorder._shellwords`). Bad quoting (an
    unclosed quote) falls back to splitting at white space, so a malformed
    command still has its paths counted.
    """
    try:
        return shell_words(command)
    except UnbalancedQuote:
        return command.split()
