"""The one digest form of the contract: ``sha256:`` followed by 64 lowercase hex digits.

Every digest the project writes (plan members, manifests, call results,
produced artifacts) goes through these helpers, so there is one definition of
"the digest of X" (docs/plan.md).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Final

DIGEST_PREFIX: Final = "sha256:"
DIGEST_RE: Final = re.compile(r"\Asha256:[0-9a-f]{64}\Z")
_FILE_CHUNK_BYTES: Final = 1 << 20
"""Read size for file digests: bounded memory whatever the file size."""


def digest_bytes(data: bytes) -> str:
    """Return ``sha256:<hex>`` of ``data`` (raw bytes, no normalisation)."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest_text(text: str) -> str:
    """Return ``sha256:<hex>`` of ``text`` encoded as UTF-8.

    A lone surrogate (JSON text may carry ``"\\udc80"``; UTF-8 has no such
    character) is taken in its three-byte form (``surrogatepass``), so a tool
    result that holds one still has a digest and the session goes on.
    """
    return digest_bytes(text.encode("utf-8", "surrogatepass"))


def digest_file(path: Path) -> str:
    """Return ``sha256:<hex>`` of the raw bytes of the regular file ``path``.

    Reads in 1 MiB chunks, so memory is bounded whatever the file size.

    Raises:
        OSError: the file cannot be opened or read.
    """
    h = hashlib.sha256()
    with path.open("rb") as fp:
        while chunk := fp.read(_FILE_CHUNK_BYTES):
            h.update(chunk)
    return DIGEST_PREFIX + h.hexdigest()


def is_digest(value: str) -> bool:
    """True when ``value`` is exactly ``sha256:`` + 64 lowercase hex digits."""
    return DIGEST_RE.match(value) is not None


def tree_digest(entries: dict[str, str]) -> str:
    """Digest of a set of files, the ``tree`` formula of docs/plan.md.

    Args:
        entries: corpus-relative POSIX path -> that file's ``sha256:`` digest.

    Returns:
        sha256 of the lines ``<digest> <relpath>\\n``, sorted by the relpath's
        UTF-8 bytes.
    """
    ordered = sorted(entries.items(), key=lambda kv: kv[0].encode("utf-8"))
    return digest_bytes("".join(f"{d} {p}\n" for p, d in ordered).encode("utf-8"))
