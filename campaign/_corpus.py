"""Load a corpus: ``.headwater/probe.yml``, the probe shelf and every document's id.

Layout (DESIGN.md, "Plan and corpus layout the built-in planner reads"; the
exact rules are in docs/plan.md):

* ``.headwater/probe.yml`` - a closed mapping (`ProbeConfig`): a typo is an error.
* ``docs/probes/*.md`` - one probe each: front matter ``id``, ``title``,
  ``answers``, ``examines``, and a ``## Task`` section (`task_of`).
* every other ``docs/**/*.md`` - a document with ``id:`` in its front matter.

Everything is read once, here; `Corpus` holds the digest of every regular
file (the ``tree`` entries), so plans and seals never walk the tree again.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Final, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from recorder._digest import digest_file, tree_digest
from recorder._vocab import Arm as Arm
from recorder._vocab import Tier as Tier

from ._errors import CorpusError

PROBE_YML: Final = ".headwater/probe.yml"
DEFAULT_LOCK: Final = ".headwater/taxonomy.lock"
NO_LOCK_SOURCE: Final = "probe.yml (no lock file)"
"""``lock_source`` of a corpus without a lock file: ``lock`` is then probe.yml's digest."""
SHELF: Final = "docs/probes/"
DOCS: Final = "docs/"
HEADWATER: Final = ".headwater/"

ID_PATTERN: Final = r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$"
ID_RE: Final = re.compile(ID_PATTERN.replace("$", r"\Z"))
"""A corpus id: starts and ends with a letter, digit (or ``_`` at the end), so its
word boundaries (docs/sealing.md) are well defined."""


_LINE_RE: Final = re.compile(r"[^\n]*\n|[^\n]+\Z")
_FENCE_RE: Final = re.compile(r"\A {0,3}(`{3,}|~{3,})")
_HEADING_RE: Final = re.compile(r"\A {0,3}(#{1,6})(?:[ \t]|\Z)")
_TASK_HEADING_RE: Final = re.compile(r"\A {0,3}##[ \t]+Task[ \t]*(?:#+[ \t]*)?\Z")


class TaskSectionError(ValueError):
    """A probe body without exactly one non-empty ``## Task`` section."""


def split_lines(text: str) -> list[str]:
    """Lines ending at ``\n`` only, each with its terminator (the last may have none)."""
    return _LINE_RE.findall(text)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Split ``text`` into (front matter YAML, body); (None, text) when there is none.

    Front matter is the lines between a first line ``---`` and the next line
    ``---`` (a trailing ``\r`` allowed on both).
    """
    lines = split_lines(text)
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None, text


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(index, level, content) of each ATX heading outside fenced code blocks."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        content = line.rstrip("\r\n")
        opener = _FENCE_RE.match(content)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and content.strip() == opener.group(1):
                fence = None
            continue
        if opener:
            fence = opener.group(1)
        elif heading := _HEADING_RE.match(content):
            found.append((i, len(heading.group(1)), content))
    return found


def task_of(body: str) -> str:
    """The body of the ``## Task`` section, word for word (RC-04; docs/plan.md).

    The section runs from the line after the heading ``## Task`` to the next
    ATX heading of level 1 or 2 outside a fenced code block, or the end of
    the file. Blank (empty or white-space-only) lines at its start and end are
    dropped, and the line terminator of its last line; every other byte is
    kept (inner blank lines, indentation, trailing spaces, ``\r``, ``###``
    sub-headings).

    Raises:
        TaskSectionError: no ``## Task`` heading, more than one, or an empty section.
    """
    lines = split_lines(body)
    heads = _headings(lines)
    starts = [i for i, level, content in heads if level == 2 and _TASK_HEADING_RE.match(content)]
    if len(starts) != 1:
        raise TaskSectionError(
            "no `## Task` section (the prompt of the probe, RC-04)" if not starts
            else f"{len(starts)} `## Task` sections; a probe has exactly one"
        )
    end = next((i for i, level, _ in heads if i > starts[0] and level <= 2), len(lines))
    section = lines[starts[0] + 1 : end]
    while section and not section[0].strip():
        section.pop(0)
    while section and not section[-1].strip():
        section.pop()
    if not section:
        raise TaskSectionError("the `## Task` section is empty")
    task = "".join(section)
    return task.removesuffix("\n").removesuffix("\r") if task.endswith("\n") else task


def _check_relpath(value: str) -> str:
    pure = PurePosixPath(value)
    if (not value or pure.is_absolute() or "\\" in value or pure.as_posix() != value
            or any(part in {".", ".."} for part in pure.parts)):
        raise ValueError(f"{value!r} is not a normalised corpus-relative POSIX path")
    return value


RelPath = Annotated[str, Field(min_length=1)]


class _Closed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class TierConfig(_Closed):
    """One tier of ``probe.yml``: which arms, how many repetitions."""

    arms: tuple[Arm, ...] = Field(min_length=1)
    """Arms run for every probe, in this order; no arm twice."""
    repetitions: int = Field(ge=1, strict=True)
    """Sessions per probe and arm."""

    @field_validator("arms")
    @classmethod
    def _unique(cls, arms: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(arms)) != len(arms):
            raise ValueError(f"an arm is listed twice: {list(arms)}")
        return arms


class ProbeConfig(_Closed):
    """``.headwater/probe.yml``, closed: an unknown key refuses the corpus."""

    lock: RelPath | None = None
    """The taxonomy lock file; absent: ``.headwater/taxonomy.lock`` when it exists."""
    tiers: dict[Tier, TierConfig] = Field(min_length=1)
    tools: tuple[str, ...]
    """The one ``--allowedTools`` list of every arm (RC-04)."""
    model: str = Field(min_length=1, strict=True)
    checker: str | None = None
    """The findings checker command, run over the workspace (RC-11); optional."""
    folds: dict[str, tuple[RelPath, ...]] = Field(default_factory=dict)
    """Probe id -> files outside docs/ that name the probe and are kept (RC-09)."""
    answer_keys: dict[str, tuple[RelPath, ...]] = Field(default_factory=dict)
    """Probe id -> documents answering the probe, removed with every line naming them."""

    @field_validator("lock")
    @classmethod
    def _lock_path(cls, value: str | None) -> str | None:
        return None if value is None else _check_relpath(value)

    @field_validator("folds", "answer_keys")
    @classmethod
    def _paths(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for paths in value.values():
            for path in paths:
                _check_relpath(path)
        return value


class _ProbeFront(BaseModel):
    """A probe's front matter. Other keys (taxonomy fields) are allowed and ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str = Field(strict=True, pattern=ID_PATTERN)
    title: str = Field(strict=True, min_length=1)
    answers: tuple[Annotated[str, Field(strict=True, pattern=r"\S")], ...]
    examines: tuple[RelPath, ...]

    @field_validator("examines")
    @classmethod
    def _paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for path in value:
            _check_relpath(path)
        return value


