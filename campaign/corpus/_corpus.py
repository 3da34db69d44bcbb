"""Load a corpus: ``.headwater/probe.yml``, the probe shelf, every document's id, the untyped files.

Layout (the exact rules are in docs/plan.md):

* ``.headwater/probe.yml`` - a closed mapping (`campaign.corpus._schema.ProbeConfig`).
* ``docs/probes/*.md`` with front matter - one probe each: ``id``, ``title``,
  ``answers``, ``examines``, and a ``## Task`` section (`task_of`).
* every other ``docs/**/*.md`` with front matter - a document, with an ``id:``.
* a ``docs/**/*.md`` whose first line is not ``---`` - an *untyped file* (a
  nested CLAUDE.md, a README, an imported page): in the tree like every file,
  sealed and acted on by the arms like every file, never cited, no id
  (`Corpus.untyped`). Front matter that opens and is broken is an error.

Everything is read once, here: each file's bytes give its digest (the
``tree`` entries) and, for Markdown under docs/, its front matter, so plans
and seals never walk the tree again. Front matter is YAML 1.2 through
`campaign.corpus._yamlload.load_yaml` (a C parser proven against the pure one).
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

from pydantic import ValidationError
from ruamel.yaml.error import YAMLError

from campaign._errors import CorpusError
from recorder import (
    DIGEST_PREFIX,
    MCP_JSON,
    McpDeclaration,
    digest_bytes,
    digest_file,
    read_mcp_declaration,
    tree_digest,
)

from ._corpus_files import CHUNK_BYTES, LARGE_FILE_BYTES, Refused, quiet_directories, walk_corpus
from ._corpus_files import QUIET_S as QUIET_S
from ._corpus_files import FileSignature as FileSignature
from ._markdown import TaskSectionError, opens_front_matter, split_front_matter, task_of
from ._markdown import split_lines as split_lines
from ._schema import ID_RE, ID_RULE, ProbeConfig, ProbeFront, describe_validation
from ._schema import Arm as Arm
from ._schema import Tier as Tier
from ._schema import TierConfig as TierConfig
from ._yamlload import describe_yaml_error, load_yaml

PROBE_YML: Final = ".headwater/probe.yml"
DEFAULT_LOCK: Final = ".headwater/taxonomy.lock"
NO_LOCK_SOURCE: Final = "probe.yml (no lock file)"
"""``lock_source`` of a corpus without a lock file: ``lock`` is then probe.yml's digest."""
SHELF: Final = "docs/probes/"
DOCS: Final = "docs/"
HEADWATER: Final = ".headwater/"
FRONT_MATTER_MAX_BYTES: Final = 1 << 20
"""In a Markdown file over `LARGE_FILE_BYTES`, the front matter closes within this many bytes."""
_CLOSE_BYTES_RE: Final = re.compile(rb"^---\r*\n", re.MULTILINE)
"""A closing ``---`` line and its newline, as `_markdown.split_front_matter` finds it."""
FRONT_MATTER_FIRST_LINE: Final = 2
"""The file line of the front matter's first YAML line (after the opening ``---``)."""


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
    untyped: tuple[str, ...] = ()
    """The untyped files: every ``docs/**/*.md`` without front matter (its first line is not
    ``---``), sorted by path bytes. In ``files`` like every file; not in ``documents``."""
    signatures: Mapping[str, FileSignature] = field(default_factory=dict)
    """relpath -> the file's `FileSignature` when loaded, for files then unchanged for at
    least `QUIET_S`; the seal may trust their digest without hashing them again while the
    signature holds."""
    directories: Mapping[str, FileSignature] | None = None
    """relpath ("" the root) -> each directory's `FileSignature` at load, taken before the
    files'; None when a directory changed within `QUIET_S` of loading (`campaign.seal._prefilter`
    is then not used)."""
    mcp: McpDeclaration = field(
        default_factory=lambda: McpDeclaration(Path(MCP_JSON), frozenset()))
    """The root ``.mcp.json``'s servers, read once at load by the one reader
    (`recorder.read_mcp_declaration`); none when the corpus has no regular one."""

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


def _yaml(text: str, rel: str, *, first_line: int, what: str) -> Any:
    try:
        return load_yaml(text)
    except YAMLError as exc:
        raise Refused(rel, f"{what} is not valid YAML, at "
                            f"{describe_yaml_error(exc, text, first_line=first_line)}") from exc


