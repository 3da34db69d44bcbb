"""The corpus's large files, for the note ``plan`` prints (docs/cli.md, "plan").

Every session's seal copies each corpus file into its workspace and reads it
about three times (the plan, the copy, the verification; docs/sealing.md,
"Large files"), so a file of hundreds of MB costs each session seconds and its
workspace that much disk, though never the runner's memory. ``plan`` names the
files over `NOTE_OVER_BYTES`, largest first, one line each, at most
`NOTE_LINES` lines and then one line counting the rest.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

from campaign._terminal_text import one_line

if TYPE_CHECKING:
    from ._corpus import Corpus

NOTE_OVER_BYTES: Final = 50_000_000
"""A corpus file larger than this (bytes; 50 MB) gets a note from ``plan``."""
NOTE_LINES: Final = 10
"""At most this many files are named; the rest are counted on one more line."""


def large_files(corpus: Corpus, over_bytes: int = NOTE_OVER_BYTES) -> list[tuple[str, int]]:
    """(relpath, size in bytes) of the corpus files over ``over_bytes``, largest first.

    Sizes from the load's signatures, else ``lstat`` (a file gone since loading is left out).
    """
    found = [(rel, size) for rel in corpus.files
             if (size := file_size(corpus, rel)) is not None and size > over_bytes]
    return sorted(found, key=lambda item: (-item[1], item[0]))


def file_size(corpus: Corpus, rel: str) -> int | None:
    """The size in bytes of corpus file ``rel``: from the load's signature when it has one,
    else ``lstat``; None when the file is gone or cannot be looked at."""
    signature = corpus.signatures.get(rel)
    if signature is not None:
        return signature.size
    try:
        return os.lstat(corpus.root / rel).st_size
    except OSError:
        return None


def large_file_notes(corpus: Corpus, over_bytes: int = NOTE_OVER_BYTES,
                     lines: int = NOTE_LINES) -> list[str]:
    """The notes ``plan`` prints (each after ``note: ``, on stderr): one per large file (at most
    ``lines``; its name escaped for the terminal, `campaign._terminal_text.one_line`), then a
    count."""
    found = large_files(corpus, over_bytes)
    notes = [f"{one_line(rel)} is {size / 1e6:,.1f} MB (over {over_bytes / 1e6:,.0f} MB): every "
             "session's seal copies it into its workspace and reads it about three times"
             for rel, size in found[:lines]]
    if len(found) > lines:
        notes.append(f"and {len(found) - lines:,} more files over "
                     f"{over_bytes / 1e6:,.0f} MB")
    return notes
