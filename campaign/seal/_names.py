"""How a text names a corpus document (RC-09): the matcher the seal and its verifier share.

A document (a probe, or an answer key) is named by its id, its
corpus-relative path, its bare file name (only when no other corpus file has
that name), a relative link that resolves to it, or (probes) its title. The
exact boundaries are in docs/sealing.md, "Word boundaries"; in short:

* *identifier characters* are ``A-Z a-z 0-9 _``, and a ``-`` joined to one;
  an id or title occurs when the characters touching it are not identifier
  characters (so ``HW-PRB-001`` does not occur in ``HW-PRB-0012``);
* a path or file name occurs when the character before is not ``A-Za-z0-9_.-``
  and the one after is not ``A-Za-z0-9_`` nor a ``.``/``-`` followed by one;
* ids and titles match ignoring the letter case of ``A-Z`` (other letters
  exactly); paths and file names match in exact case; a title's words may be
  separated by any run of ASCII white space (a title wrapped over two lines).

Everything works on the file's bytes (UTF-8), so one search is one
``bytes.find`` (or one regex with a literal prefix) over the file: the cost
of a scan is linear in the file's length, whatever it contains. A link is
parsed only on the lines around an occurrence of the document's file name or
of a ``%`` (a percent-encoded target), never over the whole file.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, NamedTuple
from urllib.parse import unquote

from campaign._errors import UnknownProbe

if TYPE_CHECKING:
    from campaign.corpus import Corpus, Probe

_IDENT: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_PATH_BEFORE_STOP: Final = _IDENT | frozenset(b".-")
_HYPHEN: Final = ord("-")
_JOINERS: Final = frozenset(b".-")
_SPACE: Final = rb"[ \t\n\r\f\v]+"
_LINK_RE: Final = re.compile(
    rb"\]\(\s*<?(?P<a>[^)\s>]+)"  # [text](target)
    rb"|^ {0,3}\[[^\]\n]+\]:[ \t]*<?(?P<b>[^\s>]+)"  # [ref]: target
    rb"|(?i:href|src)[ \t]*=[ \t]*[\"'](?P<c>[^\"'\n]+)",  # HTML attribute
    re.MULTILINE,
)


class Naming(NamedTuple):
    """One occurrence of a name in a text: how, and where (byte offsets, end exclusive)."""

    how: str
    """``id``, ``path``, ``file name``, ``title`` or ``relative link``."""
    start: int
    end: int


def _word_ok(hay: bytes, start: int, end: int, lead: bool, tail: bool) -> bool:
    """Word boundaries around ``hay[start:end]``; ``lead``/``tail``: the name's edge is ident."""
    if lead and start > 0:
        before = hay[start - 1]
        if before in _IDENT or (before == _HYPHEN and start > 1 and hay[start - 2] in _IDENT):
            return False
    if tail and end < len(hay):
        after = hay[end]
        if after in _IDENT or (after == _HYPHEN and end + 1 < len(hay) and hay[end + 1] in _IDENT):
            return False
    return True


def _path_ok(hay: bytes, start: int, end: int) -> bool:
    if start > 0 and hay[start - 1] in _PATH_BEFORE_STOP:
        return False
    if end < len(hay):
        after = hay[end]
        if after in _IDENT or (after in _JOINERS and end + 1 < len(hay) and hay[end + 1] in _IDENT):
            return False
    return True


def _edges(name: bytes) -> tuple[bool, bool]:
    return name[0] in _IDENT, name[-1] in _IDENT


def find_word(hay: bytes, name: bytes, *, lead: bool = True, tail: bool = True,
              start: int = 0) -> int:
    """Offset of the first occurrence of ``name`` in ``hay`` on word boundaries, or -1.

    Case is the caller's business: pass both lowered for a case-insensitive search.
    """
    at = hay.find(name, start)
    while at >= 0 and not _word_ok(hay, at, at + len(name), lead, tail):
        at = hay.find(name, at + 1)
    return at


def _find_path(hay: bytes, name: bytes) -> int:
    at = hay.find(name)
    while at >= 0 and not _path_ok(hay, at, at + len(name)):
        at = hay.find(name, at + 1)
    return at


class Text:
    """One file's bytes, prepared once for every name searched in it."""

    __slots__ = ("_lower", "_windows", "data", "has_percent")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.has_percent = b"%" in data
        """A ``%`` may start a percent-encoded link target."""
        self._lower: bytes | None = None
        self._windows: dict[int, list[tuple[bytes, int, int]]] = {}

    @property
    def lower(self) -> bytes:
        """The bytes with ``A-Z`` lowered (computed once; UTF-8 multi-byte sequences untouched)."""
        if self._lower is None:
            self._lower = self.data.lower()
        return self._lower

    def line_of(self, offset: int) -> int:
        """The 1-based line (lines end at ``\\n``) holding byte ``offset``."""
        return self.data.count(b"\n", 0, offset) + 1

    def links_near(self, anchor: bytes) -> list[tuple[bytes, int, int]]:
        """(raw target, start, end) of each link on a line holding ``anchor`` or the one before."""
        found: list[tuple[bytes, int, int]] = []
        data = self.data
        at = data.find(anchor)
        while at >= 0:
            line_start = data.rfind(b"\n", 0, at) + 1
            window = data.rfind(b"\n", 0, max(line_start - 1, 0)) + 1 if line_start else 0
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            if window not in self._windows:
                self._windows[window] = [
                    (m.group("a") or m.group("b") or m.group("c") or b"", m.start(), m.end())
                    for m in _LINK_RE.finditer(data, window, end)
                ]
            found += self._windows[window]
            at = data.find(anchor, end)
        return found


