"""The seal's prefilter: one ``grep`` over the corpus names the files worth searching.

The seal must search every file for the probe's and its answer keys' names
(RC-09). In Python that is one ``bytes.find`` per kind of name per file
(about seven passes over the corpus); GNU grep does every pattern in one
pass, on another CPU. So when a seal starts, `Prefilter` starts::

    LC_ALL=C grep -r -l -Z -z -a -i -E -D skip -e ANCHOR... -- TOP-LEVEL-ENTRIES

where the anchors are each document's `campaign.seal._names.DocNames.anchors`
(its id, its file name, ``%``, its title with ``[[:space:]]+`` between the
words), and lists the files holding any of them. ``-z`` makes each file one
record, so a title wrapped over lines still matches; ``-a`` searches binary
files as text, as the seal does; ``-i`` in the C locale folds ``A-Z`` only, as
`bytes.lower` does; ``-D skip`` never opens a FIFO or device; symlinks are
not followed (``-r``, and no top-level symlink is passed). A file over
`campaign.seal._chunkscan.LARGE_FILE_BYTES` is left out (``--exclude`` of its file
name: ``-z`` would make grep hold it whole), and every file of that name is
in the answer, so the seal searches it itself, in chunks. While grep runs,
the seal searches each file itself; once grep is done, its list applies.

Rule (completeness): every way the matcher names a document holds one of
its anchors, so a file grep does not list names nothing, and the seal may
copy it without searching it, *provided it copies the very bytes grep read*.
Two checks prove that, both from `campaign.corpus._corpus_files.FileSignature` (a write
or a rename sets ctime to the current time, and nothing sets it back):

* every directory of the corpus, stat'ed again once grep has finished, has
  the signature it had at load (taken before the files'), so no entry was
  renamed, added or removed since: grep resolved each path to the inode the
  load stat'ed. Otherwise no prefilter;
* the seal asks for the list *before* it reads a file, so grep had finished
  by then, and its own ``fstat`` of the file, *after* reading it, equals
  the load's signature (same inode, unchanged from the load to after the
  read, which spans grep's read): the seal's bytes are the load's and
  grep's. Otherwise that file is searched in full.

grep runs through the process layer (`sandbox.spawn`: spawned without a
shell, an environment of its own, reaped however the seal ends); it is not
confined, as it reads only the corpus, which the runner reads anyway. The
seal is synchronous and runs in a worker thread of the batch's loop, so every
wait on grep (``--version`` too) blocks that thread through the process
layer's blocking calls (`Child.wait_exit_blocking`, `Child.reap_blocking`:
the same bounds and reap as the async ones) and never starts an event loop
(`sandbox.run_sync` refuses to under a running one).
Only ``/usr/bin/grep`` is run, and only if it says it is GNU grep; every
listed path must be a file of the corpus. Any failure (no GNU grep, status
2, anything on stderr, a timeout, an anchor holding a NUL byte, a directory
changed or not quiet at load) means no prefilter: every file is searched,
as without it.
"""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
import threading
import time
from typing import IO, TYPE_CHECKING, Final

from campaign.corpus import FileSignature, file_size
from sandbox import Child, SpawnFailed, spawn

from ._chunkscan import LARGE_FILE_BYTES

if TYPE_CHECKING:
    from campaign.corpus import Corpus

    from ._names import Names

GREP: Final = "/usr/bin/grep"
"""Debian's GNU grep (package ``grep``, Essential): a fixed path, never the caller's PATH."""
_ENV: Final = {"LC_ALL": "C", "PATH": "/usr/bin:/bin"}
GREP_TIMEOUT_S: Final = 600.0
"""Bound on the prefilter; over it, the seal searches every file itself."""
GREP_VERSION_TIMEOUT_S: Final = 30.0
"""``grep --version`` prints at once; the bound only absorbs a loaded host."""
_EXCLUDED_TOP: Final = frozenset({".git"})
"""Top-level entries the corpus never holds (`campaign.corpus._corpus.load_corpus`)."""


_VERSION_BYTES: Final = 4096
"""Bytes of ``grep --version``'s output read: its first line is all that is asked."""


