"""A transcript on disk read back under the contract's check (`write_streamed` writes it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import TranscriptRefused
from ._layout import parse_transcript

if TYPE_CHECKING:
    from ._models import Transcript

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
