"""One arm's transcript, built incrementally from the ledger's records (RC-14..RC-16).

`ArmTranscript` takes the arm's ``started`` and ``final`` records one at a
time (the journal hands each over as it is appended) and keeps only small
facts per session: its row, the ledger offset of its recorded final line (the
reference of its event), costs and versions. A recorded event is held only
until it is spooled: it waits in `ArmTranscript.pending` until the arm's
`ItemSpool` (on disk) has taken its proved item, which the next render does
(or, while a ledger is replayed, `ArmSpools.take` right after the record).
`ArmTranscript.freeze` then copies the facts, and the `FrozenArm` gives
`write_streamed` (in any thread) the head, the rows and the pending events.
Nothing is read back from the ledger. So a render is linear in the arm's
sessions, and holding a 10,000-session batch costs a few hundred bytes per
session, not its events.

Identity (RC-14): the six plan members copied unchanged; ``model`` the model
passed; ``served_version`` the most frequent served model of the recorded
sessions (the model name when none was recorded); ``at`` the first session's
start; ``cost_cents`` the ceiling of 100 x the sum of every attempt's cost,
unknown costs adding nothing and making the figure a stated lower bound. An attempt's cost
is RC-14's source for it (`campaign.batch._spend`): the provider's usage priced with the
shipped table when its final record has ``gateway``, the harness's figure otherwise; the
prose names the source(s) and how far the harness's figure stands from the provider's.
The system prompts the recorded sessions met (``request`` rows' digests) are counted per
digest (`campaign.batch._prompts`).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Final

from recorder import is_recorded
from recorder.transcript import (
    Event,
    Identity,
    SessionRow,
    prose_for,
    prose_value,
    served_version_of,
    system_prompts_line,
    unknown_init_keys_line,
)

from ._arm_prose import arm_tools_and_identity as arm_tools_and_identity
from ._arm_prose import incomplete_line as incomplete_line
from ._arm_prose import session_notes
from ._fold import SessionKey
from ._prompts import PromptTally
from ._spend import SpendSum, attempt_cost

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from campaign.plan import Plan

    from ._records import FinalRecord, RederivedRecord, RequestRecord, StartedRecord

_LISTED_SESSIONS: Final = 5
"""Sessions named per denied host in the prose; further ones are counted."""
_EPOCH: Final = "1970-01-01T00:00:00Z"
"""``at`` of an arm none of whose sessions has started (its transcript lists none)."""

GATEWAY_TARGET: Final = "through each session's own provider gateway"
"""The egress target the prose names for attempts made with the gateway (docs/gateway.md):
their proxy allowed only their gateway, which alone reaches the provider."""


@dataclass(slots=True)
class _Session:
    """The last final record's facts of one session, as its row and event need them."""

    state: str
    outside_paths: int
    event_offset: int | None
    """Ledger offset of the recorded final line: its event's reference in the arm's spool
    (or in `ArmTranscript.pending`); None when not recorded."""
    served_model: str | None
    notes: tuple[str, ...]
    anomalies: int
    attempt: int = 1
    """The attempt whose final record this is (a re-derivation applies to that attempt)."""
    rederived_by: str | None = None
    """The runner whose recorder re-derived the row and event from the kept stream, if any."""
    unknown_init_keys: tuple[str, ...] = ()
    """The init keys its last final record lists as not decided (RC-07)."""


def session_order(key: SessionKey) -> tuple[str, int, str]:
    """Rows and events sort by probe, then the session name's number, then the name."""
    digits = "".join(ch for ch in key.session if ch.isdigit())
    return (key.probe, int(digits) if digits else 0, key.session)