class GrepCheck:
    """Whether a grep is GNU grep, asked by running its ``--version``; a yes is remembered.

    An explicit cache, owned by whoever seals: `campaign.seal.resolve_sessions` makes
    one per batch and every `SessionPlan` of it shares it, so a batch asks once
    (a ``seal`` outside a batch, its own). A no is not remembered: the next seal
    asks again (a loaded host may miss the bound once; the seal is then only
    slower, never less complete). Thread-safe: the seals of concurrent sessions
    run in worker threads and ask under one lock (the first asks, the others
    wait for its answer, at most `GREP_VERSION_TIMEOUT_S`).

    Args:
        path: the grep to trust; `GREP` unless a test says otherwise.
    """

    def __init__(self, path: str = GREP) -> None:
        self.path = path
        self._gnu = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<GrepCheck {self.path} {'GNU' if self._gnu else 'not known to be GNU'}>"

    def gnu(self) -> str | None:
        """``path`` if it is GNU grep (its ``--version``'s first line), else None. Blocks."""
        with self._lock:
            if not self._gnu:
                self._gnu = _says_gnu(self.path)
            return self.path if self._gnu else None


def _says_gnu(grep: str) -> bool:
    """Whether ``grep --version`` exits 0 with a first line of GNU grep's (blocking, bounded)."""
    with tempfile.TemporaryFile() as out:
        try:
            child = spawn([grep, "--version"], env=_ENV, stdout=out.fileno(),
                          stderr=out.fileno())  # fmt: skip
        except (OSError, SpawnFailed):
            return False
        try:
            exited = child.wait_exit_blocking(GREP_VERSION_TIMEOUT_S)
        finally:
            child.reap_blocking()
            child.close()
        out.seek(0)
        first = out.read(_VERSION_BYTES).split(b"\n", 1)[0]
    return exited and child.returncode == 0 and first.startswith(b"grep (GNU grep)")


def _directories_unchanged(corpus: Corpus) -> bool:
    if corpus.directories is None:
        return False
    for rel, signature in corpus.directories.items():
        try:
            now = FileSignature.of(os.lstat(corpus.root / rel if rel else corpus.root))
        except OSError:
            return False
        if now != signature:
            return False
    return True


_GLOB_SPECIAL: Final = re.compile(r"[*?\[\]\\]")
"""The bytes a grep ``--exclude`` glob gives a meaning; a backslash makes each literal."""


def _large(corpus: Corpus) -> list[str]:
    """The corpus files over `LARGE_FILE_BYTES` (sizes from the load's signatures, else lstat).

    grep ``-z`` holds a file without a NUL byte whole in memory (one record), so
    these are never given to grep; the seal searches them itself, in chunks.
    """
    found: list[str] = []
    for rel in corpus.files:
        size = file_size(corpus, rel)
        if size is None or size > LARGE_FILE_BYTES:  # gone or unreadable: never trusted
            found.append(rel)
    return found


def _unsearched(corpus: Corpus) -> set[str]:
    """Every corpus file grep skipped: its file name is one of a large file's (``--exclude``
    matches the file name during the walk). The answer lists them, so the seal searches them."""
    bases = {posixpath.basename(rel) for rel in _large(corpus)}
    return {rel for rel in corpus.files if posixpath.basename(rel) in bases}


