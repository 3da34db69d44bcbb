"""Seal a session's workspace (RC-09): a pure plan of removals, one executor, one verifier.

The rules, the word-boundary definition and the examples are in
docs/sealing.md; in short, for probe P:

1. Copy the corpus minus ``docs/probes/``, ``.headwater/`` and ``.git/``
   (symlinks and other non-regular files are never copied).
2. Remove every file that names P (its id, its corpus-relative path, its
   file name when no other corpus file has that name, a relative link that
   resolves to it, its title; or a path that names P's id) except a file
   that ``folds:`` declares for P (folds lie outside docs/, `load_corpus`).
3. Refuse when a declared fold states a declared answer of P.
4. Remove each answer key declared for P, and every line elsewhere that
   names one (its path, file name, a relative link to it, or its id).
5. Apply the arm (`campaign._arms`), then verify: refuse when any file
   other than a fold names P, or any file names an answer key.

Binary files (a NUL byte in the first 8 KiB, or not UTF-8) are copied
untouched, not scanned, and listed in `SealResult.binary`.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote

from recorder._digest import digest_file

from ._arms import Removal, apply_arm, check_arm
from ._corpus import HEADWATER, SHELF, split_lines
from ._errors import SealRefused, UnknownProbe, WorkspaceNotEmpty

if TYPE_CHECKING:
    from ._corpus import Corpus, Probe

BINARY_SNIFF_BYTES: Final = 8192
"""A NUL byte in this many leading bytes marks a file binary (the heuristic of git and grep)."""

_IDENT: Final = "A-Za-z0-9_"
_BEFORE: Final = rf"(?<![{_IDENT}])(?<![{_IDENT}]-)"
_AFTER: Final = rf"(?![{_IDENT}])(?!-[{_IDENT}])"
_PATH_BEFORE: Final = rf"(?<![{_IDENT}.\-])"
_PATH_AFTER: Final = rf"(?![{_IDENT}])(?![.\-][{_IDENT}])"
_LINK_RE: Final = re.compile(
    r"\]\(\s*<?(?P<a>[^)\s>]+)"  # [text](target)
    r"|^ {0,3}\[[^\]]+\]:\s*<?(?P<b>[^\s>]+)"  # [ref]: target
    r"|(?:href|src)\s*=\s*[\"'](?P<c>[^\"']+)",  # HTML
    re.MULTILINE,
)


def word_pattern(literal: str, *, ignore_case: bool = True) -> re.Pattern[str]:
    """``literal`` on word boundaries (docs/sealing.md, "Word boundaries").

    An identifier character is ``[A-Za-z0-9_]``, or a hyphen joined to one
    (``-`` followed, or preceded, by ``[A-Za-z0-9_]``). An edge of
    ``literal`` that is an identifier character must not touch one: so
    ``HW-PRB-001`` does not occur in ``HW-PRB-0012``, ``HW-PRB-001-2`` or
    ``X-HW-PRB-001``, and does occur in ``(HW-PRB-001)``, ``HW-PRB-001.``,
    ``HW-PRB-001-`` and ``docs/HW-PRB-001.md``.
    """
    body = re.escape(literal)
    before = _BEFORE if re.match(rf"[{_IDENT}]", literal) else ""
    after = _AFTER if re.search(rf"[{_IDENT}]\Z", literal) else ""
    return re.compile(before + body + after, re.IGNORECASE if ignore_case else 0)


def _title_pattern(title: str) -> re.Pattern[str]:
    words = title.split()
    before = _BEFORE if re.match(rf"[{_IDENT}]", words[0]) else ""
    after = _AFTER if re.search(rf"[{_IDENT}]\Z", words[-1]) else ""
    return re.compile(before + r"\s+".join(map(re.escape, words)) + after, re.IGNORECASE)


def _path_pattern(path: str) -> re.Pattern[str]:
    return re.compile(_PATH_BEFORE + re.escape(path) + _PATH_AFTER)


def link_targets(text: str, rel: str) -> list[tuple[str, int]]:
    """Corpus-relative targets of the relative links in ``text`` of file ``rel``, with offsets."""
    found: list[tuple[str, int]] = []
    for match in _LINK_RE.finditer(text):
        raw = match.group("a") or match.group("b") or match.group("c") or ""
        target = unquote(raw.split("#", 1)[0].split("?", 1)[0])
        if not target or "://" in target or target.startswith("mailto:"):
            continue
        joined = target.lstrip("/") if target.startswith("/") else \
            posixpath.join(posixpath.dirname(rel), target)
        found.append((posixpath.normpath(joined), match.start()))
    return found


@dataclass(frozen=True)
class Names:
    """The ways a text can name one corpus document (a probe, or an answer key)."""

    path: str
    patterns: tuple[tuple[str, re.Pattern[str]], ...]
    """(how, pattern): how is ``id``, ``path``, ``file name`` or ``title``."""
    id_pattern: re.Pattern[str] | None

    def first(self, text: str, rel: str) -> tuple[str, int] | None:
        """(how, offset) of the earliest naming in ``text`` of file ``rel``, or None."""
        hits = [(m.start(), how) for how, pat in self.patterns if (m := pat.search(text))]
        hits += [(at, "relative link") for target, at in link_targets(text, rel)
                 if target == self.path]
        if not hits:
            return None
        at, how = min(hits)
        return how, at

    def in_path(self, rel: str) -> bool:
        """True when the file path ``rel`` itself names the document's id."""
        return self.id_pattern is not None and self.id_pattern.search(rel) is not None


