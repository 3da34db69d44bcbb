"""A transcript held to its batch before it is graded: its identity, and its events and
states against the ledger's.

The grader grades the transcripts (RC-13 keeps the recorder away from expected values), and
the report's answer tables come from the ledger; a transcript moved to another arm's file
name, copied from another batch, or edited by hand would make one page disagree with itself.
So, before any verdict:

* the arm is the transcript's own ``identity.arm``, and it must be the arm its file name
  says; its ``tree``, ``lock``, ``selection``, ``read_set``, ``seed`` and ``tier`` must be
  the batch plan's (`IDENTITY_MEMBERS`);
* each event's ``calls``, ``produced`` and ``answer`` must be those of its session's last
  final record in the ledger (or of the ``rederived`` record ``retranscribe`` wrote for that
  attempt, which the transcript shows in its place), each row's state the ledger's, and no
  event or row may name a session the ledger has not ended.

Any difference is refused (`TranscriptDiffers`, exit 2), never graded with a mark: a
refusal cannot be overlooked on a page. Memory: one small tuple of digests per session
(`LedgerView`), never the events themselves, so a 10,000-session ledger stays small.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from campaign.batch import FinalRecord, RederivedRecord, SessionKey

from ._errors import NotABatch, TranscriptDiffers

if TYPE_CHECKING:
    from pathlib import Path

    from campaign.batch import BatchFold, LedgerRecord
    from campaign.plan import Plan
    from recorder import Event
    from recorder.transcript import Transcript

IDENTITY_MEMBERS: Final = ("tree", "lock", "selection", "read_set", "seed", "tier")
"""The identity members a transcript shares with its batch's plan (RC-14)."""

EVENT_KEYS: Final = ("calls", "produced", "answer")
"""The event keys compared with the ledger's, in this order."""

_ABSENT: Final = "absent"


def event_digests(event: Event | None) -> tuple[str, ...]:
    """One short digest per `EVENT_KEYS` member of ``event`` as written (RC-12: an absent
    key is ``absent``, distinct from ``null``); all ``absent`` when ``event`` is None."""
    written = {} if event is None else event.model_dump(mode="json", exclude_unset=True)
    return tuple(
        hashlib.sha256(json.dumps(written[k], sort_keys=True).encode()).hexdigest()[:32]
        if k in written else _ABSENT for k in EVENT_KEYS)


@dataclass(slots=True)
class _Ended:
    attempt: int
    state: str
    digests: tuple[str, ...]


@dataclass
class LedgerView:
    """What the grader keeps of the ledger (a `campaign.batch.LedgerWatcher`): per session,
    its last final record's attempt, state and `event_digests`."""

    ended: dict[SessionKey, _Ended] = field(default_factory=dict)

    def record(self, record: LedgerRecord, fold: BatchFold) -> None:
        """Keep a final record's view; a ``rederived`` one replaces its attempt's."""
        if isinstance(record, FinalRecord):
            key = fold.key_of(record)  # the fold's own key: its strings are shared
            self.ended[key] = _Ended(record.attempt, record.state, event_digests(record.event))
        elif isinstance(record, RederivedRecord):
            key = SessionKey(record.arm, record.probe, record.session)
            ended = self.ended.get(key)
            if ended is not None and ended.attempt == record.attempt:
                ended.state = record.state
                ended.digests = event_digests(record.event)

    def interrupted(self, gone: list[tuple[SessionKey, int]]) -> None:
        """Attempts whose runner died: they have no final record, nothing to keep."""


def hold_identity(batch: Path, path: Path, arm: str, transcript: Transcript,
                  plan: Plan) -> None:
    """Refuse ``transcript`` (read from ``path``, the file of ``arm``) unless its identity
    names ``arm`` and the plan members `IDENTITY_MEMBERS` of ``plan``.

    Raises:
        NotABatch: naming the member, both values, and the command that holds a
            transcript to its batch.
    """
    identity = transcript.identity
    if identity.arm != arm:
        raise NotABatch(batch, (
            f"{path} is the file of arm {arm} but its identity names arm {identity.arm}; "
            "the arm is the transcript's own, so a file under another arm's name would "
            f"grade one arm as the other; `check-transcript {path} --batch {batch}` holds a "
            "transcript to its batch"))
    for member in IDENTITY_MEMBERS:
        mine, theirs = getattr(identity, member), getattr(plan, member)
        if mine != theirs:
            raise NotABatch(batch, (
                f"{path}'s identity has {member} {mine} and the batch's plan.yaml {theirs}, "
                "so it is another batch's transcript; `check-transcript "
                f"{path} --batch {batch}` holds a transcript to its batch"))


def hold_to_ledger(batch: Path, path: Path, arm: str, transcript: Transcript,
                   view: LedgerView) -> None:
    """Refuse ``transcript`` unless each row's state and each event's `EVENT_KEYS` are the
    ledger's for that session (module docstring).

    Raises:
        TranscriptDiffers: naming the session and the key.
    """
    for row in transcript.sessions:
        ended = view.ended.get(SessionKey(arm, row.probe, row.session))
        if ended is not None and ended.state != row.state:
            raise TranscriptDiffers(batch, path, f"{row.probe}/{row.session}",
                                    f"its state ({row.state} against {ended.state})")
    for event in transcript.events:
        name = f"{event.probe}/{event.session}"
        ended = view.ended.get(SessionKey(arm, event.probe, event.session))
        if ended is None or ended.state != "recorded":
            raise TranscriptDiffers(batch, path, name,
                                    "its event (the ledger has not recorded that session)")
        for key, mine, theirs in zip(EVENT_KEYS, event_digests(event), ended.digests,
                                     strict=True):
            if mine != theirs:
                raise TranscriptDiffers(batch, path, name, f"its {key}")
