"""A transcript held to its batch's evidence: every event derived again, and compared.

``check-transcript FILE --batch BATCH`` (docs/transcript.md, "Checking a transcript
against its batch"). The closed-model check proves the form only: a hand-edited answer
that stays well-formed passes it. This check builds, for the transcript's arm, the
transcript the batch's ledger makes (the journal's own builder, fed the ledger's records)
with every session's last attempt derived again from its kept stream by the current
recorder (`rederive`, as ``retranscribe`` does, writing nothing), and compares it with the
file key by key: the identity's twelve members, each session's row (state, outside paths)
and each event (every key: calls, produced, answer). The prose is free text and is not
compared.

Three answers, as for the form (docs/cli.md "Exit statuses"):

* ``clean``: every compared value matches.
* ``refused``: a value differs; each reason names the session, the key and both values.
* ``unverified``: nothing differs, but something could not be derived again: the
  transcript's runner (identity ``harness``) is not this one, the batch is still being
  written, another runner's ``retranscribe`` re-derived what a session shows, a stream was
  not kept (``--no-keep-streams``) or is missing or unreadable, no init policy was
  recorded, or the workspace was discarded (``--discard-workspaces``) while the session
  produced artifacts whose digests and cites need it. Never a pass.

What is the ledger's own fact, not the stream's, is compared with the ledger: a session
decided before anything was streamed (a refused seal, say), an attempt the runner stopped,
the checker's findings (the checker is not run again), costs and start times.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from campaign.batch import (
    ArmTranscript,
    BatchFold,
    FinalRecord,
    Projection,
    RederivedRecord,
    SessionKey,
    read_ledger,
    session_order,
    session_paths,
    transcript_path,
    workspace_note,
)
from campaign.plan import runner_version

from ._retranscribe import rederive

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from campaign.batch import BatchReading
    from campaign.corpus import Corpus
    from recorder.transcript import Event, Identity, SessionRow, Transcript

Verdict = Literal["clean", "refused", "unverified"]

MAX_REASONS: Final = 20
"""Mismatches listed per file; the rest are counted (one forged key is enough to refuse)."""
MAX_NAMED: Final = 5
"""Sessions named per reason they could not be verified for; the rest are counted."""


@dataclass(frozen=True, slots=True)
class EvidenceCheck:
    """The answer for one transcript held to its batch.

    Attributes:
        verdict: ``clean``, ``refused`` (a value differs from its evidence) or
            ``unverified`` (something could not be derived again; never a pass).
        reasons: Empty when clean; else one line per mismatch (``refused``) and per
            session that could not be verified, each in words.
    """

    verdict: Verdict
    reasons: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Findings:
    mismatches: list[str] = field(default_factory=list)
    unverified: dict[str, list[str]] = field(default_factory=dict)
    """Why, to the sessions that could not be verified for it (none: the whole file)."""

    def unverify(self, why: str, session: str | None = None) -> None:
        names = self.unverified.setdefault(why, [])
        if session is not None:
            names.append(session)

    def _unverified_lines(self) -> list[str]:
        lines = []
        for why, names in self.unverified.items():
            if not names:
                lines.append(f"could not verify: {why}")
                continue
            named = ", ".join(names[:MAX_NAMED])
            if len(names) > MAX_NAMED:
                named = f"{len(names)} sessions ({named} and {len(names) - MAX_NAMED} more)"
            elif len(names) > 1:
                named = f"{len(names)} sessions ({named})"
            lines.append(f"{named}: could not verify {why}")
        return lines

    def result(self) -> EvidenceCheck:
        if self.mismatches:
            shown = self.mismatches[:MAX_REASONS]
            more = len(self.mismatches) - len(shown)
            if more:
                shown.append(f"and {more} more values that differ from their evidence")
            return EvidenceCheck("refused", shown + self._unverified_lines())
        if self.unverified:
            return EvidenceCheck("unverified", self._unverified_lines())
        return EvidenceCheck("clean")


def check_evidence(transcript: Transcript, *, reading: BatchReading,
                   corpus: Corpus, at: Path | None = None) -> EvidenceCheck:
    """Hold ``transcript`` (already read and well-formed) to the batch of ``reading``.

    Args:
        transcript: A transcript that passed the closed-model check, of any path: it is
            matched to the batch by its identity's arm, and its other identity members
            are compared with the batch's.
        reading: The batch, read (`campaign.batch.read_batch`, ``settle=False``).
        corpus: The corpus the batch ran over (its ids give the cites).
        at: Where the file was read from. A file inside the batch's ``transcripts/`` must be
            the transcript of the arm its name says: one whose identity names another arm
            (two arms' files swapped) is refused, since the grader and the report read each
            arm's file by its name.

    Returns:
        The `EvidenceCheck` (module docstring). Writes nothing.

    Raises:
        LedgerCorrupt: a ledger line is not one this runner writes.
        OSError: the ledger cannot be read.
    """
    found = _Findings()
    identity = transcript.identity
    ours = runner_version()
    if identity.harness != ours:
        found.unverify(
            f"the transcript was written by {_shown(identity.harness)} and this runner is "
            f"{_shown(ours)}: another runner's recorder may derive other events, so its "
            "events cannot be held to this one's")
        return found.result()
    if reading.running:
        found.unverify(
            "the batch is being written (a runner holds its lock): its transcripts lag "
            "its ledger until that runner stops")
        return found.result()
    if identity.arm not in reading.plan.arms:
        found.mismatches.append(
            f"identity: arm {_shown(identity.arm)} is not an arm of the batch "
            f"({', '.join(reading.plan.arms)})")
        return found.result()
    placed = transcript_path(reading.path, identity.arm)
    if (at is not None and at.resolve().parent == placed.parent.resolve()
            and at.resolve() != placed.resolve()):
        found.mismatches.append(
            f"identity: arm {identity.arm}, but the file is the batch's "  # a plan arm: checked
            f"{at.name}, the place of another arm's transcript (files swapped or copied "
            f"over?); arm {identity.arm}'s transcript is {placed.name}")
        return found.result()
    builder = _expected_arm(identity.arm, reading, corpus, found)
    frozen = builder.freeze()
    _, expected_identity = frozen.head()
    _compare_identity(identity, expected_identity, found)
    rows = {(r.probe, r.session): (r, ref) for r, ref in frozen.rows()}
    _compare_sessions(transcript, rows, frozen.event_at, found)
    return found.result()


def _expected_arm(arm: str, reading: BatchReading, corpus: Corpus,
                  found: _Findings) -> ArmTranscript:
    """The arm's transcript as the ledger makes it, each session's last attempt re-derived."""
    config, plan, batch = reading.config, reading.plan, reading.path
    builder = ArmTranscript(plan, arm, network=config.facts.network,
                            provider_note=config.facts.provider_note,
                            planned=(key for key, _ in reading.planned),
                            workspace_note=workspace_note(config))
    projection = Projection(BatchFold(reading.planned), {arm: builder})
    last: dict[SessionKey, FinalRecord] = {}
    other: dict[SessionKey, tuple[int, str]] = {}
    """Sessions whose shown row and event another runner's recorder re-derived (its
    ``retranscribe``): the attempt and that runner."""
    ours = runner_version()
    offset = 0
    for offset, record in enumerate(read_ledger(batch / "ledger.jsonl")):
        projection.apply(record, offset)
        if not isinstance(record, FinalRecord | RederivedRecord) or record.arm != arm:
            continue
        key = SessionKey(record.arm, record.probe, record.session)
        if isinstance(record, FinalRecord):
            last[key] = record
            other.pop(key, None)
        elif record.runner != ours:
            other[key] = (record.attempt, record.runner)
        else:
            other.pop(key, None)
    for key in sorted(last, key=session_order):
        attempt, runner = other.get(key, (0, ""))
        if attempt == last[key].attempt:  # the ledger's re-derivation stands, unverified
            found.unverify(f"the events: the recorder of {_shown(runner)} re-derived them "
                           "(retranscribe), and another runner's recorder may derive other "
                           "events", f"{key.arm} {key.probe}/{key.session}")
            continue
        redone = _rederived(last[key], reading, corpus, found)
        if redone is not None:
            offset += 1  # a reference of its own: the builder keeps events by it
            builder.rederived(redone, offset)
    return builder


def _rederived(final: FinalRecord, reading: BatchReading, corpus: Corpus,
               found: _Findings) -> RederivedRecord | None:
    """``final``'s attempt derived again, or None (the ledger's fact stands, and a reason
    is added when that leaves the session unverified)."""
    name = f"{final.arm} {final.probe}/{final.session}"
    batch = reading.path
    if not final.counts:  # the runner stopped it: its end is the runner's fact
        return None
    if final.stream is None:
        if not final.stream_bytes and not final.lines:
            return None  # nothing was streamed: decided before the harness spoke
        why = ("the batch kept no streams (--no-keep-streams)"
               if not reading.config.options.keep_streams else "no stream was kept")
        found.unverify(f"the events: {why}, so they cannot be derived again", name)
        return None
    if not (batch / final.stream).is_file():
        found.unverify(f"the events: the kept stream {_shown(final.stream)} is missing", name)
        return None
    if final.init_policy is None:
        found.unverify("the events: no init policy was recorded, so the stream cannot be "
                       "held to the check it was held to", name)
        return None
    try:
        redone = rederive(final, batch=batch, plan=reading.plan, corpus=corpus)
    except (OSError, ValueError) as exc:  # zstd's errors are ValueErrors
        found.unverify(f"the events: the kept stream {_shown(final.stream)} cannot be read "
                       f"({exc})", name)
        return None
    workspace = session_paths(batch, arm=final.arm, probe=final.probe,
                              session=final.session).workspace
    if redone.event is not None and redone.event.produced and not workspace.is_dir():
        gone = ("was discarded (--discard-workspaces)"
                if reading.config.options.discard_workspaces else "is missing")
        found.unverify(f"the produced artifacts: the session's workspace {gone}, and "
                       "their digests and cites are derived from its files", name)
    return redone


def _compare_identity(got: Identity, want: Identity, found: _Findings) -> None:
    """Each of the twelve identity members, the transcript's against the batch's."""
    for key in type(want).model_fields:
        mine, theirs = getattr(got, key), getattr(want, key)
        if mine != theirs:
            found.mismatches.append(
                f"identity: {key} is {_shown(mine)} in the transcript, {_shown(theirs)} "
                "in the batch")


def _compare_sessions(transcript: Transcript,
                      rows: dict[tuple[str, str], tuple[SessionRow, int | None]],
                      event_at: Callable[[int], Event], found: _Findings) -> None:
    """Rows and events, session by session: the transcript's against the evidence's
    (``rows``: each expected row with its event's reference for ``event_at``, or None)."""
    got_rows = {(r.probe, r.session): r for r in transcript.sessions}
    got_events = {(e.probe, e.session): e for e in transcript.events}
    arm = transcript.identity.arm
    for key in sorted(got_rows.keys() - rows.keys()):
        found.mismatches.append(f"{arm} {'/'.join(key)}: a row of the transcript, but the "
                                "batch's ledger has no final record of that session")
    for key in sorted(rows.keys() - got_rows.keys()):
        found.mismatches.append(f"{arm} {'/'.join(key)}: the batch's ledger has a final "
                                "record of that session, but the transcript has no row")
    for key in sorted(rows.keys() & got_rows.keys()):
        name = f"{arm} {'/'.join(key)}"
        want_row, ref = rows[key]
        got_row = got_rows[key]
        for column in ("state", "outside_paths"):
            mine, theirs = getattr(got_row, column), getattr(want_row, column)
            if mine != theirs:
                found.mismatches.append(f"{name}: {column} is {_shown(mine)} in the "
                                        f"transcript, {_shown(theirs)} from its evidence")
        got_event = got_events.get(key)
        if ref is None or got_event is None:
            continue  # a state mismatch above already says so
        want_event = event_at(ref)
        for where, mine, theirs in _differences(_as_written(got_event),
                                                _as_written(want_event)):
            found.mismatches.append(f"{name}: {where} is {mine} in the transcript, {theirs} "
                                    "from its evidence")


def _as_written(event: Event) -> dict[str, Any]:
    """The event's keys as the transcript writes them (RC-12: an absent key is not null)."""
    dumped: dict[str, Any] = event.model_dump(mode="json", exclude_unset=True)
    return dumped


_ABSENT: Final = object()


def _differences(got: Any, want: Any, where: str = "") -> Iterator[tuple[str, str, str]]:
    """(place, the transcript's value, the evidence's value) for each value that differs,
    as deep as both sides are the same shape."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            place = f"{where}.{key}" if where else str(key)
            yield from _differences(got.get(key, _ABSENT), want.get(key, _ABSENT), place)
    elif isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for i, (mine, theirs) in enumerate(zip(got, want, strict=True)):
            yield from _differences(mine, theirs, f"{where}[{i}]")
    elif got != want:
        yield where or "the event", _value(got), _value(want)


def _value(value: Any) -> str:
    if value is _ABSENT:
        return "absent"
    if isinstance(value, list):
        return f"a list of {len(value)} ({_shown(value)})"
    return _shown(value)


def _shown(value: object) -> str:
    """A value for a reason line: a string in double quotes as it is (the caller prints it
    through `campaign._terminal_text.one_line`, which escapes its controls), any other
    value as JSON text; a long one cut."""
    text = f'"{value}"' if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                  default=str)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text)} characters)"