def names_of(corpus: Corpus, path: str, *, doc_id: str | None, title: str | None) -> Names:
    """How texts name the corpus file ``path`` (file name only when unique in the corpus)."""
    base = posixpath.basename(path)
    unique = sum(1 for p in corpus.files if posixpath.basename(p) == base) == 1
    patterns: list[tuple[str, re.Pattern[str]]] = [("path", _path_pattern(path))]
    if unique and base != path:
        patterns.append(("file name", _path_pattern(base)))
    id_pattern = word_pattern(doc_id) if doc_id else None
    if id_pattern is not None:
        patterns.append(("id", id_pattern))
    if title:
        patterns.append(("title", _title_pattern(title)))
    return Names(path=path, patterns=tuple(patterns), id_pattern=id_pattern)


def _probe_names(corpus: Corpus, probe: Probe) -> Names:
    return names_of(corpus, probe.path, doc_id=probe.id, title=probe.title)


def _key_names(corpus: Corpus, key: str) -> Names:
    doc_id = next((i for i, p in corpus.documents.items() if p == key), None)
    return names_of(corpus, key, doc_id=doc_id, title=None)


def _text(data: bytes) -> str | None:
    """The UTF-8 text of ``data``, or None for a binary file."""
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def states_answer(line: str, answer: str) -> bool:
    """True when ``line`` holds every word of ``answer`` (case folded, on word boundaries).

    The words are ``answer.casefold().split()``, as RC-13 splits a declared
    answer; their order on the line does not matter (the answer rule compares sets).
    """
    folded = line.casefold()
    return all(word_pattern(w).search(folded) for w in answer.casefold().split())


def _check_folds(corpus: Corpus, probe: Probe) -> None:
    for fold in corpus.folds_of(probe.id):
        text = _text((corpus.root / fold).read_bytes())
        if text is None:
            raise SealRefused(probe.id, fold, None, "a fold must be UTF-8 text, so the seal can "
                                                    "check that it states no answer")
        for number, line in enumerate(split_lines(text), start=1):
            for answer in probe.answers:
                if states_answer(line, answer):
                    raise SealRefused(probe.id, fold, number,
                                      f"the declared fold states the declared answer {answer!r}")


@dataclass
class SealPlan:
    """What a seal will copy, rewrite and remove; computed by `plan_seal`, nothing written."""

    copy: list[str] = field(default_factory=list)
    rewrite: dict[str, bytes] = field(default_factory=dict)
    removals: list[Removal] = field(default_factory=list)
    binary: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SealResult:
    """A sealed workspace as the session will see it."""

    manifest: dict[str, str]
    """Workspace-relative POSIX path -> ``sha256:`` digest of every file, after the arm."""
    removals: list[Removal]
    """The seal's removals in corpus path order, then the arm's."""
    binary: list[str]
    """Files copied without being scanned for names (binary)."""


def _probe(corpus: Corpus, probe_id: str) -> Probe:
    if probe_id not in corpus.probes:
        raise UnknownProbe(probe_id, corpus.probes)
    return corpus.probes[probe_id]


def _drop_key_lines(text: str, rel: str, keys: list[Names]) -> tuple[str, list[Removal]]:
    kept: list[str] = []
    removed: list[Removal] = []
    for number, line in enumerate(split_lines(text), start=1):
        hit = next(((k, h) for k in keys if (h := k.first(line, rel))), None)
        if hit is None:
            kept.append(line)
        else:
            removed.append(Removal(rel, f"line names answer key {hit[0].path} by {hit[1][0]} "
                                        "(RC-09)", number))
    return "".join(kept), removed


def plan_seal(corpus: Corpus, probe_id: str) -> SealPlan:
    """Compute the seal of ``probe_id`` (steps 1-4 of the module doc). Reads, never writes.

    Raises:
        UnknownProbe: ``probe_id`` is not on the shelf.
        SealRefused: a declared fold states a declared answer, or is binary.
    """
    probe = _probe(corpus, probe_id)
    _check_folds(corpus, probe)
    folds, keys = set(corpus.folds_of(probe_id)), set(corpus.answer_keys_of(probe_id))
    names = _probe_names(corpus, probe)
    key_names = [_key_names(corpus, k) for k in sorted(keys)]
    plan = SealPlan()
    for rel in corpus.files:
        if rel.startswith((SHELF, HEADWATER)):
            where = "the probe shelf docs/probes/" if rel.startswith(SHELF) else HEADWATER
            plan.removals.append(Removal(rel, f"{where} is never copied (RC-09)"))
            continue
        if rel in keys:
            plan.removals.append(Removal(rel, f"answer key of {probe_id} (RC-09)"))
            continue
        if rel not in folds and names.in_path(rel):
            plan.removals.append(Removal(rel, f"its path names {probe_id} by id (RC-09)"))
            continue
        text = _text((corpus.root / rel).read_bytes())
        if text is None:
            plan.binary.append(rel)
            plan.copy.append(rel)
            continue
        hit = None if rel in folds else names.first(text, rel)
        if hit is not None:
            plan.removals.append(Removal(rel, f"names {probe_id} by {hit[0]} (RC-09)",
                                         _line_of(text, hit[1])))
            continue
        kept, dropped = _drop_key_lines(text, rel, key_names)
        if dropped:
            plan.rewrite[rel] = kept.encode("utf-8")
            plan.removals.extend(dropped)
        else:
            plan.copy.append(rel)
    plan.removals.extend(Removal(rel, "not a regular file (never copied)")
                         for rel in corpus.irregular)
    return plan