class Prefilter:
    """One grep over the corpus, started at once, read when it is done. Use as a context
    manager (the grep is killed and reaped on exit).

    Synchronous: `wait` and `close` block the calling thread (the process
    layer's blocking waits) and start no event loop, so it is used from a
    worker thread (a session's seal runs in one), never on a loop's thread.

    `listed` never waits: while grep runs it answers None (search the file),
    so the seal works on meanwhile, on the other CPU. Its stdout and stderr
    go to unlinked temporary files, never pipes, so grep never blocks on us.

    Args:
        corpus: the loaded corpus (its root is searched).
        names: the probe's and the answer keys' names (`campaign.seal._sealplan.names_for`).
        grep: the seal's `GrepCheck` (only a GNU grep is run).

    Never raises for a grep problem: the answer is then None for good.
    """

    def __init__(self, corpus: Corpus, names: Names, grep: GrepCheck) -> None:
        self._corpus = corpus
        self._child: Child | None = None
        self._out: IO[bytes] | None = None
        self._err: IO[bytes] | None = None
        self._answer: frozenset[str] | None = None
        self._done = True
        argv = self._argv(corpus, names, grep)
        if argv is None:
            return
        if argv == []:  # nothing to search
            self._answer = frozenset() if _directories_unchanged(corpus) else None
            return
        try:
            self._out = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
            self._err = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
            self._child = spawn(argv, cwd=corpus.root, env=_ENV, stdout=self._out.fileno(),
                                stderr=self._err.fileno())  # fmt: skip
            self._done = False
            self._deadline = time.monotonic() + GREP_TIMEOUT_S
        except (OSError, ValueError, SpawnFailed):
            self.close()

    @staticmethod
    def _argv(corpus: Corpus, names: Names, check: GrepCheck) -> list[str | bytes] | None:
        if corpus.directories is None or (grep := check.gnu()) is None:
            return None
        try:
            tops = sorted(entry.name for entry in os.scandir(corpus.root)
                          if entry.name not in _EXCLUDED_TOP and not entry.is_symlink())
        except OSError:
            return None
        patterns: list[bytes] = []
        for doc in (names.probe_names, *names.keys):
            patterns += doc.anchors()
        if any(b"\0" in pattern for pattern in patterns):
            return None  # cannot be an argument; the matcher alone then
        if not tops:
            return []
        argv: list[str | bytes] = [grep, "-r", "-l", "-Z", "-z", "-a", "-i", "-E", "-D", "skip"]
        for pattern in dict.fromkeys(patterns):
            argv += [b"-e", pattern]
        for base in sorted({posixpath.basename(rel) for rel in _large(corpus)}):
            argv.append("--exclude=" + _GLOB_SPECIAL.sub(r"\\\g<0>", base))
        return [*argv, "--", *tops]

    def listed(self) -> frozenset[str] | None:
        """The files grep lists, once it is done and proven sound; None until then, or ever."""
        if not self._done and self._child is not None:
            if not self._child.has_exited() and time.monotonic() < self._deadline:
                return None
            self._answer = self._finish(self._child)
            self._done = True
            self.close()
        return self._answer

    def wait(self) -> frozenset[str] | None:
        """`listed`, after waiting for grep (at most `GREP_TIMEOUT_S`)."""
        if self._child is not None and not self._done:
            self._child.wait_exit_blocking(max(0.0, self._deadline - time.monotonic()))
        return self.listed()

    def _finish(self, child: Child) -> frozenset[str] | None:
        if not child.has_exited():
            return None  # over time: killed in close()
        child.reap_blocking()  # it has exited: this only collects its status
        if self._out is None or self._err is None:
            return None
        self._err.seek(0)
        if child.returncode not in (0, 1) or self._err.read(1):
            return None
        self._out.seek(0)
        found: set[str] = set()
        for raw in self._out.read().split(b"\0"):
            if raw:
                try:
                    found.add(os.path.normpath(raw.decode("utf-8")))
                except UnicodeDecodeError:
                    return None  # the corpus refuses non-UTF-8 names: something is off
        if not found <= self._corpus.files.keys() or not _directories_unchanged(self._corpus):
            return None
        return frozenset(found | _unsearched(self._corpus))

    def close(self) -> None:
        """Stop grep if it still runs, reap it, drop its output; idempotent."""
        child, self._child = self._child, None
        if child is not None:
            child.reap_blocking()  # SIGTERM ends grep at once (it does not fork)
            child.close()
        for spool in (self._out, self._err):
            if spool is not None:
                spool.close()
        self._out = self._err = None
        self._done = True

    def __enter__(self) -> Prefilter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def candidates(corpus: Corpus, names: Names,
               grep: GrepCheck | None = None) -> frozenset[str] | None:
    """Corpus-relative paths of the files that may name the probe or an answer key.

    `Prefilter`, waited for. Returns the files grep lists (a superset of the
    files the matcher would flag, among those unchanged since grep read them),
    or None when grep could not answer (the caller then searches every file).
    Never raises for a grep problem. ``grep``: a `GrepCheck` to ask (a new one by default).
    """
    with Prefilter(corpus, names, grep or GrepCheck()) as prefilter:
        return prefilter.wait()
