"""From an `Observation` of a recorded session to its `Event` (RC-10..RC-13, RC-15).

This is the one place that reads files of the workspace after the session
(RC-01): the bytes of a Read file the session created, and each produced
artifact inside the workspace. Every such read goes through
`recorder._beneath`: beneath the workspace, no symlink followed anywhere on
the way, regular files only, at most `MAX_ARTIFACT_BYTES`, digest and cites
from one read. A file that is not read keeps its path only and is listed,
with its size and why, in ``unread`` (the ledger keeps it; the prose names
it). A path outside the workspace is never opened.

``cites`` (RC-11): a corpus id occurs "on word boundaries" when the character
before it and the character after it are not identifier characters, i.e.
letters or digits (Unicode, `str.isalnum`), ``_`` or ``-``; the start and end
of the file are boundaries. So ``HW-DR-0052`` is cited by ``(HW-DR-0052)``,
``HW-DR-0052.`` and ``docs/HW-DR-0052.md``, and not by ``HW-DR-00521``,
``XHW-DR-0052`` or ``HW-DR-0052-draft``. Files are decoded as UTF-8 with
replacement and scanned in pieces, so memory stays bounded.
"""

from __future__ import annotations

import codecs
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from recorder._answer import extract_answer
from recorder._beneath import MAX_ARTIFACT_BYTES as MAX_ARTIFACT_BYTES
from recorder._beneath import ReadBudget, Unreadable, read_beneath
from recorder._paths import Lookups, resolve_in_workspace, workspace_relative
from recorder.transcript import Artifact, Call, Event

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

    from recorder._transform import Observation, ObservedCall

ID_PUNCTUATION: Final = frozenset("_-")
"""Characters that, besides letters and digits, continue an identifier."""


def build_event(
    obs: Observation,
    *,
    probe: str,
    session: str,
    workspace: Path,
    manifest: Mapping[str, str],
    declared_answers: Sequence[str],
    corpus_ids: Collection[str],
    produced_extra: Sequence[str] = (),
    findings: Mapping[str, Sequence[str]] | None = None,
    unread: list[UnreadFile] | None = None,
    inside: str | None = None,
) -> Event:
    """Build the event of one recorded session.

    Args:
        obs: the transform's observation; its state must be ``recorded``.
        probe: the probe's corpus id.
        session: the session's name, distinct within the probe (e.g. ``r1``).
        workspace: the session's workspace: its host copy, read after the session.
        manifest: workspace-relative POSIX path -> ``sha256:`` digest of every
            file as sealed, before the harness started (RC-09).
        declared_answers: the probe's ``answers:`` (RC-13).
        corpus_ids: every ``id:`` of the corpus, probes included (RC-11 ``cites``).
        produced_extra: the driver's ``--produced`` paths, relative to the
            workspace unless absolute (RC-11).
        findings: what the configured checker reported (workspace-relative
            path -> rules; `recorder._findings.run_checker`), or None when no
            checker ran or it failed (RC-11, RC-12).
        unread: When given, receives every produced file inside the workspace
            that was not read (a symlink, not a regular file, over the size cap).
        inside: the workspace path the session saw (RC-02); the paths it named
            are resolved against it. None: the same as ``workspace``.

    Returns:
        An `Event` with ``calls`` and ``produced`` always present (``[]`` when
        none were seen: the session was watched, RC-12) and ``answer`` always
        present (``null`` when the rule finds none). Each produced file inside
        the workspace carries ``findings`` (``[]``: checked, none reported)
        when ``findings`` is a mapping, and no such key when it is None.

    Raises:
        ValueError: ``obs.state`` is not ``recorded`` (only recorded sessions
            become events; docs/batch.md "Session states").
    """
    if obs.state != "recorded":
        raise ValueError(f"only a recorded session becomes an event, not {obs.state!r}")
    budget = ReadBudget()  # the session's reads after it, calls and produced files together
    return Event(
        probe=probe,
        session=session,
        calls=observed_calls(obs.calls, workspace=workspace, manifest=manifest, budget=budget,
                             inside=inside),
        produced=produced_artifacts([*obs.produced_paths, *produced_extra],
                                    workspace=workspace, corpus_ids=corpus_ids,
                                    findings=findings, unread=unread, budget=budget,
                                    inside=inside),
        answer=extract_answer(obs.final_text, declared_answers),
    )