def _prepare(out: Path) -> None:
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink() or any(out.iterdir()):
            raise WorkspaceNotEmpty(str(out))
    else:
        out.mkdir(parents=True)


def _execute(plan: SealPlan, corpus: Corpus, out: Path) -> None:
    """Write ``plan`` into the empty directory ``out`` (file bytes and mode bits)."""
    for rel in sorted({*plan.copy, *plan.rewrite}):
        source, target = corpus.root / rel, out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel in plan.rewrite:
            target.write_bytes(plan.rewrite[rel])
        else:
            shutil.copyfile(source, target, follow_symlinks=False)
        shutil.copymode(source, target)


def workspace_files(workspace: Path) -> list[str]:
    """Every file under ``workspace`` (symlinks not followed), relative POSIX, sorted by bytes."""
    found = [
        (Path(dirpath) / name).relative_to(workspace).as_posix()
        for dirpath, _dirs, names in os.walk(workspace)
        for name in names
    ]
    return sorted(found, key=lambda p: p.encode("utf-8"))


def verify_workspace(corpus: Corpus, probe_id: str, workspace: Path) -> list[str]:
    """The verification pass of RC-09 over a built workspace, reading every file.

    Returns:
        The binary files, which were not scanned (workspace-relative paths).

    Raises:
        UnknownProbe: ``probe_id`` is not on the shelf.
        SealRefused: a file lies under docs/probes/ or .headwater/; a file
            other than a declared fold of ``probe_id`` names the probe (in
            its text or by id in its path); any file names an answer key of
            ``probe_id``. The message names the file and the line.
    """
    probe = _probe(corpus, probe_id)
    folds = set(corpus.folds_of(probe_id))
    names = _probe_names(corpus, probe)
    key_names = [_key_names(corpus, k) for k in corpus.answer_keys_of(probe_id)]
    binary: list[str] = []
    for rel in workspace_files(workspace):
        if rel.startswith((SHELF, HEADWATER)) or (rel not in folds and names.in_path(rel)):
            raise SealRefused(probe_id, rel, None, "this path must not be in a sealed workspace")
        text = _text((workspace / rel).read_bytes())
        if text is None:
            binary.append(rel)
            continue
        hit = None if rel in folds else names.first(text, rel)
        if hit is not None:
            raise SealRefused(probe_id, rel, _line_of(text, hit[1]),
                              f"still names the probe by {hit[0]}")
        for key in key_names:
            if (hit := key.first(text, rel)) is not None:
                raise SealRefused(probe_id, rel, _line_of(text, hit[1]),
                                  f"names the answer key {key.path} by {hit[0]}")
    return binary


def seal_workspace(corpus: Corpus, *, probe_id: str, arm: str = "present",
                   out: Path) -> SealResult:
    """Build the sealed workspace of one session of ``probe_id`` under ``arm`` in ``out``.

    Plans the seal (`plan_seal`), writes it, applies the arm
    (`campaign._arms.apply_arm`), verifies the result (`verify_workspace`)
    and digests every file as the session will see it.

    Args:
        corpus: from `load_corpus`.
        probe_id: a probe of the shelf.
        arm: a member of the RC-14 arm vocabulary.
        out: the workspace directory; must not exist, or be an empty directory.

    Returns:
        The manifest (path -> digest), every removal with its reason, and the
        binary files that were not scanned.

    Raises:
        UnknownProbe: ``probe_id`` is not on the shelf (nothing written).
        ArmError, ArmUnsupported: ``arm`` is unknown or ``mcp`` (nothing written).
        WorkspaceNotEmpty: ``out`` is not new or empty (nothing written).
        SealRefused: a fold states an answer (nothing written), or the
            verification pass found a name (``out`` is left for inspection;
            no session may run in it).
    """
    check_arm(arm)
    plan = plan_seal(corpus, probe_id)
    _prepare(out)
    _execute(plan, corpus, out)
    arm_removals = apply_arm(out, arm)
    binary = verify_workspace(corpus, probe_id, out)
    manifest = {rel: digest_file(out / rel) for rel in workspace_files(out)}
    return SealResult(manifest=manifest, removals=[*plan.removals, *arm_removals], binary=binary)