@dataclass(frozen=True, slots=True)
class Probe:
    """One probe of the shelf ``docs/probes/``."""

    id: str
    title: str
    path: str
    """Corpus-relative POSIX path of the probe file."""
    digest: str
    task: str
    """The body of ``## Task``, word for word (`task_of`); the whole first turn (RC-04)."""
    answers: tuple[str, ...]
    """The declared answer set (may be empty; RC-13)."""
    examines: tuple[str, ...]
    """Corpus-relative paths of the documents the probe points at; each exists."""


QUIET_S: Final = 2.0
"""A file whose status last changed at least this many seconds before loading began gets a
`FileSignature` (far above any filesystem's timestamp granularity)."""


class FileSignature(NamedTuple):
    """What ``stat`` says of a regular file: if it is the same later, the bytes are too.

    Rule: any write to a file sets its ``ctime`` to the current time (inode(7)),
    and no call sets ``ctime`` back. A signature is taken only for a file whose
    ``ctime`` was at least `QUIET_S` older than the start of loading, and
    *before* the file is read for its digest: a write during or after the
    read then gives a ``ctime`` no earlier than the start of loading, hence a
    different signature, whatever the timestamp granularity.
    """

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileSignature:
        """The signature in ``st`` (from ``stat``, ``lstat`` or ``fstat``)."""
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    @classmethod
    def quiet(cls, path: Path, started_ns: int) -> FileSignature | None:
        """``path``'s signature if its ``ctime`` is `QUIET_S` older than ``started_ns``.

        ``started_ns``: when loading began, ``time.time_ns()``. None for a file
        changed more recently (its digest is then never trusted without a read).

        Raises:
            OSError: ``path`` cannot be stat'ed.
        """
        st = os.lstat(path)
        if st.st_ctime_ns > started_ns - int(QUIET_S * 1e9):
            return None
        return cls.of(st)