def resolve_link(raw: bytes, rel: str) -> str | None:
    """The corpus-relative path a link target in file ``rel`` points at; None if not relative.

    The ``#fragment`` and ``?query`` are dropped, ``%xx`` decoded, and the rest
    resolved against ``rel``'s directory (a leading ``/`` means the corpus root).
    """
    text = raw.decode("utf-8", "replace").split("#", 1)[0].split("?", 1)[0]
    target = unquote(text)
    if not target or "://" in target or target.startswith(("mailto:", "data:")):
        return None
    joined = target.lstrip("/") if target.startswith("/") else \
        posixpath.join(posixpath.dirname(rel), target)
    return posixpath.normpath(joined)


@dataclass(frozen=True)
class DocNames:
    """Every way a text can name one corpus document. Build with `doc_names`."""

    path: str
    """The document's corpus-relative path."""
    doc_id: str | None
    title: str | None
    unique_name: bool
    """True when no other corpus file has the document's file name (then it is a name)."""
    _path: bytes = field(repr=False)
    _base: bytes = field(repr=False)
    _id: bytes | None = field(repr=False)
    _title: re.Pattern[bytes] | None = field(repr=False)
    _title_edges: tuple[bool, bool] = field(repr=False)
    _title_words: tuple[bytes, ...] = field(repr=False, default=())
    """The title's words, lowered, longest first: every occurrence of the title holds each."""

    def in_path(self, rel: str) -> bool:
        """True when the file path ``rel`` itself holds the document's id on word boundaries."""
        return self._id is not None and find_word(rel.encode("utf-8").lower(), self._id) >= 0

    def first(self, text: Text, rel: str) -> Naming | None:
        """The earliest naming of the document in ``text`` of file ``rel``, or None."""
        hits = self._scan(text, rel, every=False)
        return min(hits, key=lambda n: n.start) if hits else None

    def every(self, text: Text, rel: str) -> list[Naming]:
        """Every naming in ``text`` of file ``rel`` (spans may overlap), in no particular order."""
        return self._scan(text, rel, every=True)

    def anchors(self) -> list[bytes]:
        """POSIX extended regexes, one per kind of name: a text that names the document holds
        a match of one of them, ignoring the case of ``A-Z`` (`campaign.seal._prefilter`).

        The id; the file name (in every path, file name and unencoded relative
        link); ``%`` (a percent-encoded link); the title, its words separated
        by ``[[:space:]]+`` (in the C locale exactly `_SPACE`'s six bytes).
        """
        found = [_ere(self._base), b"%"]
        if self._id is not None:
            found.append(_ere(self._id))
        if self._title_words:
            assert self.title is not None
            words = [w.encode("utf-8").lower() for w in self.title.split()]
            found.append(b"[[:space:]]+".join(_ere(w) for w in words))
        return found

    def _scan(self, text: Text, rel: str, *, every: bool) -> list[Naming]:
        # Hot loop of the seal and of the verification: one bytes.find (or one
        # regex with a literal prefix) per kind of name, nothing per byte in Python.
        hits: list[Naming] = []
        data = text.data
        if self._id is not None and (at := find_word(text.lower, self._id)) >= 0:
            hits += self._words(text.lower, self._id, at, every)
        base, path = self._base, self._path
        at = data.find(base)
        base_found = at >= 0
        while at >= 0:  # a path occurrence always holds the file name: one search for both
            end = at + len(base)
            begin = end - len(path)
            if begin >= 0 and data.startswith(path, begin) and _path_ok(data, begin, end):
                hits.append(Naming("path", begin, end))
            elif self.unique_name and _path_ok(data, at, end):
                hits.append(Naming("file name", at, end))
            if hits and not every:
                break
            at = data.find(base, at + 1)
        if self._title is not None:
            hits += self._titles(text.lower, every)
        for anchor in (base, b"%") if base_found else (b"%",):
            if anchor == base or text.has_percent:
                hits += [Naming("relative link", start, end)
                         for raw, start, end in text.links_near(anchor)
                         if resolve_link(raw, rel) == self.path]
        return hits

    @staticmethod
    def _words(hay: bytes, name: bytes, at: int, every: bool) -> list[Naming]:
        found: list[Naming] = []
        while at >= 0:
            found.append(Naming("id", at, at + len(name)))
            if not every:
                break
            at = find_word(hay, name, start=at + 1)
        return found

    def _titles(self, hay: bytes, every: bool) -> list[Naming]:
        assert self._title is not None
        found: list[Naming] = []
        if not all(word in hay for word in self._title_words):  # fast finds rule most files out
            return found
        match = self._title.search(hay)
        while match is not None:
            if _word_ok(hay, match.start(), match.end(), *self._title_edges):
                found.append(Naming("title", match.start(), match.end()))
                if not every:
                    break
            match = self._title.search(hay, match.start() + 1)
        return found


