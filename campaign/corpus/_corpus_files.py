"""The corpus's files as the file system has them: the walk, and which files are quiet.

`campaign.corpus._corpus.load_corpus` walks the corpus once (`walk_corpus`), then
takes a `FileSignature` of every directory (`quiet_directories`) and of every
file that has been quiet for `QUIET_S`, before it reads each file: the seal
and `campaign.seal._prefilter` trust a digest only while its signature holds.
Problems are `Refused` (one file, one problem), which `load_corpus` turns
into `campaign._errors.CorpusError` naming the corpus root.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, NamedTuple


class Refused(Exception):
    """A problem in one corpus file; `load_corpus` turns it into `CorpusError` (naming the root)."""

    def __init__(self, path: str | None, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


QUIET_S: Final = 2.0
"""A file whose status last changed at least this many seconds before loading began gets a
`FileSignature` (far above any filesystem's timestamp granularity)."""
LARGE_FILE_BYTES: Final = 8 << 20
"""A file larger than this (bytes) is read (loaded, sealed, verified,
digested) in chunks, never whole."""
CHUNK_BYTES: Final = 1 << 20
"""Read size (bytes) of every chunked pass over a file."""



class FileSignature(NamedTuple):
    """What ``stat`` says of a regular file: if it is the same later, the bytes are too.

    Rule: any write to a file sets its ``ctime`` to the current time (inode(7)),
    and no call sets ``ctime`` back. A signature is taken only for a file whose
    ``ctime`` was at least `QUIET_S` older than the start of loading, and
    *before* the file is read for its digest: a write during or after the
    read then gives a ``ctime`` no earlier than the start of loading, hence a
    different signature, whatever the timestamp granularity.
    """

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileSignature:
        """The signature in ``st`` (from ``stat``, ``lstat`` or ``fstat``)."""
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    @classmethod
    def quiet(cls, path: str | os.PathLike[str], started_ns: int) -> FileSignature | None:
        """``path``'s signature if its ``ctime`` is `QUIET_S` older than ``started_ns``.

        ``started_ns``: when loading began, ``time.time_ns()``. None for a file
        changed more recently (its digest is then never trusted without a read).

        Raises:
            OSError: ``path`` cannot be stat'ed.
        """
        st = os.lstat(path)
        if st.st_ctime_ns > started_ns - int(QUIET_S * 1e9):
            return None
        return cls.of(st)


def walk_corpus(root: Path) -> tuple[dict[str, str], list[str], list[str]]:
    """Regular files (relpath -> host path; symlinks not followed), other entries, and
    directories ("" the root), except the top-level ``.git``.

    ``os.scandir`` tells a regular file from the directory entry's type, so the
    walk stats nothing itself (the signatures' ``lstat`` comes after it).
    """
    regular: dict[str, str] = {}
    irregular: list[str] = []
    directories: list[str] = []
    pending = [("", str(root))]
    while pending:
        rel_dir, host_dir = pending.pop()
        directories.append(rel_dir)
        try:
            with os.scandir(host_dir) as listing:
                entries = list(listing)
        except OSError as exc:
            raise Refused(rel_dir or None, f"cannot list the directory: {exc.strerror}") from exc
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if rel == ".git":
                continue
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                raise Refused(rel, "the file name is not UTF-8") from None
            if entry.is_dir(follow_symlinks=False):
                pending.append((rel, entry.path))
            elif entry.is_file(follow_symlinks=False):
                regular[rel] = entry.path
            else:
                irregular.append(rel)
    return regular, sorted(irregular), directories


def quiet_directories(root: Path, directories: list[str],
                       started_ns: int) -> dict[str, FileSignature] | None:
    """Each directory's signature, or None when one changed within `QUIET_S` of loading.

    Taken before any file's signature: a directory entry renamed, added or
    removed later changes its directory's ctime, so a path that resolves the
    same way at load and later resolves to the same file (`campaign.seal._prefilter`).
    """
    found: dict[str, FileSignature] = {}
    for rel in directories:
        signature = FileSignature.quiet(root / rel if rel else root, started_ns)
        if signature is None:
            return None
        found[rel] = signature
    return found
