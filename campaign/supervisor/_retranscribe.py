"""Re-derive a batch's events from the streams its runner kept, with the current recorder.

For each session whose last attempt kept its stream (``attempt-<n>/stdout.jsonl.zst``),
the stream is read again through a fresh `StreamObserver`, held to the same
init policy the attempt was held to (the final record keeps it), and ended
as the driver saw it end (the final record's ``end`` and exit status). A
recorded session gets its event built again over its kept workspace and
manifest; when the workspace was discarded, its produced artifacts' digests
and cites come from the ledger's event. Nothing runs and nothing is spent.
Each result is appended as a ``rederived`` record, and the transcripts show it
in place of the attempt's own (their prose says which recorder derived them).
An ``uncontained`` attempt stays ``uncontained`` (its end is the sandbox's fact,
not the stream's; nothing of its workspace was kept): only its calls are derived again.
So does a state the provider gateway decided (``budget-stopped``, a login it could not use:
`gateway_decided`): the stream shows only the harness's side of those refusals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from campaign._json_text import json_text
from campaign.batch import FinalRecord, RederivedRecord, SessionKey, read_ledger, session_paths
from campaign.plan import runner_version
from recorder import Call, Event, StreamObserver, build_event, is_recorded, observed_calls

from ._facts import uncontained_reason
from ._streams import stream_lines

if TYPE_CHECKING:
    from collections.abc import Mapping

    from campaign.batch import Journal
    from campaign.corpus import Corpus
    from campaign.plan import Plan


@dataclass(slots=True)
class RetranscribeCounts:
    """What `retranscribe` did, for the console."""

    rederived: int = 0
    changed: list[str] = field(default_factory=list)
    """Sessions whose state or event came out different from the ledger's."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Why sessions were left as they are (no stream kept, no policy recorded), counted."""


def last_finals(ledger: Path) -> dict[SessionKey, FinalRecord]:
    """Each session's last final record, in ledger order."""
    last: dict[SessionKey, FinalRecord] = {}
    for record in read_ledger(ledger):
        if isinstance(record, FinalRecord):
            last[SessionKey(record.arm, record.probe, record.session)] = record
    return last


def rederive(final: FinalRecord, *, batch: Path, plan: Plan, corpus: Corpus) -> RederivedRecord:
    """The outcome of ``final``'s attempt, derived again from its kept stream.

    Raises:
        OSError: the kept stream cannot be read.
        ValueError: the final record kept no stream or no init policy.
    """
    if final.stream is None or final.init_policy is None:
        raise ValueError("no kept stream or no recorded init policy")
    paths = session_paths(batch, arm=final.arm, probe=final.probe, session=final.session)
    policy = final.init_policy.policy()
    # The workspace path the session saw; an attempt of a batch of format 1 saw the host path
    # its workspace had then, which its init line's cwd tells (the batch may have moved since).
    observer = StreamObserver(policy=policy, workspace=paths.workspace, inside=policy.cwd,
                              inside_from_init=policy.cwd is None)
    tail: bytes | None = None
    for line, whole in stream_lines(batch / final.stream):
        if whole:
            observer.feed(line)
        else:
            tail = line
    end = final.end or "exited"
    # A limit the sandbox saw passed is not in the stream: it stays what the runner saw.
    obs = observer.finish(end=end, exit_status=final.exit_status,
                          tail=None if end == "line-too-long" else tail,
                          limit_exceeded=final.reason if final.limit is not None else None)
    manifest = _manifest(paths.manifest)
    reason = obs.reason
    if obs.lines == 0 and final.reason.startswith(obs.reason):
        reason = final.reason  # what stderr said of a silent harness is not in the stream
    if obs.state == "line-too-long" == final.state:
        reason = final.reason  # the reader's words on the line (its size): not in the stream
    state = obs.state
    if final.state == "uncontained":  # a fact of the sandbox's end, not of the stream
        state, reason = "uncontained", uncontained_reason(reason)
    elif gateway_decided(final):  # a fact of the gateway's refusals, not of the stream
        state, reason = final.state, final.reason
    event: Event | None = None
    calls: list[Call] | None = None
    if is_recorded(state):
        probe = next(p for p in plan.probes if p.id == final.probe)
        event = build_event(obs, probe=final.probe, session=final.session,
                            workspace=paths.workspace, manifest=manifest,
                            declared_answers=probe.answers, corpus_ids=corpus.ids,
                            findings=_findings(final), inside=observer.inside)
        if not paths.workspace.is_dir():
            event = _produced_from_ledger(event, final)
    else:
        calls = observed_calls(obs.calls, workspace=paths.workspace, manifest=manifest,
                               inside=observer.inside)
    return RederivedRecord(arm=final.arm, probe=final.probe, session=final.session,
                           repetition=final.repetition, attempt=final.attempt,
                           invocation=final.invocation, runner=runner_version(), state=state,
                           reason=reason, outside_paths=len(obs.outside_paths),
                           served_model=obs.served_model, event=event, calls=calls)


