"""Seal a session's workspace (RC-09): the one executor, the verification pass, the manifest.

The plan (rules 1-5: what is copied, removed, rewritten, and why) is
`campaign.seal._sealplan`; docs/sealing.md states every rule. Here:

* the executor writes each kept file from the bytes the plan judged, with the
  corpus file's mode bits, into an empty directory (no links: a session writes
  into its workspace, and a hard link would write into the corpus);
* rule 6, the verification: every file of the finished workspace is read
  back, digested (the manifest) and searched again; the workspace is refused,
  naming the file and line, when a file lies under ``docs/probes/`` or
  ``.headwater/``, is an answer key, names the probe (a declared fold
  excepted) or names an answer key (folds included), is not a regular file,
  or was copied unchanged yet differs from the corpus's digest of it (the
  corpus changed since it was loaded).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import posixpath
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from campaign._errors import SealRefused, WorkspaceNotEmpty
from campaign.corpus import HEADWATER, SHELF
from recorder import DIGEST_PREFIX

from . import _sealbig
from ._chunkscan import LARGE_FILE_BYTES, O_READ
from ._names import Names, Text
from ._rules import broken_path_rule
from ._sealplan import (
    FileDecision,
    SealPlan,
    check_folds,
    is_text,
    iter_seal,
    read_all,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from campaign.corpus import Corpus
    from campaign.plan import Removal

    from ._resolved import SessionPlan

__all__ = ["SealPlan", "SealResult", "check_folds", "explain", "plan_seal", "seal_workspace",
           "verify_workspace"]

_O_WRITE: Final = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PATH_COLUMN: Final = 44
"""Width of the path column of ``--explain`` (longer paths push the reason right)."""


@dataclass(frozen=True, slots=True)
class SealResult:
    """A sealed workspace as the session will see it."""

    probe: str
    arm: str
    manifest: dict[str, str]
    """Workspace-relative POSIX path -> ``sha256:`` digest of every file, after the arm."""
    removals: list[Removal]
    """Every removal (the seal's and the arm's), in corpus path order."""
    binary: list[str]
    """Binary or non-UTF-8 files: searched as bytes, copied whole (none names the probe)."""
    folds: list[tuple[str, int, str, str]] = field(default_factory=list)
    """Folds of the probe kept although they name it: (path, line, how, excerpt)."""


def _prepare(out: Path) -> None:
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink() or any(out.iterdir()):
            raise WorkspaceNotEmpty(str(out))
    else:
        out.mkdir(parents=True)


@functools.cache
def _umask() -> int | None:
    """The process's umask from /proc (reading it with os.umask would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fp:
            for line in fp:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return None


