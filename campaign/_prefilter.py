"""The seal's prefilter: one ``grep`` over the corpus names the files worth searching.

The seal must search every file for the probe's and its answer keys' names
(RC-09). In Python that is one ``bytes.find`` per kind of name per file
(about seven passes over the corpus); GNU grep does every pattern in one
pass, on another CPU. So before sealing, `candidates` runs::

    LC_ALL=C grep -r -l -Z -z -a -i -E -D skip -e ANCHOR... -- TOP-LEVEL-ENTRIES

where the anchors are each document's `campaign._names.DocNames.anchors`
(its id, its file name, ``%``, its title with ``[[:space:]]+`` between the
words), and lists the files holding any of them. ``-z`` makes each file one
record, so a title wrapped over lines still matches; ``-a`` searches binary
files as text, as the seal does; ``-i`` in the C locale folds ``A-Z`` only, as
`bytes.lower` does; ``-D skip`` never opens a FIFO or device; symlinks are
not followed (``-r``, and no top-level symlink is passed).

Rule (completeness): every way the matcher names a document holds one of
its anchors, so a file grep does not list names nothing, and the seal may
copy it without searching it, *provided it copies the very bytes grep read*.
The seal checks that with the file's `campaign._corpus.FileSignature`: a file
whose signature is not the one taken at load is searched in full, whatever
grep said. Any failure of grep (missing, status 2, a timeout) means no
prefilter: every file is searched, as without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ._corpus import Corpus
    from ._sealplan import Names

GREP_TIMEOUT_S: Final = 600.0
"""Bound on the prefilter; over it, the seal searches every file itself."""
_EXCLUDED_TOP: Final = frozenset({".git"})
"""Top-level entries the corpus never holds (`campaign._corpus.load_corpus`)."""


def candidates(corpus: Corpus, names: Names) -> frozenset[str] | None:
    """Corpus-relative paths of the files that may name the probe or an answer key.

    Args:
        corpus: the loaded corpus (its root is searched).
        names: the probe's and the answer keys' names (`campaign._sealplan.names_for`).

    Returns:
        The files grep lists (a superset of the files the matcher would
        flag, among those unchanged since grep read them), or None when
        grep could not answer (the caller then searches every file).
        Never raises for a grep problem.
    """
    grep = shutil.which("grep")
    root = corpus.root
    try:
        tops = sorted(entry.name for entry in os.scandir(root)
                      if entry.name not in _EXCLUDED_TOP and not entry.is_symlink())
    except OSError:
        return None
    if grep is None:
        return None
    if not tops:
        return frozenset()
    patterns: list[bytes] = []
    for doc in (names.probe_names, *names.keys):
        patterns += doc.anchors()
    argv: list[str | bytes] = [grep, "-r", "-l", "-Z", "-z", "-a", "-i", "-E", "-D", "skip"]
    for pattern in dict.fromkeys(patterns):
        argv += [b"-e", pattern]
    argv += ["--", *tops]
    try:
        run = subprocess.run(argv, cwd=root, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
                             stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=GREP_TIMEOUT_S, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if run.returncode not in (0, 1) or run.stderr:
        return None
    found: set[str] = set()
    for raw in run.stdout.split(b"\0"):
        if raw:
            try:
                found.add(os.path.normpath(raw.decode("utf-8")))
            except UnicodeDecodeError:
                return None  # the corpus refuses non-UTF-8 names: something is off
    return frozenset(found)
