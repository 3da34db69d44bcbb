"""What `plan`, `run`, `demo`, `resume` and `record` note about a corpus before anything runs.

Files a user may have meant otherwise, each named once: a file under the probe
shelf that is not a probe (docs/plan.md), and a symlink or other entry that is
not a regular file (outside the tree, never copied into a workspace by the
seal: docs/sealing.md), with what it points to or what it is. At most
`NAMED` of each kind are named; the rest are counted. The notes are one line
each: a name or a symlink's target that holds a control or a newline is
escaped (`campaign._terminal_text.one_line`), so it cannot forge a line.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Final

from campaign._terminal_text import one_line

from ._corpus import SHELF, off_shelf

if TYPE_CHECKING:
    from ._corpus import Corpus

NAMED: Final = 20
"""Entries of one kind a note names; further ones are counted in one more line."""
_KINDS: Final = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                 (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def corpus_notes(corpus: Corpus) -> list[str]:
    """The notes on ``corpus``, in order: off-shelf files, then irregular entries.

    Returns:
        One line per entry (without a ``note:`` prefix), bounded by `NAMED` per kind.
    """
    lines = _bounded([_off_shelf_line(rel) for rel in off_shelf(corpus)], "shelf files")
    irregular = [_irregular_line(corpus, rel) for rel in corpus.irregular[:NAMED + 1]]
    return lines + _bounded(irregular, "entries that are not regular files",
                            total=len(corpus.irregular))


def _bounded(lines: list[str], what: str, *, total: int | None = None) -> list[str]:
    total = len(lines) if total is None else total
    if total <= NAMED:
        return lines
    return [*lines[:NAMED], f"and {total - NAMED} more {what} like these"]


def _off_shelf_line(rel: str) -> str:
    where = ("in a folder of the shelf" if "/" in rel[len(SHELF):]
             else "on the shelf but not a .md file")
    return f"{one_line(rel)} is {where}, so it is not a probe (probes are docs/probes/*.md)"


def _irregular_line(corpus: Corpus, rel: str) -> str:
    """``rel`` and what it is: a symlink's target (as written, not followed), else its kind."""
    path = corpus.root / rel
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"{one_line(rel)} could not be looked at ({exc.strerror}); it is not copied"
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "an unreadable target"
        what = f"a symlink to {one_line(target)}"
    else:
        what = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
    return (f"{one_line(rel)} is {what}: not itself part of the tree, and never copied "
            "into a workspace (only regular files are sealed)")