def _write(target: str, data: bytes, mode: int) -> bytes:
    """Create ``target`` (never through a link, never over a file) with ``data`` and ``mode``.

    Returns the file's bytes as read back from it after the write (``pread``
    on the same descriptor: the file's contents, as any later open would see
    them), for the verification.
    """
    umask = _umask()
    exact = umask is not None and mode & umask == 0  # open() then gives exactly ``mode``
    fd = os.open(target, _O_WRITE, mode if exact else 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if not exact:
            os.fchmod(fd, mode)
        return _pread_all(fd, len(data))
    finally:
        os.close(fd)


def _pread_all(fd: int, size: int) -> bytes:
    """Every byte of the open regular file ``fd`` from offset 0 (``size``: what it should hold)."""
    data = os.pread(fd, size + 1, 0)
    if len(data) <= size:
        return data
    chunks = [data]
    while chunk := os.pread(fd, 1 << 20, sum(map(len, chunks))):
        chunks.append(chunk)
    return b"".join(chunks)


class _Verifier:
    """Rule 6 for one file at a time: read it back from the workspace, digest it, judge it."""

    def __init__(self, corpus: Corpus, names: Names) -> None:
        self.corpus = corpus
        self.names = names
        self.digests: dict[str, str] = {}
        self.binary: list[str] = []

    def check(self, rel: str, path: str, written: FileDecision | None = None,
              read_back: bytes | None = None) -> None:
        """Read the workspace file ``path`` (``rel``) back, judge it and digest it.

        Args:
            rel: its workspace-relative path.
            path: where to read it (unless ``read_back`` is given).
            read_back: the file's bytes, read back from it by the executor.
            written: the decision the executor wrote there, if any. When the
                bytes read back equal the bytes written, the plan's digest of
                them is the file's; and a file the plan copied unchanged is not
                searched a second time: the plan judged exactly these bytes
                under this same path with the same matcher (a pure function of
                path and bytes). Any other file is searched in full.

        Raises:
            SealRefused: see the module doc.
        """
        if read_back is None and os.lstat(path).st_size > LARGE_FILE_BYTES:
            self.check_large(rel, path)
            return
        _check_path(rel, self.names)
        data = read_back if read_back is not None else _read(path)
        same = written is not None and data == written.data
        if written.binary if same and written is not None else not is_text(data):
            self.binary.append(rel)
        # Binary and non-UTF-8 files are searched too, as bytes: a file that
        # could not be checked must never count as checked.
        if not (same and written is not None and written.action == "copy"):
            _check_text(rel, data, self.names)
        if same and written is not None and written.digest is not None:
            digest = written.digest
        else:
            digest = DIGEST_PREFIX + hashlib.sha256(data).hexdigest()
        if written is not None and written.action == "copy" \
                and self.corpus.files.get(rel) != digest:
            raise SealRefused(self.names.probe.id, rel, None, "the corpus changed since it was "
                              "loaded: this file no longer has the tree's digest")
        self.digests[rel] = digest

    def check_large(self, rel: str, path: str, written: FileDecision | None = None) -> None:
        """`check` for a file the executor copied in chunks, or one over `LARGE_FILE_BYTES`.

        Read back in chunks (`campaign.seal._sealbig.verify`). A file the plan copied
        unchanged is not searched again when its digest read back is the plan's;
        any other is searched. A digest other than the plan's means the corpus
        file changed between the plan's read and the copy: refused.

        Raises:
            SealRefused: see the module doc.
            OSError: the file cannot be read.
        """
        _check_path(rel, self.names)
        got = _sealbig.verify(rel, path, self.names,
                              search=written is None or written.action != "copy")
        if written is not None and got.digest != written.digest:
            raise SealRefused(self.names.probe.id, rel, None, "the corpus changed since it was "
                              "loaded: this file no longer has the digest the seal planned")
        if written.binary if written is not None else got.binary:
            self.binary.append(rel)
        self.digests[rel] = got.digest

    def finish(self, workspace: Path) -> tuple[dict[str, str], list[str]]:
        """Walk the finished workspace: judge any file not judged yet; the manifest and binaries."""
        walked: list[str] = []
        for rel, path in _walk(str(workspace), self.names.probe.id):
            if rel not in self.digests:
                self.check(rel, path)
            walked.append(rel)
        walked.sort(key=lambda p: p.encode("utf-8"))
        binary = set(self.binary)
        return {rel: self.digests[rel] for rel in walked}, [p for p in walked if p in binary]


def _execute(decisions: Iterator[FileDecision], out: Path,
             verifier: _Verifier) -> list[FileDecision]:
    """The one executor: write every kept file of ``decisions`` under the empty ``out``.

    One file at a time: the plan reads and judges it, this writes those very
    bytes, and the verifier reads the file back (it is final: the arm was
    applied before writing). A writer thread was tried and measured slower on
    this 2-CPU host: the search holds the GIL, and the hand-offs cost more
    than the overlap gained. Returns the decisions without their bytes.

    Raises:
        SealRefused: from the plan (the corpus changed) or the verification.
        OSError: a file cannot be written.
    """
    made: set[str] = {""}
    root = str(out)
    done: list[FileDecision] = []
    for d in decisions:
        if d.data is not None:
            parent = posixpath.dirname(d.path)
            if parent not in made:
                os.makedirs(os.path.join(root, parent), exist_ok=True)
                made.add(parent)
            target = os.path.join(root, d.path)
            verifier.check(d.path, target, d, _write(target, d.data, d.mode))
        elif d.source is not None:
            parent = posixpath.dirname(d.path)
            if parent not in made:
                os.makedirs(os.path.join(root, parent), exist_ok=True)
                made.add(parent)
            target = os.path.join(root, d.path)
            umask = _umask()
            _sealbig.write(target, d.source, list(d.drops), d.mode, _O_WRITE,
                           umask is not None and d.mode & umask == 0)
            verifier.check_large(d.path, target, d)
        done.append(FileDecision(d.path, d.action, None, d.mode, d.removals, d.binary,
                                 d.fold_naming))
    return done


def _walk(directory: str, probe_id: str, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(relative path, path) of every file under ``directory``; refuses anything else."""
    with os.scandir(directory) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(entry.path, probe_id, rel + "/")
            elif entry.is_file(follow_symlinks=False):
                yield rel, entry.path
            else:
                raise SealRefused(probe_id, rel, None, "not a regular file: a sealed workspace "
                                                       "holds regular files only")


def _read(path: str) -> bytes:
    """The file's bytes."""
    fd = os.open(path, O_READ)
    try:
        return read_all(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _check_path(rel: str, names: Names) -> None:
    """Rule 6 by path (`campaign.seal._rules`, the table the plan removed by).

    Raises:
        SealRefused: the workspace holds a file whose path breaks a rule.
    """
    rule = broken_path_rule(rel, names)
    if rule is not None:
        raise SealRefused(names.probe.id, rel, None, rule.refusal)


def _check_text(rel: str, data: bytes, names: Names) -> None:
    text = Text(data)
    pid = names.probe.id
    if rel not in names.folds and (hit := names.probe_names.first(text, rel)) is not None:
        raise SealRefused(pid, rel, text.line_of(hit.start), f"still names the probe by {hit.how}")
    for key in names.keys:
        if (hit := key.first(text, rel)) is not None:
            raise SealRefused(pid, rel, text.line_of(hit.start),
                              f"names the answer key {key.path} by {hit.how}")


def verify_workspace(corpus: Corpus, session: SessionPlan, workspace: Path
                     ) -> tuple[dict[str, str], list[str]]:
    """Rule 6 of RC-09: read every file of ``workspace`` back and judge it; digest it.

    One pass, linear in the workspace's bytes: each file is read once,
    digested, and searched for the probe's and the answer keys' names. (The
    seal runs the same checks file by file as it writes, see `seal_workspace`.)

    Args:
        corpus: the corpus the workspace was sealed from.
        session: the session that will run in it (its probe's `Names`).
        workspace: the finished workspace (after the arm).

    Returns:
        The manifest (path -> ``sha256:`` digest, sorted by path bytes) and
        the binary or non-UTF-8 files (searched as bytes like the rest).

    Raises:
        SealRefused: see the module doc; the message names the file and line.
            The workspace is left as it is, for inspection.
    """
    verifier = _Verifier(corpus, session.names)
    for rel, path in _walk(str(workspace), session.probe.id):
        verifier.check(rel, path)
    return verifier.finish(workspace)


def plan_seal(corpus: Corpus, session: SessionPlan) -> SealPlan:
    """`iter_seal` of ``session`` collected, without the file bytes. Reads, never writes.

    Raises:
        see `iter_seal`.
    """
    plan = SealPlan()
    decisions = iter_seal(corpus, session.names, session.arm.arm, session.grep)
    with contextlib.closing(decisions):  # stops the grep
        for d in decisions:
            plan.decisions.append(FileDecision(d.path, d.action, None, d.mode, d.removals,
                                               d.binary, d.fold_naming))
    return plan


def seal_workspace(corpus: Corpus, session: SessionPlan, *, out: Path) -> SealResult:
    """Build the sealed workspace of one attempt of ``session`` in ``out``.

    The plan (`campaign.seal._sealplan.iter_seal`) streams one decision per corpus
    file into the executor, which writes it; the verifier reads each written
    file back, and the finished workspace is walked for the manifest.

    Args:
        corpus: from `load_corpus`.
        session: the session's `SessionPlan`, resolved once per batch (its probe's
            `Names`, its arm, its folds checked: `resolve_sessions`).
        out: the workspace directory; must not exist, or be an empty directory.

    Returns:
        The manifest (path -> digest), every removal with its reason, the
        binary or non-UTF-8 files (searched as bytes) and the folds kept although they
        name the probe.

    Raises:
        ArmError: a settings file the arm edits is not JSON.
        WorkspaceNotEmpty: ``out`` is not new or empty (nothing written).
        SealRefused: the corpus changed since loading; or the verification
            found a name (``out`` is left for inspection; no session may run in it).
    """
    probe_id, arm = session.probe.id, session.arm.arm
    verifier = _Verifier(corpus, session.names)
    decisions = iter_seal(corpus, session.names, arm, session.grep)
    # closing(): an exception here must stop the prefilter's grep now, not at a later gc.
    with contextlib.closing(decisions):
        _prepare(out)
        done = _execute(decisions, out, verifier)
    manifest, binary = verifier.finish(out)
    folds = [(d.path, *d.fold_naming) for d in done if d.fold_naming is not None]
    return SealResult(probe=probe_id, arm=arm, manifest=manifest,
                      removals=[r for d in done for r in d.removals], binary=binary, folds=folds)


def _row(path: str, reason: str) -> str:
    return f"  {path:<{_PATH_COLUMN}} {reason}" if len(path) <= _PATH_COLUMN \
        else f"  {path}\n  {'':<{_PATH_COLUMN}} {reason}"


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def explain(result: SealResult) -> str:
    """``seal --explain``: every removal and why, grouped, for a person to read."""
    whole = [r for r in result.removals if r.kind == "file"]
    lines_gone = [r for r in result.removals if r.kind == "line"]
    edits = [r for r in result.removals if r.kind == "edit"]
    out = [f"seal of {result.probe}, arm {result.arm}: {_n(len(result.manifest), 'file')} in "
           f"the workspace; {_n(len(whole), 'file')} removed, {_n(len(lines_gone), 'line')} "
           f"removed, {_n(len(edits), 'file')} edited by the arm", "", "removed files:"]
    shelf = [r for r in whole if r.path.startswith((SHELF, HEADWATER))]
    for prefix, count in sorted(Counter(r.path.split("/")[0] + ("/probes/" if r.path.startswith(
            SHELF) else "/") for r in shelf).items()):
        reason = next(r.reason for r in shelf if r.path.startswith(prefix))
        out.append(_row(f"{prefix} ({count} file{'s' if count != 1 else ''})", reason))
    for r in whole:
        if r not in shelf:
            where = f"{r.path}:{r.line}" if r.line is not None else r.path
            out.append(_row(where, r.reason))
            if r.excerpt:
                out.append(f"  {'':<{_PATH_COLUMN}} | {r.excerpt}")
    out += ["", "removed lines (the rest of each file is kept byte for byte):"]
    for r in lines_gone:
        out.append(_row(f"{r.path}:{r.line}", r.reason))
        if r.excerpt:
            out.append(f"  {'':<{_PATH_COLUMN}} | {r.excerpt}")
    out += ["  (none)"] if not lines_gone else []
    out += ["", "edited by the arm:"] + [_row(r.path, r.reason) for r in edits]
    out += ["  (none)"] if not edits else []
    out += ["", "kept although they name the probe (folds declared in probe.yml):"]
    for path, line, how, text in result.folds:
        out += [_row(f"{path}:{line}", f"names {result.probe} by {how}"),
                f"  {'':<{_PATH_COLUMN}} | {text}"]
    out += [] if result.folds else ["  (none)"]
    out += ["", "binary or non-UTF-8 files, searched as bytes and copied whole:"]
    out += [f"  {p}" for p in result.binary] or ["  (none)"]
    out += ["", f"verified: every file read back; none names {result.probe} (folds excepted) "
                "or one of its answer keys"]
    return "\n".join(out) + "\n"
