"""Re-render an arm's transcript from the ledger (RC-14..RC-16).

The ledger is the source; the transcript is a projection of it, written
atomically and proved by reading it back (``recorder._transcript``). So a
transcript can be rebuilt at any time, after a crash or a ``record``, and two
renders of the same ledger are the same bytes.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

from recorder._cost import cost_cents, decimal_cost
from recorder._transcript import (
    Event,
    Identity,
    SessionRow,
    Transcript,
    prose_for,
    served_version_of,
    write_transcript,
)

from ._batch import transcript_path
from ._ledger import SessionKey, final_records, read_ledger
from ._plan import Plan


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
        rows.append(SessionRow(probe=key.probe, session=key.session, state=last["state"],
                               outside_paths=outside))
        if last["state"] == "recorded":
            events.append(Event.model_validate(last["event"]))
            if last.get("served_model"):
                served[str(last["served_model"])] += 1
    cost = cost_cents(costs)
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
        allowed_tools=list(plan.tools),
        network=network,
        claude_code_versions=sorted(versions),
        served_versions=served,
        cost=cost,
        unknown_cost_sessions=unknown,
        outside_paths_total=outside_total,
        anomalies_total=anomalies_total,
    )
    return Transcript(identity=identity, events=events, sessions=rows, prose=prose)


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
        elif str(state).startswith("refused"):
            row["refused"] += 1
        else:
            row["failed"] += 1
        for rec in attempts:
            if rec.get("cost_usd") is not None:
                row["cost_usd"] += Decimal(str(rec["cost_usd"]))
    return out
