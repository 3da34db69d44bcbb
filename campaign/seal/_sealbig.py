"""The seal of a large file (over `LARGE_FILE_BYTES`): RC-09 in chunks, never the file whole.

The same rules as `campaign.seal._sealplan` for every other file (docs/sealing.md,
"Large files"), read in `CHUNK_BYTES` chunks and searched in overlapping
windows (`campaign.seal._chunkscan`): the plan passes over the file once for its
digest and kind (binary: a NUL byte in its first 8 KiB or not UTF-8) and,
unless the prefilter proves it names nothing, once more for the names; a file
that loses answer-key lines is searched once more as it will be written. The
executor then copies it chunk by chunk (skipping the dropped lines), and the
verifier reads it back the same way. A file the arms act on (`is_layer_path`)
is never large here: the arms read it whole (such files are small).
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Final

from campaign._errors import SealRefused
from campaign.corpus import FileSignature
from campaign.plan import Removal
from recorder import DIGEST_PREFIX

from ._chunkscan import (
    BINARY_SNIFF_BYTES,
    O_READ,
    Found,
    read_chunks,
    scan,
    shown_line,
    skip_ranges,
)
from ._names import DocNames, Naming, Text, find_word

if TYPE_CHECKING:
    from ._names import Names

_IDENT_BYTES: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
"""Identifier bytes (`campaign.seal._names`): a word's edge of one of these needs a boundary."""


class Facts:
    """What one pass over a file's bytes tells: its digest, and whether it is binary."""

    __slots__ = ("binary", "digest", "size")

    def __init__(self, digest: str, binary: bool, size: int) -> None:
        self.digest = digest
        """``sha256:`` digest of the bytes read."""
        self.binary = binary
        """A NUL byte in the first `BINARY_SNIFF_BYTES`, or not UTF-8 (as `is_text`)."""
        self.size = size
        """Bytes read."""


def facts(chunks: Iterable[bytes]) -> Facts:
    """The digest and kind of the bytes ``chunks`` yields, in one pass (bounded memory)."""
    h = hashlib.sha256()
    head = b""
    utf8 = True
    decoder = codecs.getincrementaldecoder("utf-8")()
    size = 0
    for chunk in chunks:
        h.update(chunk)
        if len(head) < BINARY_SNIFF_BYTES:
            head += chunk[: BINARY_SNIFF_BYTES - len(head)]
        size += len(chunk)
        if utf8 and not (chunk.isascii() and decoder.getstate()[0] == b""):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError:
                utf8 = False
    if utf8:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            utf8 = False
    return Facts(DIGEST_PREFIX + h.hexdigest(), b"\0" in head or not utf8, size)


def _search(docs: tuple[DocNames, ...], rel: str) -> Callable[[Text], list[Naming]]:
    """A window search over several documents; each naming's ``how`` carries its index."""
    def search(text: Text) -> list[Naming]:
        return [Naming(f"{i}:{n.how}", n.start, n.end)
                for i, doc in enumerate(docs) for n in doc.every(text, rel)]
    return search


def _longest(docs: tuple[DocNames, ...]) -> int:
    return max((len(d.path.encode("utf-8")) + len((d.title or "").encode("utf-8"))
                + len(d.doc_id or "") for d in docs), default=0)


def find(chunks: Iterable[bytes], docs: tuple[DocNames, ...], rel: str, *,
         first: bool) -> list[tuple[int, Found]]:
    """(index into ``docs``, occurrence) of the documents' namings, in file order.

    ``first``: only those of the first window that holds any (the earliest is first).
    """
    found: list[tuple[int, Found]] = []
    for hit in scan(chunks, _search(docs, rel), longest=_longest(docs), first=first):
        index, how = hit.naming.how.split(":", 1)
        hit.naming = Naming(how, hit.naming.start, hit.naming.end)
        found.append((int(index), hit))
    return found


class Open:
    """A large corpus file open for the plan: its descriptor, mode, and signature after reading."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, O_READ)
        info = os.fstat(self.fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(self.fd)
            raise OSError(f"{path} is no longer a regular file")
        self.mode = stat.S_IMODE(info.st_mode)

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes from its start, a chunk at a time."""
        return read_chunks(self.fd)

    def signature(self) -> FileSignature:
        """The file's `FileSignature` now (taken after a read, as `_sealplan._read`)."""
        return FileSignature.of(os.fstat(self.fd))

    def close(self) -> None:
        """Close the descriptor."""
        os.close(self.fd)


