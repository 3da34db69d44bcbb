"""Loading a corpus whose Markdown files are large (docs/plan.md, "What the planner reads"):
read in chunks, front matter from the file's head, the same answers as a whole read.

The bounds are made small here (a file over 4,000 bytes is large, 7-byte chunks, front
matter within 64 bytes), so the chunked path is what these files take.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from campaign._errors import CorpusError
from campaign.corpus import _corpus
from campaign.corpus._corpus import load_corpus
from tests.campaign.corpora import write_files

PROBE_YML = "tiers:\n  campaign: {arms: [present], repetitions: 1}\ntools: [Read]\nmodel: m\n"
PROBE = "---\nid: HW-PRB-0001\ntitle: One\nanswers: []\nexamines: []\n---\n\n## Task\n\nDo.\n"
REL = "docs/notes/big.md"


@pytest.fixture(autouse=True)
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_corpus, "LARGE_FILE_BYTES", 4000)
    monkeypatch.setattr(_corpus, "CHUNK_BYTES", 7)
    monkeypatch.setattr(_corpus, "FRONT_MATTER_MAX_BYTES", 64)


def _load(tmp_path: Path, big: bytes, rel: str = REL) -> _corpus.Corpus:
    root = write_files(tmp_path / "c", {".headwater/probe.yml": PROBE_YML,
                                        "docs/probes/p1.md": PROBE, rel: big})
    return load_corpus(root)


def test_a_large_document_gets_its_id_and_the_digest_of_all_its_bytes(tmp_path: Path) -> None:
    big = b"---\nid: HW-NOTE-0009\n---\n" + "body é line\n".encode() * 1000
    corpus = _load(tmp_path, big)
    assert corpus.documents["HW-NOTE-0009"] == REL
    assert corpus.files[REL] == "sha256:" + hashlib.sha256(big).hexdigest()


def test_a_large_markdown_file_without_front_matter_is_untyped(tmp_path: Path) -> None:
    big = b"# no front matter\n" + b"\xff not even UTF-8\n" * 1000
    corpus = _load(tmp_path, big)
    assert REL in corpus.untyped
    assert corpus.files[REL] == "sha256:" + hashlib.sha256(big).hexdigest()


def test_front_matter_must_close_within_the_bound(tmp_path: Path) -> None:
    big = b"---\nid: HW-NOTE-0009\n" + b"key: value\n" * 10 + b"---\n" + b"body\n" * 1000
    with pytest.raises(CorpusError, match="does not close within the file's first 64 bytes"):
        _load(tmp_path, big)


@pytest.mark.parametrize("large", [True, False], ids=["chunked", "whole"])
def test_non_utf8_past_the_head_is_refused_at_its_byte_and_line(
        tmp_path: Path, large: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # The \xe9 is byte 229 (25 bytes of front matter + 20 lines of 10 + "caf" = 228 before
    # it), on line 24 (3 front matter lines + 20 body lines before it).
    if not large:
        monkeypatch.setattr(_corpus, "LARGE_FILE_BYTES", 1 << 30)
    big = b"---\nid: HW-NOTE-0009\n---\n" + b"body line\n" * 20 + b"caf\xe9\n" + b"x\n" * 3000
    with pytest.raises(CorpusError, match=r"byte 229, line 24: invalid continuation byte"):
        _load(tmp_path, big)


def test_a_large_probe_is_refused(tmp_path: Path) -> None:
    big = PROBE.encode() + b"more of the task\n" * 1000
    with pytest.raises(CorpusError, match="a probe file is at most 4,000 bytes"):
        _load(tmp_path, big, "docs/probes/p2.md")


def test_a_bad_sequence_across_two_chunks_is_refused_at_its_first_byte(tmp_path: Path) -> None:
    # \xc3 opens a two-byte sequence and is byte 231 (0-based 230: the last byte of the 7-byte
    # chunk at 224); the next chunk's "(" is no continuation byte: refused at byte 231.
    big = (b"---\nid: HW-NOTE-0009\n---\n" + b"body line\n" * 20 + b"cafab\xc3(\n"
           + b"x\n" * 3000)
    assert big.index(b"\xc3") == 230 and 230 % 7 == 6
    with pytest.raises(CorpusError, match=r"byte 231, line 24: invalid continuation byte"):
        _load(tmp_path, big)


def test_a_probe_yml_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    root = write_files(tmp_path / "c", {".headwater/probe.yml": PROBE_YML + "#" * 4000,
                                        "docs/probes/p1.md": PROBE})
    with pytest.raises(CorpusError, match=r"over 4,000 bytes, the most probe\.yml may hold"):
        load_corpus(root)
