"""RC-09 for large files (docs/sealing.md, "Large files"): every test of test_seal.py again,
with every corpus file taken as large and read in chunks of a few bytes.

The bound is set below every file's size, the chunk to 5 bytes (the windows then
overlap by the longest name + 4) and a fold's line window to 3 characters, so each
name of the seal's corpora crosses a chunk edge somewhere, and each expected removal,
line and digest of test_seal.py (written from the rule text) must come out of the
chunked plan, copy and verification too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from campaign.seal import _chunkscan, _seal, _sealbig, _sealplan
from tests.campaign.test_seal import *  # noqa: F403 (the same tests, collected again here)


@pytest.fixture(autouse=True)
def every_file_large(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every corpus and workspace file over the bound; 5-byte chunks; the least overlap."""
    monkeypatch.setattr(_sealplan, "LARGE_FILE_BYTES", -1)
    monkeypatch.setattr(_seal, "LARGE_FILE_BYTES", -1)
    monkeypatch.setattr(_chunkscan, "CHUNK_BYTES", 5)
    monkeypatch.setattr(_chunkscan, "OVERLAP_BYTES", 0)
    monkeypatch.setattr(_sealbig, "LINE_WINDOW_CHARS", 3)  # a fold's lines, in windows
    yield


# These replace the whole-file path's own functions (`_sealplan._read`, `_seal._write`,
# `_Verifier.check`) to act between its steps; the chunked path has other steps (its
# verifier is `_Verifier.check_large`), so they do not apply here.
for _name in ("test_the_seals_own_verification_catches_a_bad_executor",
              "test_a_write_between_the_seals_fstat_and_its_read_is_seen",
              "test_grep_done_only_after_the_seal_read_a_file_does_not_vouch_for_it",
              "test_a_seal_that_fails_midway_stops_its_grep_at_once"):
    del globals()[_name]