class Judged:
    """The plan of one large text or binary file: what to write, and why."""

    def __init__(self) -> None:
        self.remove: list[Removal] = []
        """Non-empty: the whole file goes (its first entry says why)."""
        self.drops: list[tuple[int, int]] = []
        """Byte ranges ``[start, end)`` of the lines that go (answer keys' lines)."""
        self.lines: list[Removal] = []
        """One `Removal` per dropped line."""
        self.fold: tuple[int, str, str] | None = None
        """A fold of the probe that names it: (line, how, excerpt)."""
        self.digest: str | None = None
        """The digest of the bytes to write when lines go."""


def judge(rel: str, src: Open, names: Names, binary: bool) -> Judged:
    """RC-09 rules 3-4 for one large file, as `campaign.seal._sealplan._judge` (text) or
    `_binary_naming` (binary) decide them for a small one.

    Raises:
        OSError: the file cannot be read.
    """
    out = Judged()
    pid = names.probe.id
    probe = (names.probe_names,)
    hits = find(src.chunks(), probe, rel, first=True)
    if hits:
        _, hit = hits[0]
        if rel in names.folds and not binary:
            out.fold = (hit.first_line, hit.naming.how, shown_line(hit.excerpt))
        elif binary:
            out.remove.append(_binary_removal(rel, hit, f"the probe {pid}"))
            return out
        elif rel not in names.folds:
            out.remove.append(Removal(rel, f"names {pid} by {hit.naming.how}",
                                      hit.first_line, excerpt=shown_line(hit.excerpt)))
            return out
    if not names.keys:
        return out
    keyed = find(src.chunks(), names.keys, rel, first=binary)
    if binary:
        if keyed:
            index, hit = keyed[0]
            out.remove.append(_binary_removal(rel, hit, f"the answer key "
                                                        f"{names.keys[index].path}"))
        return out
    if keyed:
        _drop_lines(rel, src, names, keyed, out)
    return out


def _binary_removal(rel: str, hit: Found, what: str) -> Removal:
    return Removal(rel, f"names {what} by {hit.naming.how}; a binary or non-UTF-8 file is "
                        "searched as bytes and removed whole", hit.first_line)


def _drop_lines(rel: str, src: Open, names: Names, keyed: list[tuple[int, Found]],
                out: Judged) -> None:
    """The lines the answer keys' namings touch: their byte ranges and one Removal each."""
    doomed: dict[int, Removal] = {}
    for index, hit in keyed:
        for number in range(hit.first_line, hit.last_line + 1):
            doomed.setdefault(number, Removal(
                rel, f"the line names answer key {names.keys[index].path} by {hit.naming.how}",
                number, kind="line", excerpt=shown_line(hit.excerpt)))
    out.drops = _line_ranges(src.chunks(), sorted(doomed))
    out.lines = [doomed[n] for n in sorted(doomed)]
    if rel not in names.folds:
        again = find(skip_ranges(src.chunks(), out.drops), (names.probe_names,), rel,
                     first=True)
        if again:
            _, hit = again[0]
            out.remove = [Removal(rel, f"names {names.probe.id} by {hit.naming.how} once the "
                                       "answer key's lines are gone", hit.first_line)]
            return
    out.digest = facts(skip_ranges(src.chunks(), out.drops)).digest


def _line_ranges(chunks: Iterable[bytes], numbers: list[int]) -> list[tuple[int, int]]:
    """The byte ranges ``[start, end)`` of the 1-based lines ``numbers`` (sorted), merged.

    A line ends after its ``\\n`` (the last line may have none). One pass, a chunk at a time.
    """
    ranges: list[tuple[int, int]] = []
    wanted = iter(numbers)
    target = next(wanted, None)
    line = 1
    line_start = 0
    at = 0
    for chunk in chunks:
        pos = 0
        while target is not None:
            nl = chunk.find(b"\n", pos)
            if nl < 0:
                break
            if line == target:
                end = at + nl + 1
                if ranges and ranges[-1][1] == line_start:
                    ranges[-1] = (ranges[-1][0], end)
                else:
                    ranges.append((line_start, end))
                target = next(wanted, None)
            line += 1
            line_start = at + nl + 1
            pos = nl + 1
        at += len(chunk)
        if target is None:
            break
    if target is not None and line == target and line_start < at:
        ranges.append((line_start, at))
    return ranges


