"""A corpus file's front matter read again, for the readers of a key the load ignores.

`read_front` serves the expectations (``expect:``, read by the grader and ``plan``
only): the load itself never keeps that key, so a `Probe` carries none.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from campaign._errors import CorpusError
from recorder import digest_bytes

from ._corpus import _front, _large_markdown
from ._corpus_files import LARGE_FILE_BYTES, Refused

if TYPE_CHECKING:
    from ._corpus import Corpus


def read_front(corpus: Corpus, rel: str) -> dict[str, Any]:
    """The front matter of the corpus's Markdown file ``rel``, read again from disk.

    For the readers that need a key the load ignores (a probe's ``expect:``).
    The file must still have the digest it had when ``corpus`` was loaded.

    Raises:
        CorpusError: the file changed since the load, or its front matter is gone or broken.
    """
    path = corpus.root / rel
    try:
        with open(path, "rb") as fp:
            if os.fstat(fp.fileno()).st_size > LARGE_FILE_BYTES:
                digest, data = _large_markdown(fp, rel)
            else:
                data = fp.read()
                digest = digest_bytes(data)
        if digest != corpus.files.get(rel):
            raise Refused(rel, "changed since the corpus was read; run the command again")
        parsed = _front(data, rel)
        if parsed is None:
            raise Refused(rel, "lost its front matter since the corpus was read")
    except OSError as exc:
        raise CorpusError(str(corpus.root), rel, f"cannot be read again: {exc.strerror}") from exc
    except Refused as exc:
        raise CorpusError(str(corpus.root), exc.path, exc.problem) from exc
    return parsed[0]
