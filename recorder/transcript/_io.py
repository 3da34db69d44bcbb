"""A transcript on disk: written atomically once proved, read back under the same check."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from recorder._atomic import write_atomic

from ._errors import TranscriptRefused
from ._layout import parse_transcript, render_transcript

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ._models import Transcript

_PIECE_CHARS: Final = 1 << 18
"""Characters of a transcript's text encoded at a time when it is written."""


def _utf8_pieces(text: str) -> Iterator[bytes]:
    """``text.encode("utf-8")`` in pieces: the same bytes (a str holds no surrogate pair to
    cut, and a proved text no lone surrogate), never held whole beside the text."""
    for start in range(0, len(text), _PIECE_CHARS):
        yield text[start : start + _PIECE_CHARS].encode("utf-8")


def write_transcript(path: Path, transcript: Transcript) -> None:
    """Render ``transcript`` and replace ``path`` with it atomically.

    Writes a temporary file in ``path``'s directory, fsyncs it, ``os.replace``s
    it over ``path`` and fsyncs the directory: a reader sees the old file or
    the new one, never a part. The temporary file is removed on any failure.

    Args:
        path: The transcript file (``transcripts/<arm>.md``).
        transcript: What to write.

    Raises:
        TranscriptUnproven: see `render_transcript`; nothing is written.
        OSError: the directory refused the write; ``path`` is unchanged.
    """
    write_atomic(path, _utf8_pieces(render_transcript(transcript)))


def read_transcript(path: Path) -> Transcript:
    """Read the transcript at ``path`` and check it against the contract.

    The bytes must be UTF-8 (RC-16 defines a Markdown text); the text is then
    checked by `parse_transcript`.

    Raises:
        OSError: the file could not be read (missing, a directory, no
            permission): nothing was verified, which is not a refusal.
        TranscriptRefused: the bytes were read whole and break the contract,
            not UTF-8 included.
    """
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TranscriptRefused("RC-16", f"{path} is not UTF-8 text: {exc}") from exc
    return parse_transcript(text)
