"""The plan of a seal (RC-09): one decision per corpus file, computed by reading, never writing.

The rules, the word boundaries and the examples are in docs/sealing.md; in
short, for probe P (names as `campaign.seal._names` finds them):

1. Never copy ``docs/probes/`` (the shelf), ``.headwater/``, ``.git/`` or
   anything that is not a regular file.
2. Refuse, before anything is written, a fold of P (declared in probe.yml,
   outside docs/) that states a declared answer of P.
3. Remove every file that names P (id, path, unique file name, relative
   link, title; or a path holding P's id), except a fold of P.
4. Remove each answer key of P, and every line elsewhere that names one.
5. Apply the arm (`campaign.plan._arms.arm_effect`).

(Rule 6, the verification, and the executor are in `campaign.seal._seal`.)

Rules 3-4 search a file only when the prefilter (`campaign.seal._prefilter`, one
grep for every name's anchor) lists it, or when the file is not provably the
one grep read (its `FileSignature` is not the one taken at load); a file
that holds no anchor names nothing.

`iter_seal` is the plan: it reads the corpus and yields one `FileDecision` per
corpus file, writing nothing; `campaign.seal._seal.plan_seal` collects it.
The executor consumes the same iterator, so each file is read once, judged,
and written from the very bytes that were judged. Binary files (a NUL byte in
the first 8 KiB, or not UTF-8) are searched as bytes: one that names the probe
or an answer key is removed whole (no line of it can be dropped safely), any
other is copied untouched.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from campaign._errors import SealRefused, UnknownProbe
from campaign.corpus import FileSignature, split_lines
from campaign.plan import Removal, arm_effect, is_layer_path, reads_bytes
from recorder import DIGEST_PREFIX

from . import _sealbig
from ._chunkscan import BINARY_SNIFF_BYTES, LARGE_FILE_BYTES, O_READ, read_chunks, shown_line
from ._names import DocNames, Names, Naming, Text, states_answer
from ._prefilter import GrepCheck, Prefilter
from ._rules import broken_path_rule

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

    from campaign.corpus import Corpus, Probe

_MAX_READ: Final = 0x7FFFF000
"""The most one read(2) returns on Linux."""


def read_all(fd: int, size: int) -> bytes:
    """Every byte of the regular file open as ``fd``, whose size was ``size``.

    One ``read`` when the file still has that size: a read of a regular file
    returns less than asked only at its end (read(2)), unless it hits Linux's
    cap on one read (`_MAX_READ`).
    """
    data = os.read(fd, size + 1)
    if len(data) <= size and len(data) < _MAX_READ:
        return data
    chunks = [data]
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def is_text(data: bytes) -> bool:
    """True for UTF-8 text without a NUL byte in its first `BINARY_SNIFF_BYTES` bytes."""
    if data.find(b"\0", 0, BINARY_SNIFF_BYTES) >= 0:
        return False
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _excerpt(text: Text, naming: Naming) -> str:
    start = text.data.rfind(b"\n", 0, naming.start) + 1
    end = text.data.find(b"\n", naming.start)
    return shown_line(text.data[start : end if end >= 0 else len(text.data)])


def check_folds(corpus: Corpus, probe_id: str) -> None:
    """Refuse when a declared fold of ``probe_id`` states a declared answer, or is binary.

    A line states an answer when it holds every word of it (`states_answer`).

    Raises:
        UnknownProbe: ``probe_id`` is not on the shelf.
        SealRefused: naming the fold, its line and the answer (exit 2).
    """
    if probe_id not in corpus.probes:
        raise UnknownProbe(probe_id, corpus.probes)
    probe = corpus.probes[probe_id]
    for fold in corpus.folds_of(probe_id):
        path = str(corpus.root / fold)
        if os.lstat(path).st_size > LARGE_FILE_BYTES:
            _check_large_fold(probe, fold, path)
            continue
        data = (corpus.root / fold).read_bytes()
        if not is_text(data):
            raise SealRefused(probe_id, fold, None, "a fold must be UTF-8 text, so the seal can "
                                                    "check that it states no answer")
        for number, line in enumerate(split_lines(data.decode("utf-8")), start=1):
            for answer in probe.answers:
                if states_answer(line, answer):
                    raise SealRefused(probe_id, fold, number,
                                      f"the declared fold states the declared answer {answer!r}; "
                                      "a fold names the probe and states no answer")


def _check_large_fold(probe: Probe, fold: str, path: str) -> None:
    """`check_folds` for one fold over `LARGE_FILE_BYTES`, read in chunks (`_sealbig`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        binary = _sealbig.facts(read_chunks(fd)).binary
    finally:
        os.close(fd)
    if binary:
        raise SealRefused(probe.id, fold, None, "a fold must be UTF-8 text, so the seal can "
                                                "check that it states no answer")
    stated = _sealbig.fold_statement(path, probe.answers)
    if stated is not None:
        raise SealRefused(probe.id, fold, stated[0],
                          f"the declared fold states the declared answer {stated[1]!r}; "
                          "a fold names the probe and states no answer")


@dataclass(frozen=True, slots=True)
class FileDecision:
    """What the seal does with one corpus file; ``data`` is what it writes (None: nothing)."""

    path: str
    action: Literal["copy", "rewrite", "remove"]
    data: bytes | None = field(repr=False)
    mode: int
    removals: tuple[Removal, ...] = ()
    binary: bool = False
    fold_naming: tuple[int, str, str] | None = None
    """For a fold of P that names P: (line, how, excerpt), so ``--explain`` can show it."""
    digest: str | None = None
    """``sha256:`` digest of ``data`` (computed here, on the planning thread)."""
    source: str | None = field(default=None, repr=False)
    """A large file (`campaign.seal._sealbig`): ``data`` is None and the executor copies this host
    path chunk by chunk, without the byte ranges ``drops``; ``digest`` is what it must give."""
    drops: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    """Byte ranges ``[start, end)`` of ``source`` left out (answer keys' lines)."""


def _naming_removal(rel: str, text: Text, naming: Naming, what: str) -> Removal:
    return Removal(rel, f"names {what} by {naming.how}", text.line_of(naming.start),
                   excerpt=_excerpt(text, naming))


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    at = data.find(b"\n")
    while 0 <= at < len(data) - 1:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    return starts


def _drop_key_lines(rel: str, text: Text,
                    keys: tuple[DocNames, ...]) -> tuple[bytes, list[Removal]]:
    """``text`` without every line an answer key's name touches; one `Removal` per line."""
    data = text.data
    spans = sorted(((n.start, n.end), k.path, n) for k in keys for n in k.every(text, rel))
    if not spans:
        return data, []
    doomed: dict[int, Removal] = {}
    for (start, end), key, naming in spans:
        first, last = text.line_of(start), text.line_of(max(end - 1, start))
        for number in range(first, last + 1):
            doomed.setdefault(number, Removal(
                rel, f"the line names answer key {key} by {naming.how}", number,
                kind="line", excerpt=_excerpt(text, naming)))
    starts = [*_line_starts(data), len(data)]
    kept = b"".join(data[starts[i] : starts[i + 1]]
                    for i in range(len(starts) - 1) if i + 1 not in doomed)
    return kept, [doomed[n] for n in sorted(doomed)]


def _judge(rel: str, data: bytes, names: Names) -> tuple[bytes | None, list[Removal],
                                                         tuple[int, str, str] | None]:
    """RC-09 rules 3-4 for one text file: (bytes to write or None, removals, fold naming)."""
    text = Text(data)
    pid = names.probe.id
    if rel in names.folds:
        hit = names.probe_names.first(text, rel)
        fold = None if hit is None else (text.line_of(hit.start), hit.how, _excerpt(text, hit))
    else:
        hit = names.probe_names.first(text, rel)
        if hit is not None:
            return None, [_naming_removal(rel, text, hit, pid)], None
        fold = None
    kept, dropped = _drop_key_lines(rel, text, names.keys)
    if dropped and rel not in names.folds:
        again = Text(kept)
        if (hit := names.probe_names.first(again, rel)) is not None:
            return None, [Removal(rel, f"names {pid} by {hit.how} once the answer key's lines "
                                       "are gone", again.line_of(hit.start))], None
    return kept, dropped, fold


def _binary_naming(rel: str, data: bytes, names: Names) -> Removal | None:
    """RC-09 for a binary or non-UTF-8 file: searched as bytes, removed whole when it names.

    A line of such a file cannot be dropped safely, so a file that names the
    probe or an answer key goes whole; one that names neither is copied as is.
    """
    text = Text(data)
    hit = names.probe_names.first(text, rel)
    what = f"the probe {names.probe.id}"
    if hit is None:
        for key in names.keys:
            if (hit := key.first(text, rel)) is not None:
                what = f"the answer key {key.path}"
                break
    if hit is None:
        return None
    return Removal(rel, f"names {what} by {hit.how}; a binary or non-UTF-8 file is searched "
                        "as bytes and removed whole", text.line_of(hit.start))


def _read(path: str) -> tuple[bytes, int, FileSignature]:
    fd = os.open(path, O_READ)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is no longer a regular file")
        data = read_all(fd, info.st_size)
        # After the read: a write between the first fstat and the read shows in ctime here.
        return data, stat.S_IMODE(info.st_mode), FileSignature.of(os.fstat(fd))
    finally:
        os.close(fd)


def _corpus_changed(probe_id: str, rel: str, why: str) -> SealRefused:
    return SealRefused(probe_id, rel, None, f"the corpus changed since it was loaded ({why}); "
                                            "the plan's tree no longer describes it")


def iter_seal(corpus: Corpus, names: Names, arm: str,
              grep: GrepCheck) -> Generator[FileDecision, None, None]:
    """The seal of ``names``' probe under ``arm``, one decision per corpus file. Reads, never
    writes.

    The probe, the arm and the folds were checked when the session was resolved
    (`campaign.seal.resolve_sessions`); the files are read one at a time as the
    iterator is consumed (one file's bytes in memory at a time). ``grep``: the
    batch's `GrepCheck`, for the prefilter (`campaign.seal._prefilter`).

    Raises (while iterating):
        ArmError: a settings file the arm edits is not JSON.
        SealRefused: a corpus file is gone, no longer regular, or changed since loading.
    """
    return _decisions(corpus, names, arm, grep)


def _decisions(corpus: Corpus, names: Names, arm: str,
               grep: GrepCheck) -> Generator[FileDecision, None, None]:
    # The prefilter's grep runs on while the first files are searched here in full.
    with Prefilter(corpus, names, grep) as prefilter:
        yield from _decide(corpus, names, arm, prefilter)


def _decide(corpus: Corpus, names: Names, arm: str,
            prefilter: Prefilter) -> Iterator[FileDecision]:
    probe_id = names.probe.id
    root = str(corpus.root)
    for rel in corpus.files:
        gone = _without_reading(rel, names)
        if gone is not None:
            yield FileDecision(rel, "remove", None, 0, (gone,))
            continue
        # Asked *before* the read: grep had finished by then, so a file unchanged from the
        # load to the fstat after our read is the file grep read (campaign.seal._prefilter).
        maybe = prefilter.listed()
        if not reads_bytes(arm, rel) and _size(probe_id, rel, root) > LARGE_FILE_BYTES:
            yield _decide_large(corpus, names, arm, rel, os.path.join(root, rel), maybe)
            continue
        try:
            data, mode, signature = _read(os.path.join(root, rel))
        except OSError as exc:
            raise _corpus_changed(probe_id, rel, str(exc)) from exc
        binary = not is_text(data)
        new: bytes | None = data
        removals: list[Removal] = []
        fold = None
        quiet = corpus.signatures.get(rel) == signature  # the bytes the load (and grep) read
        if quiet and maybe is not None and rel not in maybe:
            pass  # holds no anchor of any name, so names nothing (campaign.seal._prefilter)
        elif not binary:
            new, removals, fold = _judge(rel, data, names)
        elif (gone := _binary_naming(rel, data, names)) is not None:
            new, removals = None, [gone]
        if new is not None and is_layer_path(rel):
            effect = arm_effect(arm, rel, new)
            if effect.action != "keep":
                new = effect.data
                removals.append(Removal(rel, effect.reason,
                                        kind="edit" if effect.action == "rewrite" else "file"))
        action: Literal["copy", "rewrite", "remove"] = (
            "remove" if new is None else "copy" if new is data else "rewrite")
        if new is None:
            digest = None
        elif action == "copy" and quiet:
            digest = corpus.files[rel]  # unchanged since loading (FileSignature): no rehash
        else:
            digest = DIGEST_PREFIX + hashlib.sha256(new).hexdigest()
        if action == "copy" and digest != corpus.files[rel]:
            raise _corpus_changed(probe_id, rel, "its digest is no longer the tree's")
        yield FileDecision(rel, action, new, mode, tuple(removals), binary, fold, digest)
    for rel in corpus.irregular:
        gone = Removal(rel, "not a regular file (a symlink or special file is never copied)")
        yield FileDecision(rel, "remove", None, 0, (gone,))


def _size(probe_id: str, rel: str, root: str) -> int:
    try:
        return os.lstat(os.path.join(root, rel)).st_size
    except OSError as exc:
        raise _corpus_changed(probe_id, rel, str(exc)) from exc


def _decide_large(corpus: Corpus, names: Names, arm: str, rel: str, path: str,
                  maybe: frozenset[str] | None) -> FileDecision:
    """The decision on one file over `LARGE_FILE_BYTES`, read in chunks (`campaign.seal._sealbig`).

    A layer file here is one whose arm effect follows from its path (`reads_bytes`): kept,
    or removed without a read.
    """
    probe_id = names.probe.id
    effect = arm_effect(arm, rel, b"") if is_layer_path(rel) else None
    if effect is not None and effect.action == "remove":
        return FileDecision(rel, "remove", None, 0, (Removal(rel, effect.reason),))
    try:
        src = _sealbig.Open(path)
        try:
            got = _sealbig.facts(src.chunks())
            quiet = corpus.signatures.get(rel) == src.signature()  # after the read: see _read
            judged = (_sealbig.Judged() if quiet and maybe is not None and rel not in maybe
                      else _sealbig.judge(rel, src, names, got.binary))
        finally:
            src.close()
    except OSError as exc:
        raise _corpus_changed(probe_id, rel, str(exc)) from exc
    if judged.remove:
        return FileDecision(rel, "remove", None, 0, tuple(judged.remove), got.binary)
    if judged.drops:
        return FileDecision(rel, "rewrite", None, src.mode, tuple(judged.lines), got.binary,
                            judged.fold, judged.digest, source=path, drops=tuple(judged.drops))
    if got.digest != corpus.files[rel]:
        raise _corpus_changed(probe_id, rel, "its digest is no longer the tree's")
    return FileDecision(rel, "copy", None, src.mode, (), got.binary, judged.fold, got.digest,
                        source=path)


def _without_reading(rel: str, names: Names) -> Removal | None:
    """Rules 1 and 3-4 by path alone (`campaign.seal._rules`): the removal, or None."""
    rule = broken_path_rule(rel, names)
    return None if rule is None else Removal(rel, rule.removal.format(probe=names.probe.id))


@dataclass
class SealPlan:
    """The whole plan of one seal, without the bytes (for ``--explain`` and tests)."""

    decisions: list[FileDecision] = field(default_factory=list)

    @property
    def removals(self) -> list[Removal]:
        """Every removal, in corpus path order."""
        return [r for d in self.decisions for r in d.removals]