_ERE_SPECIAL: Final = frozenset(b".[]\\()*+?{}|^$")


def _ere(literal: bytes) -> bytes:
    """``literal`` as a POSIX extended regex matching exactly it (special bytes escaped)."""
    return b"".join(b"\\" + bytes([c]) if c in _ERE_SPECIAL else bytes([c]) for c in literal)


def doc_names(path: str, *, doc_id: str | None, title: str | None, unique_name: bool) -> DocNames:
    """The names of the document at corpus path ``path`` (see the module doc).

    Raises:
        ValueError: ``title`` is given but holds no word.
    """
    base = posixpath.basename(path)
    title_re: re.Pattern[bytes] | None = None
    edges = (False, False)
    words: list[bytes] = []
    if title is not None:
        words = [w.encode("utf-8").lower() for w in title.split()]
        if not words:
            raise ValueError(f"the title of {path} holds no word")
        title_re = re.compile(_SPACE.join(re.escape(w) for w in words))
        edges = (words[0][0] in _IDENT, words[-1][-1] in _IDENT)
    return DocNames(
        path=path, doc_id=doc_id, title=title, unique_name=unique_name and base != path,
        _path=path.encode("utf-8"), _base=base.encode("utf-8"),
        _id=doc_id.encode("utf-8").lower() if doc_id else None,
        _title=title_re, _title_edges=edges,
        _title_words=tuple(sorted(set(words), key=len, reverse=True)),
    )


def states_answer(line: str, answer: str) -> bool:
    """True when ``line`` holds every word of ``answer`` on word boundaries, in any order.

    The words are ``answer.casefold().split()``, as RC-13 splits a declared
    answer; the line is case folded the same way.
    """
    hay = line.casefold().encode("utf-8")
    for word in answer.casefold().split():
        name = word.encode("utf-8")
        if find_word(hay, name, lead=name[0] in _IDENT, tail=name[-1] in _IDENT) < 0:
            return False
    return True


@dataclass(frozen=True)
class Names:
    """What the seal of one probe searches for: the probe's names and its answer keys'."""

    probe: Probe
    probe_names: DocNames
    keys: tuple[DocNames, ...]
    folds: frozenset[str]
    key_paths: frozenset[str]


@dataclass(frozen=True)
class NameCensus:
    """What naming a document depends on across the whole corpus, counted once per corpus.

    A bare file name names a document only when no other corpus file has that
    name (`doc_names`' ``unique_name``), and a document is named by its ``id:``;
    so each probe's `Names` needs every basename's count and every path's id.
    Built once per batch (`of`) and shared by every probe's `Names`.
    """

    corpus: Corpus
    bases: Mapping[str, int]
    """File name -> how many corpus files have it."""
    ids: Mapping[str, str]
    """Document path -> its ``id:``."""

    @classmethod
    def of(cls, corpus: Corpus) -> NameCensus:
        """The census of ``corpus``: one pass over its file names and documents."""
        bases: dict[str, int] = {}
        for rel in corpus.files:
            base = posixpath.basename(rel)
            bases[base] = bases.get(base, 0) + 1
        return cls(corpus, bases, {path: doc_id for doc_id, path in corpus.documents.items()})

    def names_of(self, probe_id: str) -> Names:
        """The names the seal and the verification of ``probe_id`` search for.

        Raises:
            UnknownProbe: ``probe_id`` is not on the shelf.
        """
        corpus = self.corpus
        if probe_id not in corpus.probes:
            raise UnknownProbe(probe_id, corpus.probes)
        probe = corpus.probes[probe_id]

        def of(path: str, title: str | None) -> DocNames:
            unique = self.bases.get(posixpath.basename(path), 0) <= 1
            return doc_names(path, doc_id=self.ids.get(path), title=title, unique_name=unique)

        keys = corpus.answer_keys_of(probe_id)
        return Names(probe=probe, probe_names=of(probe.path, probe.title),
                     keys=tuple(of(k, None) for k in keys),
                     folds=frozenset(corpus.folds_of(probe_id)), key_paths=frozenset(keys))


def names_for(corpus: Corpus, probe_id: str) -> Names:
    """`NameCensus.of` ``corpus``, then its `Names` of ``probe_id`` (one probe, once: ``seal``
    and ``verify_workspace``; a batch builds its census once, `campaign.seal.resolve_sessions`).

    Raises:
        UnknownProbe: ``probe_id`` is not on the shelf.
    """
    return NameCensus.of(corpus).names_of(probe_id)