class ArmTranscript:
    """The growing transcript of one arm of a batch.

    Args:
        plan: The batch's plan (identity members, the arm's tools and identity).
        arm: The arm.
        network: The batch's network mode, for an arm whose sessions carry none.
        provider_note: One sentence on which provider the batch ran against.
        planned: The planned sessions of this arm (to count what is outstanding).
        workspace_note: One sentence on where the sessions saw their workspace
            (`campaign.batch._config.workspace_note`), or None for none.
    """

    def __init__(self, plan: Plan, arm: str, *, network: str,
                 provider_note: str, planned: Iterable[SessionKey] = (),
                 workspace_note: str | None = None) -> None:
        self.plan = plan
        self.arm = arm
        self._network = network
        self._provider_note = provider_note
        self._workspace_note = workspace_note
        self._planned = sum(1 for key in planned if key.arm == arm)
        self._sessions: dict[SessionKey, _Session] = {}
        self._first_start: str | None = None
        self._cost = SpendSum()
        """Every attempt's cost so far, by its source (unknown ones named in `_unknown_cost`)."""
        self._unknown_cost: list[str] = []
        self._prompts = PromptTally()
        self._versions: set[str] = set()
        self._modes: dict[str, dict[SessionKey, None]] = {}
        """Per network mode, its sessions in the order they first ended in it (the keys
        the caller gives, shared with the batch's fold, not a name made per session)."""
        self._allowed: Counter[str] = Counter()
        self._denied: dict[str, Counter[str]] = {}
        self._outstanding = 0
        self.pending: dict[int, Event] = {}
        """Recorded events by reference (their final line's ledger offset) that no spool
        holds yet; `spooled` forgets those a spool took (RC-15: the event as recorded)."""
        self.dirty = True
        """Changed since the last `freeze` (the renderer writes only dirty arms)."""

    def started(self, record: StartedRecord, key: SessionKey | None = None) -> None:
        """Take a ``started`` record of this arm (``key``: its session as the caller holds it)."""
        self._prompts.started(key or SessionKey(record.arm, record.probe, record.session))
        if self._first_start is None or record.at < self._first_start:
            self._first_start = record.at
            self.dirty = True

    def final(self, record: FinalRecord, offset: int, key: SessionKey | None = None) -> None:
        """Take a ``final`` record of this arm, written at ``offset`` of the ledger.

        ``key`` is the record's session as the caller holds it already (the fold's), so the
        builder keeps no second copy of its names; None makes one. A recorded record's
        event waits in `pending` under ``offset`` until a spool takes it.
        """
        key = key or SessionKey(record.arm, record.probe, record.session)
        name = f"{key.probe}/{key.session}"
        cost = attempt_cost(record)
        self._cost.add(cost)
        if cost.unknown:
            self._unknown_cost.append(f"{name} attempt {record.attempt}")
        self._prompts.final(key, recorded=is_recorded(record.state) and record.counts)
        if record.claude_code_version:
            self._versions.add(record.claude_code_version)
        if record.network:
            self._modes.setdefault(sys.intern(record.network), {})[key] = None
        egress = record.egress
        if egress is not None:
            # Since the gateway, each session's one target is its own gateway's loopback port:
            # one name for all of them, not one per session in the prose.
            target = GATEWAY_TARGET if record.gateway is not None else egress.allowed_target
            self._allowed[target] += egress.allowed
            for host, count in egress.denied.items():
                self._denied.setdefault(host, Counter())[name] += count
        served = record.served_model if is_recorded(record.state) else None
        self._hold(key, record.event, offset, is_recorded(record.state))
        self._sessions[key] = _Session(  # interned: one string per state and model, not session
            state=sys.intern(record.state), outside_paths=record.outside_paths,
            event_offset=offset if is_recorded(record.state) else None,
            served_model=None if served is None else sys.intern(served),
            notes=session_notes(name, record), anomalies=record.anomalies,
            attempt=record.attempt,
            unknown_init_keys=tuple(sys.intern(k) for k in record.unknown_init_keys or ()),
        )
        self.dirty = True

    def interrupted(self, key: SessionKey, attempt: int, rows_usd: Decimal | None = None) -> None:
        """Attempt ``attempt`` of ``key`` ran when its runner died: its cost is unknown
        (the figure becomes a lower bound, RC-14), and the prose names it; ``rows_usd``, its
        ``request`` rows priced so far, is realized spend and counts."""
        self._cost.add_interrupted(rows_usd)
        self._unknown_cost.append(f"{key.probe}/{key.session} attempt {attempt} (interrupted)")
        self.dirty = True

    def request(self, record: RequestRecord, key: SessionKey | None = None) -> None:
        """Take a ``request`` row of this arm: its system-prompt digest, for the prose (its
        cost is in the attempt's final record, or counted if the attempt is interrupted).
        Nothing the transcript shows changes until the attempt ends, so the arm stays clean
        (a batch's renders are not one per provider request)."""
        if record.system_digest is not None:
            self._prompts.request(key or SessionKey(record.arm, record.probe, record.session),
                                  record.system_digest)

    def rederived(self, record: RederivedRecord, offset: int) -> None:
        """Take a ``rederived`` record: it replaces its attempt's row and event, if that
        attempt is still the session's last."""
        key = SessionKey(record.arm, record.probe, record.session)
        current = self._sessions.get(key)
        if current is None or current.attempt != record.attempt:
            return
        recorded = is_recorded(record.state)
        self._hold(key, record.event, offset, recorded)
        self._sessions[key] = _Session(
            state=record.state, outside_paths=record.outside_paths,
            event_offset=offset if recorded else None,
            served_model=record.served_model if recorded else None, notes=current.notes,
            anomalies=current.anomalies, attempt=record.attempt, rederived_by=record.runner,
            unknown_init_keys=current.unknown_init_keys)
        self.dirty = True

    def _hold(self, key: SessionKey, event: Event | None, offset: int, recorded: bool) -> None:
        """Keep a recorded record's event pending under ``offset`` (RC-15); the session's
        earlier event, if one still waits, is replaced and goes."""
        current = self._sessions.get(key)
        if current is not None and current.event_offset is not None:
            self.pending.pop(current.event_offset, None)
        if recorded and event is not None:
            self.pending[offset] = event

    def spooled(self, refs: Iterable[int]) -> None:
        """A spool holds the events of ``refs`` now: stop holding them (on the feeding thread)."""
        for ref in refs:
            self.pending.pop(ref, None)

    def set_outstanding(self, count: int) -> None:
        """How many planned sessions of this arm are not finished (said in the prose)."""
        if count != self._outstanding:
            self._outstanding = count
            self.dirty = True

    def freeze(self) -> FrozenArm:
        """A copy of what the arm knows now (cheap: shallow copies), to build in another thread.

        Call on the thread that feeds `started`/`final`; build the copy anywhere.
        """
        self.dirty = False
        return FrozenArm(
            plan=self.plan, arm=self.arm, network=self._network,
            provider_note=self._provider_note, planned=self._planned,
            workspace_note=self._workspace_note, sessions=dict(self._sessions),
            first_start=self._first_start,
            cost=self._cost.copy(), unknown_cost=list(self._unknown_cost),
            prompts=self._prompts.copy(),
            versions=sorted(self._versions),
            modes={mode: list(keys) for mode, keys in self._modes.items()},
            allowed=Counter(self._allowed),
            denied={host: Counter(c) for host, c in self._denied.items()},
            outstanding=self._outstanding, pending=dict(self.pending),
        )


