"""The ledger's records: one typed model per kind of line in ``ledger.jsonl``.

Every line of the ledger is one of these, tagged by ``kind`` (docs/batch.md
lists each with its fields). They are closed (an unknown key refuses the
line) because the ledger is the batch's evidence: a line the runner did not
write is not evidence. The kinds:

* ``ledger``     - the first line: the format version.
* ``invocation`` - a command started writing the batch (run, demo, resume, record),
  with the per-invocation options (retries, budgets).
* ``started``    - an attempt of a session began (its position in the batch order).
* ``final``      - that attempt ended, in exactly one state (docs/batch.md "Session states").
* ``request``    - one provider request of an attempt, as its gateway saw it, priced.
* ``budget-stop``- a budget stopped the batch from starting further sessions.
* ``stopped``    - an invocation ended: done, a signal, a budget, a refused write, an
  unexpected error (a bug).
* ``rederived``  - ``retranscribe`` re-derived an attempt from its kept stream.
* ``torn``       - a torn last line (a crash mid-append) was set aside at open.
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FieldSerializationInfo,
    StringConstraints,
    TypeAdapter,
    field_serializer,
    model_validator,
)

from campaign._json_text import json_safe
from recorder import Arm, Call, DriveEnd, Event, SessionState
from sandbox import LimitName
from sandbox.gateway import Refusal

from ._record_parts import (
    AnomalyLine,
    Bounded,
    Cost,
    EgressCounts,
    GatewayCounts,
    InitPolicyRecord,
    OrphanResultLine,
    TokenUsage,
    UnreadArtifact,
)

LEDGER_FORMAT: Final = 1
"""Version of the ledger's record shapes; a ledger of another version is refused."""

Command: TypeAlias = Literal["run", "demo", "resume", "record"]
StopReason: TypeAlias = Literal["done", "signal", "budget", "write-refused", "error"]
Budget: TypeAlias = Literal["cost", "wall"]


