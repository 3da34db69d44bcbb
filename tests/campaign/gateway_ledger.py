"""Ledger records of attempts that ran through the provider gateway, made by hand.

The shapes are those on main (`campaign.batch.RequestRecord`, a final record's
``gateway: GatewayCounts``); no gateway runs: the tests write what one would have written.
"""

from __future__ import annotations

from typing import Any

from campaign.batch import FinalRecord, GatewayCounts, RequestRecord, StartedRecord
from campaign.batch._fold import SessionKey

PRICES = "2025-11-24"
"""The date a hand-made priced row names (any date: the rules read it, never compute it)."""


def started(key: SessionKey, attempt: int = 1, *, at: str = "2026-12-01T00:00:00Z",
            invocation: int = 1) -> StartedRecord:
    """Attempt ``attempt`` of ``key`` began."""
    return StartedRecord(arm=key.arm, probe=key.probe, session=key.session, repetition=1,
                         attempt=attempt, invocation=invocation, position=0, at=at)


def request(key: SessionKey, *, attempt: int = 1, cost: str | None = "0.001",
            model: str = "claude-opus-4-8-20261101", digest: str | None = "sha256:aa",
            invocation: int = 1) -> RequestRecord:
    """One forwarded request of ``key``'s attempt, priced ``cost`` USD (None: unknown)."""
    return RequestRecord(
        arm=key.arm, probe=key.probe, session=key.session, repetition=1, attempt=attempt,
        invocation=invocation, at="2026-12-01T00:00:01Z", method="POST",
        path="/v1/messages?beta=true", status=200, model=model, message_id="msg_1",
        usage={"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0,
               "cache_read_input_tokens": 0},
        duration_s=0.5, system_digest=digest, cost_usd=cost,
        prices=PRICES if cost is not None else None)


def final(key: SessionKey, state: str = "recorded", *, attempt: int = 1,
          harness: str | None = "0.5", provider: str | None = "0.01",
          unpriced: list[str] | None = None, unpriced_requests: int = 0,
          retryable: bool = False, counts: bool = True, invocation: int = 1,
          served: str | None = "claude-opus-4-8-20261101") -> FinalRecord:
    """The final record of ``key``'s attempt: ``harness`` is its ``cost_usd``
    (total_cost_usd), ``provider`` its gateway's priced sum (None: written before the
    gateway, no ``gateway`` key)."""
    extra: dict[str, Any] = {}
    if provider is not None:
        extra["gateway"] = GatewayCounts(
            forwarded=3, refused={}, provider_cost_usd=provider, prices=PRICES,
            **({"unpriced_models": unpriced} if unpriced else {}),
            **({"unpriced_requests": unpriced_requests} if unpriced_requests else {}))
    recorded = state == "recorded"
    return FinalRecord(
        arm=key.arm, probe=key.probe, session=key.session, repetition=1, attempt=attempt,
        invocation=invocation, started_at="2026-12-01T00:00:00Z", state=state, reason=state,
        retryable=retryable, cost_usd=harness, cost_known=harness is not None,
        counts=counts, served_model=served if recorded else None,
        event={"probe": key.probe, "session": key.session, "calls": [], "answer": "yes"}
        if recorded else None, **extra)