def write(target: str, source: str, drops: list[tuple[int, int]], mode: int,
          open_flags: int, exact: bool) -> str:
    """Copy ``source`` to the new file ``target`` without the bytes of ``drops``; its digest.

    ``open_flags``/``exact``: as `campaign.seal._seal._write` creates a file (never
    through a link, never over a file; ``mode`` given at open when ``exact``).

    Raises:
        OSError: either file cannot be opened, read or written.
    """
    src = os.open(source, O_READ)
    try:
        fd = os.open(target, open_flags, mode if exact else 0o600)
        try:
            h = hashlib.sha256()
            for piece in skip_ranges(read_chunks(src), drops):
                h.update(piece)
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view):]
            if not exact:
                os.fchmod(fd, mode)
            return DIGEST_PREFIX + h.hexdigest()
        finally:
            os.close(fd)
    finally:
        os.close(src)


def verify(rel: str, path: str, names: Names, *, search: bool) -> Facts:
    """Rule 6 for a large workspace file: read it back in chunks, digest it, and (``search``)
    refuse it when it names the probe (a fold excepted) or an answer key.

    Raises:
        SealRefused: as `campaign.seal._seal._check_text`, naming the file and line.
        OSError: the file cannot be read.
    """
    fd = os.open(path, O_READ)
    try:
        got = facts(read_chunks(fd))
        if not search:
            return got
        pid = names.probe.id
        if rel not in names.folds:
            hits = find(read_chunks(fd), (names.probe_names,), rel, first=True)
            if hits:
                _, hit = hits[0]
                raise SealRefused(pid, rel, hit.first_line,
                                  f"still names the probe by {hit.naming.how}")
        if names.keys:
            keyed = find(read_chunks(fd), names.keys, rel, first=True)
            if keyed:
                index, hit = keyed[0]
                raise SealRefused(pid, rel, hit.first_line, f"names the answer key "
                                  f"{names.keys[index].path} by {hit.naming.how}")
        return got
    finally:
        os.close(fd)


LINE_WINDOW_CHARS: Final = 1 << 20
"""A fold's line longer than this (characters) is searched in windows of it, never whole."""


def _words_on_line(window: str, words: set[tuple[bytes, bool, bool]], *, first: bool,
                   last: bool) -> set[tuple[bytes, bool, bool]]:
    """The ``words`` (case folded, with their edges) that occur in ``window`` on word
    boundaries whose two bytes either side lie in it (or at the line's edges)."""
    hay = window.casefold().encode("utf-8")
    found: set[tuple[bytes, bool, bool]] = set()
    for word in words:
        name, lead, tail = word
        at = find_word(hay, name, lead=lead, tail=tail)
        while at >= 0:
            if (first or at >= 2) and (last or at + len(name) + 2 <= len(hay)):
                found.add(word)
                break
            at = find_word(hay, name, lead=lead, tail=tail, start=at + 1)
    return found


def fold_statement(path: str, answers: tuple[str, ...]) -> tuple[int, str] | None:
    """(line, answer) of the first line of the large fold ``path`` that states an answer
    (holds every word of it on word boundaries, in any order: `states_answer`), or None.

    Read in chunks; a line longer than `LINE_WINDOW_CHARS` is searched in windows that
    overlap by the longest word + 4 (`campaign.seal._chunkscan`'s rule, on the folded text).
    The file must be UTF-8 (the caller checks it first, with `facts`).

    Raises:
        OSError: the file cannot be read.
        UnicodeDecodeError: it is not UTF-8.
    """
    wanted = {answer: {(w.encode("utf-8"), w.encode("utf-8")[0] in _IDENT_BYTES,
                        w.encode("utf-8")[-1] in _IDENT_BYTES)
                       for w in answer.casefold().split()} for answer in answers}
    every: set[tuple[bytes, bool, bool]] = set().union(*wanted.values())
    overlap = max((len(w[0]) for w in every), default=0) + 4
    line, current, first = 1, "", True
    seen: set[tuple[bytes, bool, bool]] = set()

    def states() -> str | None:
        return next((a for a, ws in wanted.items() if ws and ws <= seen), None)

    fd = os.open(path, O_READ)
    try:
        for piece in _decoded(fd):
            parts = piece.split("\n")
            for i, part in enumerate(parts):
                current += part
                ends = i < len(parts) - 1
                if ends or len(current) > LINE_WINDOW_CHARS:
                    seen |= _words_on_line(current, every, first=first, last=ends)
                    if ends:
                        if (answer := states()) is not None:
                            return line, answer
                        line, current, seen, first = line + 1, "", set(), True
                    else:
                        current, first = current[-overlap:], False
    finally:
        os.close(fd)
    seen |= _words_on_line(current, every, first=first, last=True)
    answer = states()
    return (line, answer) if answer is not None else None


def _decoded(fd: int) -> Iterator[str]:
    """The open file's text, a chunk at a time (strict UTF-8)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    for chunk in read_chunks(fd):
        yield decoder.decode(chunk)
    yield decoder.decode(b"", final=True)
