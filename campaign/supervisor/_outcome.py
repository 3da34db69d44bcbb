"""How one attempt ended, typed: `AttemptOutcome`, and the ledger's final record made of it.

Every way an attempt ends (a refused seal, a refused confinement, a drive concluded, a
stop by the runner) is one `AttemptOutcome`; `final_record` is the one place that turns
it into the ledger's `FinalRecord` (docs/batch.md "The ledger"), by name, field by field.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from campaign.batch import (
    AnomalyLine,
    EgressCounts,
    FinalRecord,
    GatewayCounts,
    InitPolicyRecord,
    OrphanResultLine,
    UnreadArtifact,
)

if TYPE_CHECKING:

    from recorder import (
        Anomaly,
        Call,
        DriveEnd,
        Event,
        InitPolicy,
        OrphanResult,
        SessionState,
        UnreadFile,
    )
    from sandbox import LimitName, NetworkMode
    from sandbox.gateway import Gateway

    from ._gate import AttemptGate
    from ._spec import SessionSpec


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """What one attempt's final record says beyond the session it names (docs/batch.md,
    "Session states" for ``state`` and ``retryable``; the fields as `FinalRecord`'s)."""

    state: SessionState
    reason: str
    retryable: bool
    """docs/batch.md's retryable column (a harness-error: the provider's status decides)."""
    cost_usd: Decimal | None = None
    """The last result line's ``total_cost_usd``, exact USD; None: none read."""
    cost_known: bool = True
    """False when the stream may have ended before its result line (a cost was spent)."""
    counts: bool = True
    """False for an attempt the runner stopped: it does not count against ``--retries``."""
    outside_paths: int = 0
    anomalies: int = 0
    served_model: str | None = None
    """The served model: the provider gateway's row for the final message (`gated`), else
    the stream's ``message.model`` of the last main-thread assistant line."""
    served_message_id: str | None = None
    """``message.id`` of the stream's last main-thread assistant line (the row's key)."""
    claude_code_version: str | None = None
    api_error_status: int | None = None
    exit_status: int | None = None
    end: DriveEnd | None = None
    duration_s: float | None = None
    lines: int | None = None
    network: NetworkMode | None = None
    egress: EgressCounts | None = None
    """The egress proxy's counts once the harness has exited (None: ``--network host``)."""
    gateway: GatewayCounts | None = None
    """The provider gateway's counts and priced cost once every request has ended (`gated`);
    None when the attempt never had a gateway (refused before it opened)."""
    limit: LimitName | None = None
    event: Event | None = None
    calls: tuple[Call, ...] | None = None
    anomaly_lines: tuple[Anomaly, ...] = ()
    orphan_results: tuple[OrphanResult, ...] = ()
    findings_note: str | None = None
    stream: str | None = None
    stream_bytes: int | None = None
    permission_denials: tuple[str, ...] = ()
    unread_artifacts: tuple[UnreadFile, ...] = ()
    init_policy: InitPolicy | None = None
    unknown_init_keys: tuple[str, ...] = ()
    """The init keys the recorder has not decided (RC-07), as the stream printed them."""
    final_text: str | None = None
    """The session's final text (RC-13), written beside the kept stream, not in the ledger."""


def final_record(outcome: AttemptOutcome, spec: SessionSpec, *, attempt: int, invocation: int,
                 started: str) -> FinalRecord:
    """The ledger's final record of attempt ``attempt`` of ``spec``, ended as ``outcome``."""
    policy = outcome.init_policy
    return FinalRecord(
        arm=spec.arm.arm, probe=spec.probe.id, session=spec.session,
        repetition=spec.repetition, attempt=attempt, invocation=invocation,
        started_at=started, state=outcome.state, reason=outcome.reason,
        retryable=outcome.retryable, cost_usd=outcome.cost_usd,
        cost_known=outcome.cost_known, counts=outcome.counts,
        outside_paths=outcome.outside_paths, anomalies=outcome.anomalies,
        served_model=outcome.served_model, claude_code_version=outcome.claude_code_version,
        api_error_status=outcome.api_error_status, exit_status=outcome.exit_status,
        end=outcome.end, duration_s=outcome.duration_s, lines=outcome.lines,
        network=outcome.network, egress=outcome.egress, gateway=outcome.gateway,
        limit=outcome.limit,
        event=outcome.event, calls=None if outcome.calls is None else list(outcome.calls),
        anomaly_lines=[AnomalyLine.of(a) for a in outcome.anomaly_lines] or None,
        orphan_results=[OrphanResultLine.of(o) for o in outcome.orphan_results] or None,
        findings_note=outcome.findings_note, stream=outcome.stream,
        stream_bytes=outcome.stream_bytes,
        permission_denials=list(outcome.permission_denials) or None,
        unread_artifacts=[UnreadArtifact.of(u) for u in outcome.unread_artifacts] or None,
        init_policy=None if policy is None else InitPolicyRecord.of(policy),
        unknown_init_keys=list(outcome.unknown_init_keys) or None,
    )


def gated(outcome: AttemptOutcome, gate: AttemptGate, gateway: Gateway) -> AttemptOutcome:
    """``outcome`` with its provider gateway's final counts (``gateway``), once every request
    has ended, and its served model from the provider's own metadata: the model of the row
    whose ``message_id`` is the stream's last main-thread assistant line's ``message.id``;
    the stream's ``message.model`` when no row carries that id."""
    served = gate.served_model(outcome.served_message_id) or outcome.served_model
    return replace(outcome, gateway=gate.counts(gateway.stats()), served_model=served)