@dataclass(frozen=True, slots=True)
class Corpus:
    """A loaded corpus. Built only by `load_corpus`."""

    root: Path
    config: ProbeConfig
    files: Mapping[str, str]
    """Every regular file except under ``.git/``: relpath -> digest, sorted by path bytes."""
    irregular: tuple[str, ...]
    """Symlinks and other non-regular entries: outside the tree, never copied by a seal."""
    probes: Mapping[str, Probe]
    """Probe id -> probe, sorted by id."""
    documents: Mapping[str, str]
    """Every document's ``id:`` (probes included) -> its corpus-relative path."""
    tree: str
    lock: str
    lock_source: str
    """The lock file's path, or `NO_LOCK_SOURCE`."""
    signatures: Mapping[str, FileSignature] = field(default_factory=dict)
    """relpath -> the file's `FileSignature` when loaded, for files then unchanged for at
    least `QUIET_S` (`FileSignature.still`); the seal may trust their digest without
    hashing them again while the signature holds."""
    directories: Mapping[str, FileSignature] | None = None
    """relpath ("" the root) -> each directory's `FileSignature` at load, taken before the
    files'; None when a directory changed within `QUIET_S` of loading (`campaign._prefilter`
    is then not used)."""

    @property
    def ids(self) -> frozenset[str]:
        """Every ``id:`` of every corpus document, probes included (RC-11 ``cites``)."""
        return frozenset(self.documents)

    def folds_of(self, probe_id: str) -> tuple[str, ...]:
        """Files declared as folds of ``probe_id`` (may be empty)."""
        return self.config.folds.get(probe_id, ())

    def answer_keys_of(self, probe_id: str) -> tuple[str, ...]:
        """Documents declared as answer keys of ``probe_id`` (may be empty)."""
        return self.config.answer_keys.get(probe_id, ())


def _walk(root: Path) -> tuple[dict[str, Path], list[str], list[str]]:
    """Regular files (not following symlinks), other entries, and directories ("" the root),
    except top-level ``.git``."""
    regular: dict[str, Path] = {}
    irregular: list[str] = []
    directories: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        directories.append("" if here == root else here.relative_to(root).as_posix())
        if here == root and ".git" in dirnames:
            dirnames.remove(".git")
        for name in [*filenames, *(d for d in dirnames if (here / d).is_symlink())]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if rel == ".git":
                continue
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                raise CorpusError(rel, "the file name is not UTF-8") from None
            if stat.S_ISREG(path.lstat().st_mode):
                regular[rel] = path
            else:
                irregular.append(rel)
    return regular, sorted(irregular), directories


def _quiet_directories(root: Path, directories: list[str],
                       started_ns: int) -> dict[str, FileSignature] | None:
    """Each directory's signature, or None when one changed within `QUIET_S` of loading.

    Taken before any file's signature: a directory entry renamed, added or
    removed later changes its directory's ctime, so a path that resolves the
    same way at load and later resolves to the same file (`campaign._prefilter`).
    """
    found: dict[str, FileSignature] = {}
    for rel in directories:
        signature = FileSignature.quiet(root / rel if rel else root, started_ns)
        if signature is None:
            return None
        found[rel] = signature
    return found


def _yaml(text: str, where: str) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise CorpusError(where, f"invalid YAML: {' '.join(str(exc).split())}") from exc