def utc_now() -> str:
    """Now as RFC 3339 UTC with second precision, e.g. ``2026-11-30T12:00:00Z``."""
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Stamp: TypeAlias = Annotated[
    str, StringConstraints(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")]
"""A time the runner writes: RFC 3339 UTC with second precision (`utc_now`); a line
with any other text there is not the runner's."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _strict_strings(cls, data: Any) -> Any:
        """Every string as `campaign._json_text.json_text` writes it (a lone surrogate as
        ``\\xHH``): a record holds what its ledger line holds, in UTF-8 any strict JSON
        reader takes (docs/batch.md, "Names that are not UTF-8"). A typed part given as a
        model (an `Event`, a `Call`) is kept as given when it holds no such string."""
        if not isinstance(data, dict):
            return json_safe(data)
        return {json_safe(k): _safe_value(v) for k, v in data.items()}


def _safe_value(value: Any) -> Any:
    """``value`` with `json_safe` applied; a model (or a list of models) as its dump when
    that changes a string of it, else the model itself."""
    if isinstance(value, BaseModel):
        dumped = value.model_dump(exclude_unset=True)
        safe = json_safe(dumped)
        return value if safe == dumped else safe
    if isinstance(value, list | tuple) and any(isinstance(v, BaseModel) for v in value):
        return [_safe_value(v) for v in value]
    return json_safe(value)


def _as_written(value: object, info: FieldSerializationInfo) -> Any:
    """A recorder model as the ledger writes it: only the keys it was given (RC-12); a
    value that is no model (a record made without validation) as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode=info.mode, exclude_unset=True)
    return value


class LedgerHeader(_Record):
    """The first line of every ledger."""

    kind: Literal["ledger"] = "ledger"
    format: Literal[1] = LEDGER_FORMAT
    at: Stamp = Field(default_factory=utc_now)


class InvocationRecord(_Record):
    """A command began writing this batch; numbered 1, 2, ... in ledger order."""

    kind: Literal["invocation"] = "invocation"
    number: int
    """1 for the command that made the batch, one more for each later run, resume or record."""
    command: Command
    pid: int
    """The runner's process id (``status`` names it while the batch is locked)."""
    runner: str
    """``headwater-campaign <version>`` of this invocation."""
    retries: int
    """At most this many further attempts per session in this invocation."""
    max_cost_cents: int | None
    """The batch's cost budget as a total over every attempt, cents; None = none."""
    est_session_cents: int | None
    """The projection per session in flight before any session has a cost, cents."""
    max_wall_s: float | None
    """This invocation's wall-clock budget in seconds; None = none."""
    hard_wall: bool = False
    """At ``max_wall_s`` this invocation cancels the sessions still running (``--hard-wall``)."""
    at: Stamp = Field(default_factory=utc_now)


class SessionRef(_Record):
    """The fields that name one attempt of one session."""

    arm: Arm
    probe: str
    session: str
    """The session's name, distinct within its probe and arm (``s<repetition>``, ``r<N>``)."""
    repetition: int
    """1-based repetition of the plan; 0 for a session named by ``record``."""
    attempt: int
    """1-based, over every invocation: attempt 2 and later are retries or reruns."""
    invocation: int
    """The `InvocationRecord.number` that ran this attempt."""


class _WritesEvents(_Record):
    """A record whose ``event`` and ``calls`` are written as the transcript writes them:
    only the keys each was given (RC-12: an absent key and ``null`` are two facts)."""

    @field_serializer("event", check_fields=False)
    def _event_as_written(self, event: Event | None, info: FieldSerializationInfo) -> Any:
        return _as_written(event, info)

    @field_serializer("calls", check_fields=False)
    def _calls_as_written(self, calls: list[Call] | None,
                          info: FieldSerializationInfo) -> list[Any] | None:
        return None if calls is None else [_as_written(c, info) for c in calls]


class StartedRecord(SessionRef):
    """An attempt began (the seal is next)."""

    kind: Literal["started"] = "started"
    position: int | None
    """0-based index of the session in the batch order (docs/batch.md); None for ``record``."""
    at: Stamp = Field(default_factory=utc_now)


class FinalRecord(SessionRef, _WritesEvents):
    """An attempt ended in exactly one state (docs/batch.md "Session states")."""

    kind: Literal["final"] = "final"
    started_at: Stamp
    at: Stamp = Field(default_factory=utc_now)
    state: SessionState
    reason: str
    """Why, in words, naming the rule (the provider's status for a harness-error)."""
    retryable: bool
    """docs/batch.md's retryable column for this attempt (harness-error: provider errors)."""
    cost_usd: Cost | None
    """``total_cost_usd`` of the last result line, exact USD (the ledger: its JSON text, a
    string); None = no cost read (see ``cost_known``)."""
    cost_known: bool
    """False when the stream may have ended before its result line: the cost is unknown."""
    outside_paths: int = 0
    """RC-08: distinct paths outside the workspace the session named."""
    anomalies: int = 0
    """Non-JSON stdout lines (RC-07), counted."""
    served_model: str | None = None
    claude_code_version: str | None = None
    api_error_status: int | None = None
    exit_status: int | None = None
    end: DriveEnd | None = None
    """How the driver saw the stream end (exited, timed-out, watchdog, line-too-long, ...)."""
    duration_s: float | None = None
    lines: int | None = None
    network: Literal["confined", "host"] | None = None
    egress: EgressCounts | None = None
    """The egress proxy's counts (allowed target, relayed, denied per host, most open)."""
    limit: LimitName | None = None
    """The per-session limit the sandbox saw passed and ended the session for (``processes``,
    ``memory``, ``tmp``, ``writes``, ``connections``, or ``stdout``, which the runner's
    reader counts: ``end`` is then ``stdout-limit``; the stream does not hold it, so
    ``retranscribe`` keeps it); None when it passed none."""
    event: Event | None = None
    """For ``recorded``: the event, written exactly as the transcript writes it (RC-15)."""
    calls: list[Call] | None = None
    """For any other state that saw tool calls: the calls, so nothing observed is lost."""
    anomaly_lines: list[AnomalyLine] | None = None
    """The first non-JSON stdout lines (RC-07), each with its number, size and start."""
    orphan_results: list[OrphanResultLine] | None = None
    """tool_results that answered no tool_use seen before them (RC-10)."""
    findings_note: str | None = None
    """Why the artifacts carry no findings key (the checker could not run), if it ran at all."""
    counts: bool = True
    """False when the attempt ended because the runner stopped (a signal): it does not
    count against ``--retries``."""
    stream: str | None = None
    """The kept stream, batch-relative (``sessions/.../attempt-<n>/stdout.jsonl.zst``)."""
    stream_bytes: int | None = None
    """Stdout bytes received (what the kept stream decompresses to)."""
    permission_denials: list[str] | None = None
    """The tool of each call the harness's permission rules denied (its arm's allowed-tools
    list gave no such tool), in order, from the last result line; None when none was."""
    unread_artifacts: list[UnreadArtifact] | None = None
    """Produced files inside the workspace not read after the session (``path``, ``reason``,
    ``size_bytes``): a symlink, not a regular file, over the size cap. Their events keep
    ``path`` only."""
    init_policy: InitPolicyRecord | None = None
    """What the init check held the stream to (permission mode, declared MCP servers, host
    skill names, config directory), so ``retranscribe`` can hold it to the same."""
    unknown_init_keys: list[str] | None = None
    """The init lines' keys the recorder has not decided (RC-07; docs/recorder.md "Every init
    key decided"), as the session printed them, first seen first, bounded in number and
    length; never a refusal by themselves. None (absent: older batches) when there was none."""
    gateway: GatewayCounts | None = None
    """What the attempt's provider gateway counted and the provider cost it priced; None
    (absent) for attempts written before the gateway: their cost is the harness's."""


class RequestRecord(SessionRef):
    """One provider request as its gateway saw it (`sandbox.gateway.ProviderRequest`),
    priced; written when its response has ended, so a kill keeps every request before it."""

    kind: Literal["request"] = "request"
    at: Stamp
    """When the request arrived."""
    method: Bounded
    path: Bounded
    status: int | None
    refused: Refusal | None = None
    request_id: Bounded | None = None
    message_id: Bounded | None = None
    model: Bounded | None = None
    """The served model (``message_start``'s ``message.model``)."""
    requested_model: Bounded | None = None
    usage: TokenUsage | None = None
    stop_reason: Bounded | None = None
    latency_s: float | None = None
    duration_s: float
    system_digest: Bounded | None = None
    upstream_error: Bounded | None = None
    cost_usd: Cost | None = None
    """The request's cost, exact USD, from ``usage`` and the price table; None when unknown
    (no usage read, or a model the table lacks)."""
    prices: str | None = None
    """The price table's date (``YYYY-MM-DD``) when the request was priced."""


class BudgetStopRecord(_Record):
    """A budget stopped the batch from starting sessions (exit 3; resumable)."""

    kind: Literal["budget-stop"] = "budget-stop"
    invocation: int
    budget: Budget
    limit: float
    """The budget: cents for ``cost``, seconds for ``wall``."""
    used: float
    """Spent cents (every attempt) or elapsed seconds of this invocation when it stopped."""
    projection: float
    """The projected cost (cents) or duration (seconds) of one more session."""
    in_flight: int
    at: Stamp = Field(default_factory=utc_now)


class StoppedRecord(_Record):
    """An invocation ended; ``outstanding`` sessions of the plan are not final yet."""

    kind: Literal["stopped"] = "stopped"
    invocation: int
    reason: StopReason
    detail: str
    outstanding: int
    at: Stamp = Field(default_factory=utc_now)


class RederivedRecord(SessionRef, _WritesEvents):
    """``retranscribe`` re-derived an attempt's outcome from its kept stream.

    The transcripts show it in place of the attempt's own final record; the
    attempt's cost, retries and the batch's resume decisions keep the original.
    """

    kind: Literal["rederived"] = "rederived"
    runner: str
    """``headwater-campaign <version>`` whose recorder re-derived it."""
    state: SessionState
    reason: str
    outside_paths: int = 0
    served_model: str | None = None
    event: Event | None = None
    """For ``recorded``: the event as the transcript writes it."""
    calls: list[Call] | None = None
    at: Stamp = Field(default_factory=utc_now)


class TornRecord(_Record):
    """A last line without its newline (a crash mid-append) was moved out of the ledger."""

    kind: Literal["torn"] = "torn"
    offset: int
    """Byte offset in ``ledger.jsonl`` where the fragment began (the ledger was cut there)."""
    size_bytes: int
    set_aside: str
    """The batch-relative file that now holds the fragment, byte for byte."""
    at: Stamp = Field(default_factory=utc_now)


LedgerRecord: TypeAlias = Annotated[
    LedgerHeader
    | InvocationRecord
    | StartedRecord
    | FinalRecord
    | RequestRecord
    | BudgetStopRecord
    | StoppedRecord
    | RederivedRecord
    | TornRecord,
    Field(discriminator="kind"),
]
"""Any line of the ledger, told apart by ``kind``."""

RECORD_ADAPTER: Final[TypeAdapter[LedgerRecord]] = TypeAdapter(LedgerRecord)
"""Validates one decoded JSON line into its record type (raises pydantic ValidationError)."""
