"""``tree.json``: the corpus's file listing as the batch was made, so a refusal can name files.

plan.yaml keeps the ``tree`` digest of every corpus file but lists only the
read set's files; when a file outside the read set changes, the digest alone
cannot say which. A new batch therefore keeps the listing the digest was
made from: ``{"format": 1, "files": {relpath: "sha256:..."}}``, every regular
file of the corpus (corpus names are UTF-8: `campaign.corpus._corpus_files`), written
atomically before plan.yaml (docs/batch.md, "Layout"). A batch made before
it existed has none; its refusals then say only that a file outside the read
set moved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from recorder import write_atomic

if TYPE_CHECKING:
    from pathlib import Path

TREE_NAME: Final = "tree.json"
TREE_FORMAT: Final = 1
FILES_NAMED: Final = 10
"""Files a refusal names; further ones are counted."""


def write_tree(batch: Path, files: Mapping[str, str]) -> None:
    """Write ``<batch>/tree.json`` from ``files`` (relpath -> digest, `Corpus.files`).

    Raises:
        OSError: the host refused the write.
    """
    body = {"format": TREE_FORMAT, "files": dict(files)}
    write_atomic(batch / TREE_NAME, json.dumps(body, ensure_ascii=False, indent=0,
                                               sort_keys=True).encode("utf-8"))


def read_tree(batch: Path) -> dict[str, str] | None:
    """The listing ``<batch>/tree.json`` holds, or None when the batch has none, or none this
    runner can read (another format, not JSON, not a mapping of strings): a refusal then
    names no file outside the read set, and says so."""
    try:
        body = json.loads((batch / TREE_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    files = body.get("files") if isinstance(body, dict) and body.get("format") == TREE_FORMAT \
        else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in files.items()):
        return None
    return files


def files_moved(before: Mapping[str, str], now: Mapping[str, str], *, where: str) -> str | None:
    """The files that changed, appeared or went between two listings, in words (at most
    `FILES_NAMED` named, the rest counted), prefixed by ``where``; None when none did."""
    changes = [f"{p} changed" for p in sorted(before.keys() & now.keys()) if before[p] != now[p]]
    changes += [f"{p} is new" for p in sorted(now.keys() - before.keys())]
    changes += [f"{p} is gone" for p in sorted(before.keys() - now.keys())]
    if not changes:
        return None
    more = len(changes) - FILES_NAMED
    return f"{where}, " + ", ".join(changes[:FILES_NAMED]) + (
        f" and {more} more" if more > 0 else "")