def gateway_decided(final: FinalRecord) -> bool:
    """Whether the attempt's state is its provider gateway's verdict, not its stream's.

    The gateway's refusals replace what the stream says (`AttemptGate.verdict`, docs/batch.md
    "Session states"): a budget refusal ends the attempt ``budget-stopped``, and a login the
    gateway could not use ends it ``harness-error``, whatever the harness printed (it saw a
    400 or 401 and ended as its result line says). The stream alone cannot tell either, so a
    re-derivation keeps the final record's state and reason; the refusals are in its
    ``gateway`` counts (``refused["budget"]``, ``login_failure``).
    """
    gateway = final.gateway
    if gateway is None:
        return False
    return gateway.login_failure is not None or gateway.refused.get("budget", 0) > 0


def _manifest(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class _ByLedgerPath(dict[str, list[str]]):
    """Findings by the ledger's path, looked up by the path as the stream names it: the
    ledger writes a name that is not UTF-8 as `campaign._json_text.json_text` does."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(json_text(key), default)


def _findings(final: FinalRecord) -> Mapping[str, list[str]] | None:
    """The checker's findings as the ledger's event holds them (the checker is not run again)."""
    produced = final.event.produced or [] if final.event is not None else []
    found = _ByLedgerPath({a.path: list(a.findings) for a in produced if a.findings is not None})
    return found or None


def _produced_from_ledger(event: Event, final: FinalRecord) -> Event:
    """With the workspace discarded, artifacts keep the digests and cites the ledger has."""
    before = {a.path: a for a in (final.event.produced or [] if final.event else [])}
    produced = [before.get(json_text(a.path), a) for a in event.produced or []]
    return event.model_copy(update={"produced": produced})


async def retranscribe(journal: Journal, *, batch: Path, plan: Plan,
                       corpus: Corpus) -> RetranscribeCounts:
    """Re-derive every session's last attempt that kept its stream; append the records.

    Raises:
        OSError: the host refused a write to the ledger.
    """
    counts = RetranscribeCounts()
    for key, final in sorted(last_finals(batch / "ledger.jsonl").items()):
        reason = _skip_reason(final, batch)
        if reason is not None:
            counts.skipped[reason] = counts.skipped.get(reason, 0) + 1
            continue
        record = rederive(final, batch=batch, plan=plan, corpus=corpus)
        await journal.record(record)
        counts.rederived += 1
        if record.state != final.state or record.event != final.event:
            counts.changed.append(f"{key.arm} {key.probe} {key.session}: {final.state} -> "
                                  f"{record.state}")
    await journal.render(journal.arms)
    return counts


def _skip_reason(final: FinalRecord, batch: Path) -> str | None:
    if not final.counts:
        return "stopped by the runner (killed): its stream ends where the runner stopped it"
    if final.stream is None:
        return "no stream kept (decided before the harness ran, or --no-keep-streams)"
    if not (batch / final.stream).is_file():
        return "the kept stream is missing"
    if final.init_policy is None:
        return "no init policy recorded"
    return None