def _text(data: bytes, rel: str) -> str:
    """The file's text, byte for byte (no newline translation: a task keeps its ``\\r\\n``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise Refused(rel, f"not UTF-8 text (byte {exc.start + 1}, line {line}: {exc.reason}); "
                            "a Markdown file with front matter must be UTF-8") from exc


_BOM: Final = b"\xef\xbb\xbf"


def _front(data: bytes, rel: str) -> tuple[dict[str, Any], str, int] | None:
    """(front matter mapping, body, the body's first line number) of a Markdown file; None
    when it is untyped (no front matter).

    Raises:
        Refused: the first line is ``---`` and the front matter is broken: not
            UTF-8, never closed, not YAML, or not a mapping; or a byte-order mark
            stands before that ``---``.
    """
    if not opens_front_matter(data):
        if data.startswith(_BOM) and opens_front_matter(data[len(_BOM):]):
            raise Refused(rel, "starts with a UTF-8 byte-order mark before its `---` line: "
                                "front matter must begin at the file's first byte, so this "
                                "would be an untyped file and its id lost (save it without "
                                "the mark)")
        return None
    text = _text(data, rel)
    front, body = split_front_matter(text)
    if front is None:
        raise Refused(rel, "the front matter opens with `---` on line 1 and no later line `---` "
                            "closes it (a Markdown file without front matter must not start with "
                            "a `---` line)")
    parsed = _yaml(front, rel, first_line=FRONT_MATTER_FIRST_LINE, what="the front matter")
    if not isinstance(parsed, dict):
        found = "empty" if parsed is None else f"a YAML {type(parsed).__name__}"
        raise Refused(rel, f"the front matter must be a YAML mapping (key: value lines), and it "
                            f"is {found}")
    return parsed, body, text.count("\n", 0, len(text) - len(body)) + 1


def _load_config(paths: Mapping[str, str]) -> ProbeConfig:
    if PROBE_YML not in paths:
        raise Refused(PROBE_YML, "missing: a corpus declares its tiers, tools and model there "
                                  "(docs/plan.md)")
    with open(paths[PROBE_YML], "rb") as fp:
        data = fp.read(LARGE_FILE_BYTES + 1)
    if len(data) > LARGE_FILE_BYTES:
        raise Refused(PROBE_YML, f"over {LARGE_FILE_BYTES:,} bytes, the most probe.yml may hold")
    text = _text(data, PROBE_YML)
    data = _yaml(text, PROBE_YML, first_line=1, what="the file")
    try:
        return ProbeConfig.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise Refused(PROBE_YML, describe_validation(exc, ProbeConfig)) from exc


def _load_probe(rel: str, front: dict[str, Any], body: str, digest: str,
                body_line: int) -> Probe:
    try:
        probe = ProbeFront.model_validate(front)
    except ValidationError as exc:
        raise Refused(rel, f"probe front matter: {describe_validation(exc, ProbeFront)}") \
            from exc
    try:
        task = task_of(body, first_line=body_line)
    except TaskSectionError as exc:
        raise Refused(rel, str(exc)) from exc
    return Probe(id=probe.id, title=probe.title.strip(), path=rel, digest=digest, task=task,
                 answers=probe.answers, examines=probe.examines)


def _document_id(rel: str, front: dict[str, Any]) -> str:
    doc_id = front.get("id")
    if "id" not in front:
        raise Refused(rel, "the front matter has no `id:`. A Markdown file under docs/ with "
                            "front matter is a document and needs one; without front matter it "
                            "is an untyped file (never cited)")
    if not isinstance(doc_id, str) or not ID_RE.match(doc_id):
        hint = " (quote it in YAML to make it a string)" if isinstance(doc_id, int | float) else ""
        raise Refused(rel, f"`id: {doc_id!r}` is not {ID_RULE}{hint}")
    return doc_id


def _check_declarations(config: ProbeConfig, probes: Mapping[str, Probe],
                        files: Mapping[str, str]) -> None:
    for probe in probes.values():
        for examined in probe.examines:
            if examined not in files:
                raise Refused(probe.path, f"examines {examined!r}, which is not a file of the "
                                           "corpus")
    for key, table in (("folds", config.folds), ("answer_keys", config.answer_keys)):
        for probe_id, paths in table.items():
            if probe_id not in probes:
                raise Refused(PROBE_YML, f"{key} names {probe_id!r}, which is not a probe of "
                                          "the shelf docs/probes/")
            for declared in paths:
                if declared not in files:
                    raise Refused(PROBE_YML, f"{key}.{probe_id}: {declared!r} is not a file "
                                              "of the corpus")
                if key == "folds" and declared.startswith((DOCS, HEADWATER)):
                    raise Refused(PROBE_YML, f"folds.{probe_id}: {declared!r} is under "
                                              f"{declared.split('/')[0]}/, but a fold lies "
                                              "outside docs/ and .headwater/: the seal removes "
                                              "every file naming the probe under docs/ and all "
                                              "of .headwater/ (docs/glossary.md: RC-09)")
        if key == "answer_keys":
            for probe_id, paths in table.items():
                both = set(paths) & set(config.folds.get(probe_id, ()))
                if both:
                    raise Refused(PROBE_YML, f"{sorted(both)[0]!r} is both a fold and an "
                                              f"answer key of {probe_id}")


def _is_markdown_in_docs(rel: str) -> bool:
    return rel.startswith(DOCS) and rel.endswith(".md")


def _is_on_shelf(rel: str) -> bool:
    return rel.startswith(SHELF) and "/" not in rel[len(SHELF):]


def off_shelf(corpus: Corpus) -> list[str]:
    """Files under the shelf that are not probes, sorted: in a folder of it, or not Markdown.

    A probe is a ``docs/probes/*.md`` directly on the shelf (docs/plan.md); a file beside
    it that a user meant as a probe would otherwise drop out of the plan unsaid.
    """
    return sorted(rel for rel in corpus.files if rel.startswith(SHELF)
                  and not (_is_on_shelf(rel) and rel.endswith(".md")))


@dataclass(slots=True)
class _Reading:
    """What the one pass over the files collects."""

    files: dict[str, str] = field(default_factory=dict)
    probes: dict[str, Probe] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)
    untyped: list[str] = field(default_factory=list)

    def markdown(self, rel: str, data: bytes) -> None:
        """Classify one ``docs/**/*.md`` file from its bytes: probe, document or untyped."""
        parsed = _front(data, rel)
        if parsed is None:
            self.untyped.append(rel)
            return
        front, body, body_line = parsed
        if _is_on_shelf(rel):
            probe = _load_probe(rel, front, body, self.files[rel], body_line)
            doc_id = probe.id
            self.probes[doc_id] = probe
        else:
            doc_id = _document_id(rel, front)
        if doc_id in self.documents:
            raise Refused(rel, f"id {doc_id!r} is already the id of {self.documents[doc_id]}; "
                                "ids are unique in a corpus")
        self.documents[doc_id] = rel


def _read_all(ordered: list[str], paths: Mapping[str, str]) -> _Reading:
    """Digest every file once; a Markdown file under docs/ is parsed from the same bytes.

    A Markdown file over `LARGE_FILE_BYTES` is read in chunks (`_large_markdown`), never whole.
    """
    reading = _Reading()
    for rel in ordered:
        if _is_markdown_in_docs(rel):
            with open(paths[rel], "rb") as fp:
                if os.fstat(fp.fileno()).st_size > LARGE_FILE_BYTES:
                    reading.files[rel], head = _large_markdown(fp, rel)
                    reading.markdown(rel, head)
                    continue
                data = fp.read()
            reading.files[rel] = digest_bytes(data)
            reading.markdown(rel, data)
        else:
            reading.files[rel] = digest_file(Path(paths[rel]))
    return reading


def _large_markdown(fp: BinaryIO, rel: str) -> tuple[str, bytes]:
    """(digest, the bytes to parse) of a Markdown file over `LARGE_FILE_BYTES`, read in chunks.

    Its front matter, if it opens one, must close within `FRONT_MATTER_MAX_BYTES`: the bytes
    to parse are then the file up to the closing line (an empty body). A probe (on the
    shelf) is never this large. A file with front matter must be UTF-8 throughout; that is
    checked chunk by chunk (docs/plan.md, "What the planner reads").

    Raises:
        Refused: on the shelf; front matter not closed within the bound; not UTF-8.
        OSError: the file cannot be read.
    """
    if _is_on_shelf(rel):
        raise Refused(rel, f"a probe file is at most {LARGE_FILE_BYTES:,} bytes (its task is "
                           "the session's first turn), and this one is larger")
    h = hashlib.sha256()
    head = b""
    decoder = codecs.getincrementaldecoder("utf-8")()
    front: bool | None = None
    at = 0
    lines = 0
    while chunk := fp.read(CHUNK_BYTES):
        h.update(chunk)
        if len(head) < FRONT_MATTER_MAX_BYTES:
            head += chunk[: FRONT_MATTER_MAX_BYTES - len(head)]
        if front is None:  # the first chunk (a MiB) holds the first line or more
            front = opens_front_matter(head) or (head.startswith(_BOM) and
                                                 opens_front_matter(head[len(_BOM):]))
        if front and not (chunk.isascii() and not decoder.getstate()[0]):
            pending = len(decoder.getstate()[0])  # bytes of the last chunk the decoder holds
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                start = at - pending + exc.start
                line = lines + chunk.count(b"\n", 0, max(exc.start - pending, 0)) + 1
                raise Refused(rel, f"not UTF-8 text (byte {start + 1}, line {line}: "
                                   f"{exc.reason}); a Markdown file with front matter must be "
                                   "UTF-8") from exc
        at += len(chunk)
        lines += chunk.count(b"\n")
    if front:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise Refused(rel, f"not UTF-8 text (its last bytes: {exc.reason}); a Markdown "
                               "file with front matter must be UTF-8") from exc
    digest = DIGEST_PREFIX + h.hexdigest()
    if not opens_front_matter(head):
        return digest, head  # untyped, or a mark before `---`: `_front` needs the first line
    closed = _CLOSE_BYTES_RE.search(head, head.find(b"\n") + 1)
    if closed is None:
        raise Refused(rel, f"the front matter does not close within the file's first "
                           f"{FRONT_MATTER_MAX_BYTES:,} bytes (a file over "
                           f"{LARGE_FILE_BYTES:,} bytes is read in chunks, and its front "
                           "matter must close by then)")
    return digest, head[: closed.end()]


def load_corpus(root: Path) -> Corpus:
    """Read and check the corpus at ``root`` (docs/plan.md, "What the planner reads").

    Reads every regular file once (for its digest, and a Markdown file under
    docs/ for its front matter from the same bytes); symlinks are neither
    followed nor digested (`Corpus.irregular`). A Markdown file under docs/
    whose first line is not ``---`` is untyped (`Corpus.untyped`), not an error.

    Raises:
        CorpusError: ``root`` does not exist or is not a directory; probe.yml
            is missing, not YAML or breaks its closed key set; a probe has no
            ``## Task`` or bad front matter; front matter opens (``---``) and is
            broken; a document under docs/ has no ``id:``; an id is used twice;
            an ``examines`` path, fold or answer key is not a file; a fold or
            answer key names an unknown probe; a fold lies under docs/ or
            .headwater/. The message names the root and the file.
        McpConfigError: the root ``.mcp.json`` breaks a rule of
            `recorder.read_mcp_declaration` (a malformed server declaration is bad input).
        OSError: a file cannot be read (permissions, I/O).
    """
    if not root.exists():
        raise CorpusError(str(root), None, "does not exist")
    if not root.is_dir():
        raise CorpusError(str(root), None, "is not a directory (a corpus is a directory holding "
                                           ".headwater/probe.yml and docs/)")
    try:
        return _load(root)
    except Refused as exc:
        raise CorpusError(str(root), exc.path, exc.problem) from exc


def _load(root: Path) -> Corpus:
    started_ns = time.time_ns()
    paths, irregular, directories = walk_corpus(root)
    ordered = sorted(paths, key=lambda p: p.encode("utf-8"))
    quiet_dirs = quiet_directories(root, directories, started_ns)  # before the files' (see there)
    signatures = {rel: sig for rel in ordered
                  if (sig := FileSignature.quiet(paths[rel], started_ns)) is not None}
    config = _load_config(paths)  # before the documents: its problems are reported first
    reading = _read_all(ordered, paths)  # after the stat: see FileSignature
    _check_declarations(config, reading.probes, reading.files)
    lock, source = _lock(config, reading.files)
    return Corpus(
        root=root, config=config, files=reading.files, irregular=tuple(irregular),
        probes=dict(sorted(reading.probes.items())), documents=reading.documents,
        tree=tree_digest(reading.files), lock=lock, lock_source=source,
        untyped=tuple(reading.untyped), signatures=signatures, directories=quiet_dirs,
        mcp=read_mcp_declaration(root) if MCP_JSON in reading.files
        else McpDeclaration(root / MCP_JSON, frozenset()),
    )


def _lock(config: ProbeConfig, files: Mapping[str, str]) -> tuple[str, str]:
    if config.lock is not None:
        if config.lock not in files:
            raise Refused(PROBE_YML, f"lock: {config.lock!r} is not a file of the corpus")
        return files[config.lock], config.lock
    if DEFAULT_LOCK in files:
        return files[DEFAULT_LOCK], DEFAULT_LOCK
    return files[PROBE_YML], NO_LOCK_SOURCE