@dataclass(frozen=True, slots=True)
class FrozenArm:
    """What an `ArmTranscript` knew at one moment: its `head`, `rows` and the events no
    spool held yet (`event_at`), which `recorder.transcript.write_streamed` writes."""

    plan: Plan
    arm: str
    network: str
    provider_note: str
    planned: int
    workspace_note: str | None
    sessions: dict[SessionKey, _Session]
    first_start: str | None
    cost: SpendSum
    """Every attempt's cost by its source (`unknown_cost` names the unknown ones)."""
    unknown_cost: list[str]
    versions: list[str]
    modes: dict[str, list[SessionKey]]
    allowed: Counter[str]
    denied: dict[str, Counter[str]]
    outstanding: int
    pending: dict[int, Event]
    """The recorded events no spool held when frozen, by reference."""
    prompts: PromptTally = field(default_factory=PromptTally)
    """The system-prompt digests the recorded sessions met."""

    def rows(self) -> Iterator[tuple[SessionRow, int | None]]:
        """The table's rows in order, each with its recorded event's ledger offset or None.

        Builds one `SessionRow` at a time (`recorder.transcript.write_streamed`'s ``rows``).
        """
        for key in sorted(self.sessions, key=session_order):
            s = self.sessions[key]
            yield (SessionRow(probe=key.probe, session=key.session, state=s.state,
                              outside_paths=s.outside_paths), s.event_offset)

    def event_at(self, ref: int) -> Event:
        """The pending event of reference ``ref`` (what `write_streamed` spools when its
        spool does not hold the reference yet).

        Raises:
            KeyError: no event is pending under ``ref`` (the spool lost one it held: a bug).
        """
        try:
            return self.pending[ref]
        except KeyError:
            raise KeyError(f"{self.arm}: no event is pending or spooled under the ledger "
                           f"offset {ref}") from None

    def head(self) -> tuple[str, Identity]:
        """The prose and the identity (linear in sessions; reads no event)."""
        served: Counter[str] = Counter()
        notes: list[str] = []
        outside = 0
        for key in sorted(self.sessions, key=session_order):
            s = self.sessions[key]
            notes += s.notes
            outside += s.outside_paths
            if s.event_offset is not None and s.served_model:
                served[s.served_model] += 1
        plan = self.plan
        cost = self.cost.cost_sum().figure()
        mode, network_lines = self._network_prose()
        identity = Identity(
            model=plan.model, served_version=served_version_of(served.elements(),
                                                               fallback=plan.model),
            tree=plan.tree, lock=plan.lock, selection=plan.selection, read_set=plan.read_set,
            seed=plan.seed, harness=plan.runner_version, tier=plan.tier, arm=self.arm,
            at=self.first_start or _EPOCH, cost_cents=cost.cents,
        )
        tools, arm_line = arm_tools_and_identity(plan, self.arm)
        extra = [self.provider_note, *network_lines, *notes]
        if self.workspace_note:
            extra.insert(1, self.workspace_note)
        rederived = Counter(s.rederived_by for s in self.sessions.values() if s.rederived_by)
        for runner, count in sorted(rederived.items()):
            extra.append(f"The rows and events of {count} sessions were re-derived from the "
                         f"streams the runner kept, by the recorder of {runner} "
                         "(retranscribe); their costs stay those of the original attempts.")
        prompts = system_prompts_line(self.prompts.digests, self.prompts.sessions)
        if prompts:
            extra.append(prompts)
        unknown = Counter(k for s in self.sessions.values() for k in s.unknown_init_keys)
        if unknown:
            extra.append(unknown_init_keys_line(unknown))
        if self.outstanding:
            extra.append(incomplete_line(self.outstanding, self.planned or len(self.sessions)))
        prose = prose_for(
            arm=identity.arm, tier=plan.tier, allowed_tools=list(tools), network=mode,
            claude_code_versions=self.versions, served_versions=served, cost=cost,
            unknown_cost_sessions=self.unknown_cost, outside_paths_total=outside,
            anomalies_total=sum(s.anomalies for s in self.sessions.values()),
            arm_identity=arm_line, extra=extra, cost_source=self.cost.source(),
        )
        return prose, identity

    def _network_prose(self) -> tuple[str, list[str]]:
        """The mode of the arm's sessions and the prose lines about their egress."""
        modes = self.modes
        mode = self.network if not modes else next(iter(modes)) if len(modes) == 1 else "mixed"
        lines: list[str] = []
        if len(modes) > 1:
            listed = ", ".join(f"{m} ({len(names)})" for m, names in sorted(modes.items()))
            open_ = ", ".join(f"{k.probe}/{k.session}" for k in modes.get("host", [])) or "none"
            lines.append(f"Network modes differ across this arm's sessions: {listed}; the "
                         f"channel was open for the host sessions: {open_}.")
        if "confined" in modes:
            targets = ", ".join(f"{t} ({n} relayed)" for t, n in sorted(
                self.allowed.items(), key=lambda item: (item[0] != GATEWAY_TARGET, item[0])))
            lines.append(f"Egress proxy: allowed only the provider, {targets or 'none'}.")
            total = sum(sum(c.values()) for c in self.denied.values())
            named = [f"{prose_value(host)} x{sum(c.values())} ({_names(c)})"  # the session's
                     for host, c in sorted(self.denied.items())]
            lines.append(f"Denied connections: {total}"
                         + (f": {', '.join(named)}." if named else "."))
        return mode, lines


def _names(counts: Counter[str]) -> str:
    names = list(counts)
    shown = ", ".join(names[:_LISTED_SESSIONS])
    more = len(names) - _LISTED_SESSIONS
    return shown + (f" and {more} more" if more > 0 else "")