def observed_calls(calls: Iterable[ObservedCall], *, workspace: Path,
                   manifest: Mapping[str, str], budget: ReadBudget | None = None,
                   inside: str | None = None) -> list[Call]:
    """RC-10's ``calls`` of these observed calls, in order (also kept for non-recorded sessions).

    Their Read paths share one session's budget of file lookups (`recorder._paths.Lookups`):
    past it, a Read counts as outside and its result is its tool_result's digest; and one
    session's budget of bytes read (``budget``, else a fresh `ReadBudget`): a created file
    past it is not read, and the Read's result is its tool_result's digest. ``inside``: the
    workspace path the session saw (None: ``workspace``)."""
    lookups = Lookups()
    reads = ReadBudget() if budget is None else budget
    return [_call(call, workspace, manifest, lookups, reads, inside) for call in calls]


def read_result(call: ObservedCall, *, workspace: Path, manifest: Mapping[str, str],
                lookups: Lookups | None = None, budget: ReadBudget | None = None,
                inside: str | None = None) -> str | None:
    """RC-10's ``result`` of one call; None when its tool_result never arrived.

    A successful Read of a file inside the workspace: the manifest's digest
    when the file was sealed there (partial reads too), else the digest of
    its bytes after the session (a file the session created). Everything else
    (a failed Read, a path outside, a Read of a file gone after the session,
    any other tool): the digest of the tool_result text. The Read's path is
    resolved against ``inside``, the workspace path the session saw (None:
    ``workspace``), and read in ``workspace``, its host copy.
    """
    if call.result_digest is None:
        return None
    if call.read_path is None or call.result_is_error:
        return call.result_digest
    resolved, within = resolve_in_workspace(call.read_path, workspace, lookups, inside=inside)
    if not within:
        return call.result_digest
    relative = workspace_relative(resolved, workspace, inside)
    if relative in manifest:
        return manifest[relative]
    try:  # a file the session created: its bytes after the session, read beneath
        return read_beneath(workspace, relative, budget=budget).digest
    except Unreadable:
        return call.result_digest


@dataclass(frozen=True, slots=True)
class UnreadFile:
    """A produced file inside the workspace that was not read after the session."""

    path: str
    """Workspace-relative, as the session named it."""
    reason: str
    size_bytes: int | None


def produced_artifacts(paths: Iterable[str], *, workspace: Path,
                       corpus_ids: Collection[str],
                       findings: Mapping[str, Sequence[str]] | None = None,
                       unread: list[UnreadFile] | None = None,
                       budget: ReadBudget | None = None,
                       inside: str | None = None) -> list[Artifact]:
    """RC-11's ``produced``: one artifact per distinct path named, first-named order.

    The key and ``path`` are the path as named (relative to the workspace when
    it lies there lexically, ``..`` collapsed; absolute otherwise), so two
    names stay two entries, and a host path is never written in place of the
    name the session used. Inside the workspace, a regular file read beneath
    it (`recorder._beneath`: no symlink followed, at most `MAX_ARTIFACT_BYTES`)
    gets ``result``, ``cites`` and (when ``findings`` is a mapping: a checker
    ran) ``findings``; any other keeps ``path`` only and, when it exists, is
    added to ``unread`` with why. Outside: ``path`` only, never opened. The reads share
    ``budget`` (the session's `ReadBudget`; None: a fresh one): a file past what is left
    is unread. Paths are named against ``inside``, the workspace path the session saw
    (None: ``workspace``), and read in ``workspace``, its host copy.
    """
    reads = ReadBudget() if budget is None else budget
    artifacts: dict[str, Artifact] = {}
    for named in paths:
        key = _as_named(named, workspace, inside)
        if key in artifacts:
            continue
        if key.startswith(("/", "~")):
            artifacts[key] = Artifact(path=key)
            continue
        scanner = CitesScanner(corpus_ids)
        try:
            facts = read_beneath(workspace, key, on_text=scanner.feed, budget=reads)
        except Unreadable as exc:
            if unread is not None and not exc.reason.startswith("missing"):
                unread.append(UnreadFile(key, exc.reason, exc.size_bytes))
            artifacts[key] = Artifact(path=key)
            continue
        found = {} if findings is None else {  # [] = checked, none reported
            "findings": sorted(set(findings.get(key, ())))}
        artifacts[key] = Artifact(path=key, result=facts.digest, cites=scanner.cites(), **found)
    return list(artifacts.values())