def describe_validation(exc: ValidationError) -> str:
    """One line per pydantic error, naming the key (``a.b.0``) and what is wrong."""
    parts: list[str] = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown key {loc!r} (not in the closed key set; a typo?)")
        elif err["type"] == "missing":
            parts.append(f"missing key {loc!r}")
        else:
            parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _read_text(path: Path, rel: str) -> str:
    """The file's text, byte for byte (no newline translation: a task keeps its ``\\r\\n``)."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(rel, f"not UTF-8 text: {exc}") from exc


def _front(path: Path, rel: str) -> tuple[dict[str, Any], str]:
    front, body = split_front_matter(_read_text(path, rel))
    if front is None:
        raise CorpusError(rel, "no front matter (a `---` line, YAML, a `---` line); "
                               "every document under docs/ has an `id:`")
    data = _yaml(front, rel)
    if not isinstance(data, dict):
        raise CorpusError(rel, "front matter is not a YAML mapping")
    return data, body


def _load_config(files: Mapping[str, Path]) -> ProbeConfig:
    if PROBE_YML not in files:
        raise CorpusError(PROBE_YML, "missing: a corpus declares its tiers, tools and model there")
    data = _yaml(_read_text(files[PROBE_YML], PROBE_YML), PROBE_YML)
    try:
        return ProbeConfig.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise CorpusError(PROBE_YML, describe_validation(exc)) from exc


def _load_probe(rel: str, path: Path, digest: str, files: Mapping[str, Path]) -> Probe:
    data, body = _front(path, rel)
    try:
        front = _ProbeFront.model_validate(data)
    except ValidationError as exc:
        raise CorpusError(rel, f"probe front matter: {describe_validation(exc)}") from exc
    for examined in front.examines:
        if examined not in files:
            raise CorpusError(rel, f"examines {examined!r}, which is not a file of the corpus")
    try:
        task = task_of(body)
    except TaskSectionError as exc:
        raise CorpusError(rel, str(exc)) from exc
    return Probe(id=front.id, title=front.title.strip(), path=rel, digest=digest, task=task,
                 answers=front.answers, examines=front.examines)


def _document_id(rel: str, path: Path) -> str:
    data, _ = _front(path, rel)
    doc_id = data.get("id")
    if not isinstance(doc_id, str) or not ID_RE.match(doc_id):
        raise CorpusError(rel, f"front matter `id:` is missing or malformed ({doc_id!r}); "
                               "every document under docs/ has one (letters, digits, _ . -)")
    return doc_id


def _check_declarations(config: ProbeConfig, probes: Mapping[str, Probe],
                        files: Mapping[str, Path]) -> None:
    for key, table in (("folds", config.folds), ("answer_keys", config.answer_keys)):
        for probe_id, paths in table.items():
            if probe_id not in probes:
                raise CorpusError(PROBE_YML, f"{key} names {probe_id!r}, not a probe of the shelf")
            for declared in paths:
                if declared not in files:
                    raise CorpusError(PROBE_YML, f"{key}.{probe_id}: {declared!r} is not a file "
                                                 "of the corpus")
                if key == "folds" and declared.startswith((DOCS, HEADWATER)):
                    raise CorpusError(PROBE_YML, f"folds.{probe_id}: {declared!r} is under "
                                                 f"{declared.split('/')[0]}/; RC-09 keeps only "
                                                 "folds outside docs/ (and .headwater/ is removed)")
        if key == "answer_keys":
            for probe_id, paths in table.items():
                both = set(paths) & set(config.folds.get(probe_id, ()))
                if both:
                    raise CorpusError(PROBE_YML, f"{sorted(both)[0]!r} is both a fold and an "
                                                 f"answer key of {probe_id}")


def load_corpus(root: Path) -> Corpus:
    """Read and check the corpus at ``root`` (DESIGN.md, "Plan and corpus layout").

    Reads every regular file once (for its digest); symlinks are neither
    followed nor digested (`Corpus.irregular`).

    Raises:
        CorpusError: ``root`` is not a directory; probe.yml is missing, not
            YAML or breaks its closed key set; a probe has no ``## Task`` or
            bad front matter; a document under docs/ has no ``id:``; an id is
            used twice; an ``examines`` path, fold or answer key is not a
            file; a fold or answer key names an unknown probe; a fold lies
            under docs/ or .headwater/.
    """
    if not root.is_dir():
        raise CorpusError(str(root), "the corpus root is not a directory")
    started_ns = time.time_ns()
    paths, irregular, directories = _walk(root)
    ordered = sorted(paths, key=lambda p: p.encode("utf-8"))
    quiet_dirs = _quiet_directories(root, directories, started_ns)  # before the files' (see there)
    signatures = {rel: sig for rel in ordered
                  if (sig := FileSignature.quiet(paths[rel], started_ns)) is not None}
    files = {rel: digest_file(paths[rel]) for rel in ordered}  # after the stat: see FileSignature
    config = _load_config(paths)
    probes: dict[str, Probe] = {}
    documents: dict[str, str] = {}
    for rel in ordered:
        if not (rel.startswith(DOCS) and rel.endswith(".md")):
            continue
        is_probe = rel.startswith(SHELF) and "/" not in rel[len(SHELF):]
        if is_probe:
            probe = _load_probe(rel, paths[rel], files[rel], paths)
            doc_id = probe.id
        else:
            doc_id = _document_id(rel, paths[rel])
        if doc_id in documents:
            raise CorpusError(rel, f"id {doc_id!r} is already the id of {documents[doc_id]}")
        documents[doc_id] = rel
        if is_probe:
            probes[doc_id] = probe
    _check_declarations(config, probes, paths)
    lock, source = _lock(config, files)
    return Corpus(
        root=root, config=config, files=files, irregular=tuple(irregular),
        probes=dict(sorted(probes.items())), documents=documents,
        tree=tree_digest(files), lock=lock, lock_source=source, signatures=signatures,
        directories=quiet_dirs,
    )


def _lock(config: ProbeConfig, files: Mapping[str, str]) -> tuple[str, str]:
    if config.lock is not None:
        if config.lock not in files:
            raise CorpusError(PROBE_YML, f"lock: {config.lock!r} is not a file of the corpus")
        return files[config.lock], config.lock
    if DEFAULT_LOCK in files:
        return files[DEFAULT_LOCK], DEFAULT_LOCK
    return files[PROBE_YML], NO_LOCK_SOURCE
