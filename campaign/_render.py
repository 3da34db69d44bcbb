"""Re-render an arm's transcript from the ledger (RC-14..RC-16).

The ledger is the source; the transcript is a projection of it, written
atomically and proved by reading it back (``recorder._transcript``). So a
transcript can be rebuilt at any time, after a crash or a ``record``, and two
renders of the same ledger are the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from recorder._cost import cost_cents, decimal_cost
from recorder._vocab import is_refusal
from recorder.transcript import (
    Event,
    Identity,
    SessionRow,
    Transcript,
    prose_for,
    prose_value,
    served_version_of,
    write_transcript,
)

from ._batch import transcript_path
from ._ledger import SessionKey, final_records, read_ledger
from ._plan import Plan


def arm_tools_and_identity(plan: Plan, arm: str) -> tuple[tuple[str, ...], str | None]:
    """The arm's allowed tools and its identity line for the prose (issue 4, arm identity).

    A plan without the arm (cannot happen for a batch's own arms) gives the
    plan's tools and no identity line.
    """
    spec = next((s for s in plan.arm_specs if s.arm == arm), None)
    if spec is None:
        return plan.tools, None
    return spec.allowed_tools, (
        f"{spec.identity}, the digest of the arm's workspace layer {spec.layer} (the tree "
        f"formula over the layer files the arm keeps) and of its harness flags {spec.flags} "
        "(permission mode, setting sources, allowed and disallowed tools). Batches whose arm "
        "identities are equal ran the same arm.")


def _first_start(ledger: Path, arm: str) -> str | None:
    starts = [
        str(r["at"])
        for r in read_ledger(ledger)
        if r.get("kind") == "started" and r.get("arm") == arm
    ]
    return min(starts) if starts else None


def build_transcript(ledger: Path, plan: Plan, *, arm: str, network: str = "host") -> Transcript:
    """The transcript of ``arm`` as the ledger stands now.

    Identity (RC-14): the six plan members copied unchanged; ``model`` the
    ``--model`` passed; ``served_version`` the most frequent served model of
    the recorded sessions (the model name when none was recorded: "the name
    where none is exposed"); ``at`` the first session's start; ``cost_cents``
    the ceiling of 100 x the sum of every attempt's cost, unknown costs
    adding nothing and making the figure a stated lower bound.

    Raises:
        ValueError: the ledger is malformed (see ``read_ledger``).
    """
    finals = final_records(ledger, arm=arm)
    costs: list[Decimal | None] = []
    unknown: list[str] = []
    served: Counter[str] = Counter()
    versions: set[str] = set()
    events: list[Event] = []
    rows: list[SessionRow] = []
    outside_total = 0
    anomalies_total = 0
    notes: list[str] = []
    for key in sorted(finals, key=_order):
        attempts = finals[key]
        for rec in attempts:
            known = rec.get("cost_known", True)
            if known and rec.get("cost_usd") is not None:
                costs.append(decimal_cost(rec["cost_usd"]))
            elif rec.get("state") not in ("refused-seal", "refused-confinement"):
                costs.append(None)
                unknown.append(f"{key.probe}/{key.session} attempt {rec.get('attempt', 1)}")
            if rec.get("claude_code_version"):
                versions.add(str(rec["claude_code_version"]))
        last = attempts[-1]
        outside = int(last.get("outside_paths", 0))
        outside_total += outside
        anomalies_total += int(last.get("anomalies", 0) or 0)
        notes += _session_notes(key, last)
        rows.append(SessionRow(probe=key.probe, session=key.session, state=last["state"],
                               outside_paths=outside))
        if last["state"] == "recorded":
            events.append(Event.model_validate(last["event"]))
            if last.get("served_model"):
                served[str(last["served_model"])] += 1
    cost = cost_cents(costs)
    network, network_lines = network_prose(finals, default=network)
    identity = Identity(
        model=plan.model,
        served_version=served_version_of(served.elements(), fallback=plan.model),
        tree=plan.tree,
        lock=plan.lock,
        selection=plan.selection,
        read_set=plan.read_set,
        seed=plan.seed,
        harness=plan.harness,
        tier=plan.tier,
        arm=arm,
        at=_first_start(ledger, arm) or "1970-01-01T00:00:00Z",
        cost_cents=cost.cents,
    )
    prose = prose_for(
        arm=identity.arm,
        tier=plan.tier,
        allowed_tools=list(arm_tools_and_identity(plan, arm)[0]),
        network=network,
        claude_code_versions=sorted(versions),
        served_versions=served,
        cost=cost,
        unknown_cost_sessions=unknown,
        outside_paths_total=outside_total,
        anomalies_total=anomalies_total,
        arm_identity=arm_tools_and_identity(plan, arm)[1],
        extra=[*network_lines, *notes],
    )
    return Transcript(identity=identity, events=events, sessions=rows, prose=prose)


def _session_notes(key: SessionKey, last: dict[str, Any]) -> list[str]:
    """Prose lines for what a session's final record says beyond its row (RC-10, RC-11)."""
    notes = []
    name = f"{key.probe}/{key.session}"
    if last.get("findings_note"):
        notes.append(f"{name}: {prose_value(str(last['findings_note']))}; its artifacts carry "
                     "no findings key (not checked, which is not a pass).")
    if last.get("orphan_results"):
        notes.append(f"{name}: {len(last['orphan_results'])} tool_result(s) answered no "
                     "tool_use seen before them; the ledger keeps their ids and digests.")
    return notes


def _order(key: SessionKey) -> tuple[str, int, str]:
    digits = "".join(ch for ch in key.session if ch.isdigit())
    return (key.probe, int(digits) if digits else 0, key.session)


def render_arm(batch: Path, plan: Plan, *, arm: str, network: str = "host") -> Path:
    """Write ``<batch>/transcripts/<arm>.md`` from the ledger, atomically; return its path."""
    path = transcript_path(batch, arm)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_transcript(path, build_transcript(batch / "ledger.jsonl", plan, arm=arm, network=network))
    return path


def summary_counts(ledger: Path) -> dict[str, dict[str, Any]]:
    """Per arm: sessions, recorded, refused, failed, cost (Decimal of known attempts)."""
    out: dict[str, dict[str, Any]] = {}
    for key, attempts in final_records(ledger).items():
        row = out.setdefault(key.arm, {"sessions": 0, "recorded": 0, "refused": 0, "failed": 0,
                                       "cost_usd": Decimal(0)})
        row["sessions"] += 1
        state = attempts[-1]["state"]
        if state == "recorded":
            row["recorded"] += 1
        elif is_refusal(str(state)):
            row["refused"] += 1
        else:
            row["failed"] += 1
        for rec in attempts:
            if rec.get("cost_usd") is not None:
                row["cost_usd"] += Decimal(str(rec["cost_usd"]))
    return out


_LISTED_SESSIONS = 5
"""Sessions named per denied host in the prose; further ones are counted."""


def network_prose(
    finals: Mapping[SessionKey, list[dict[str, Any]]], *, default: str
) -> tuple[str, list[str]]:
    """The network mode of an arm's sessions and the prose lines about their egress.

    The mode is the ``network`` of the final records that carry one (every
    attempt that reached the sandbox); ``default`` when none does, ``mixed``
    when they differ (a line then names the ``host`` sessions, whose channel
    was open). With confinement, one line names the allowed ``host:port``
    and the connections relayed, and one counts and names every connection
    the egress proxy denied, over every attempt: ``"host:port" xN (sessions)``,
    the target written by `prose_value` (it came from the session).

    Returns:
        ``(mode, lines)``; no lines when no session was confined.
    """
    modes: dict[str, list[str]] = {}
    denied: dict[str, Counter[str]] = {}
    allowed: Counter[str] = Counter()
    for key in sorted(finals, key=_order):
        name = f"{key.probe}/{key.session}"
        for rec in finals[key]:
            if rec.get("network"):
                modes.setdefault(str(rec["network"]), [])
                if name not in modes[str(rec["network"])]:
                    modes[str(rec["network"])].append(name)
            egress = rec.get("egress") or {}
            if egress:
                allowed[str(egress.get("allowed_target"))] += int(egress.get("allowed", 0))
            for host, count in (egress.get("denied") or {}).items():
                denied.setdefault(str(host), Counter())[name] += int(count)
    mode = default if not modes else next(iter(modes)) if len(modes) == 1 else "mixed"
    lines: list[str] = []
    if len(modes) > 1:
        listed = ", ".join(f"{m} ({len(names)})" for m, names in sorted(modes.items()))
        open_ = ", ".join(modes.get("host", [])) or "none"
        lines.append(f"Network modes differ across this arm's sessions: {listed}; the channel "
                     f"was open for the host sessions: {open_}.")
    if "confined" in modes:
        targets = ", ".join(f"{t} ({n} relayed)" for t, n in sorted(allowed.items()))
        lines.append(f"Egress proxy: allowed only the provider, {targets or 'none'}.")
        total = sum(sum(c.values()) for c in denied.values())
        named = [f"{prose_value(host)} x{sum(c.values())} ({_sessions(c)})"
                 for host, c in sorted(denied.items())]
        lines.append(f"Denied connections: {total}" + (f": {', '.join(named)}." if named else "."))
    return mode, lines


def _sessions(counts: Counter[str]) -> str:
    names = list(counts)
    shown = ", ".join(names[:_LISTED_SESSIONS])
    more = len(names) - _LISTED_SESSIONS
    return shown + (f" and {more} more" if more > 0 else "")