def _as_named(named: str, workspace: Path, inside: str | None) -> str:
    """The path as the session named it: workspace-relative when lexically inside
    (``..`` collapsed, no symlink followed), else absolute; ``~`` words as written."""
    if named.startswith("~"):
        return named
    root = posixpath.normpath(inside if inside is not None else str(workspace))
    absolute = posixpath.normpath(posixpath.join(root, named))
    if absolute == root or absolute.startswith(root + "/"):
        return posixpath.relpath(absolute, root)
    return absolute


class CitesScanner:
    """Finds the ``corpus_ids`` a text cites on word boundaries, fed piece by piece.

    Memory: the longest id plus one character carried between pieces.
    """

    def __init__(self, corpus_ids: Collection[str]) -> None:
        self._remaining = {ident for ident in corpus_ids if ident}
        self._keep = max((len(i) for i in self._remaining), default=0) + 1
        self._found: set[str] = set()
        self._carry = ""
        self._dropped = 0

    def feed(self, text: str, final: bool) -> None:
        """Take the next piece of the text; ``final`` on the last one."""
        todo = self._remaining - self._found
        if not todo:
            return
        window = self._carry + text
        self._found |= _scan(window, todo, at_start=self._dropped == 0, at_end=final)
        self._carry = window[-self._keep:]
        self._dropped += len(window) - len(self._carry)

    def cites(self) -> list[str]:
        """The sorted, unique ids found so far (all of them once fed the final piece)."""
        return sorted(self._found)


def cites_in_file(path: Path, corpus_ids: Collection[str]) -> list[str]:
    """The sorted, unique ``corpus_ids`` that occur in the file at ``path`` on word boundaries.

    For a file outside any workspace (tests, tools); a session's files are read
    through `produced_artifacts`.

    Raises:
        OSError: the file cannot be read.
    """
    scanner = CitesScanner(corpus_ids)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with path.open("rb") as fp:
        while chunk := fp.read(1 << 16):
            scanner.feed(decoder.decode(chunk), False)
    scanner.feed(decoder.decode(b"", final=True), True)
    return scanner.cites()


def _scan(window: str, idents: set[str], *, at_start: bool, at_end: bool) -> set[str]:
    """Ids occurring in ``window`` on word boundaries.

    A window is the previous window's last ``max(len(id)) + 1`` characters
    plus new text, so every occurrence is decided in a window holding the
    character before it and the character after it: one at index 0 of a
    later window, or one touching a window's end before EOF, is skipped here
    and decided in a window that has both neighbours.
    """
    found = set()
    size = len(window)
    for ident in idents:
        start = window.find(ident)
        while start != -1:
            end = start + len(ident)
            decidable = (start > 0 or at_start) and (end < size or at_end)
            if (decidable and (start == 0 or not _continues_id(window[start - 1]))
                    and (end == size or not _continues_id(window[end]))):
                found.add(ident)
                break
            start = window.find(ident, start + 1)
    return found


def _continues_id(char: str) -> bool:
    return char.isalnum() or char in ID_PUNCTUATION


def _call(call: ObservedCall, workspace: Path, manifest: Mapping[str, str],
          lookups: Lookups, budget: ReadBudget, inside: str | None) -> Call:
    result = read_result(call, workspace=workspace, manifest=manifest, lookups=lookups,
                         budget=budget, inside=inside)
    if result is None:
        return Call(tool=call.tool, argument=call.argument)  # no result key: never arrived
    return Call(tool=call.tool, argument=call.argument, result=result)
