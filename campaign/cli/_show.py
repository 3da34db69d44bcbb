"""``show BATCH ARM PROBE SESSION``: one session's attempts, calls, final text, state and reason.

Read-only. For each attempt the ledger holds: its state and why, its cost (RC-14's source
for it: the provider's usage priced by the gateway, with the harness's own figure beside
it, or the harness's figure for an attempt written before the gateway),
its calls (tool, argument, the digest of what it returned), what it produced
and its answer when recorded, and the final message's text the runner kept
(``attempt-<n>/final.txt``), so a session whose answer is null can be
understood. Exit 0, or 2 when BATCH is not a batch or holds no such session.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from campaign._terminal_text import block, one_line
from campaign.batch import (
    FinalRecord,
    LedgerCorrupt,
    StartedRecord,
    attempt_cost,
    read_ledger,
    session_paths,
)
from campaign.supervisor import FINAL_TEXT_NAME
from recorder import Call

from ._args import ShowArgs
from ._errors import EXIT_OK, UsageError
from ._reading import batch_reading

DIGEST_SHOWN: Final = 19
"""Characters of a digest shown (``sha256:`` and 12 hex digits); the ledger keeps it whole."""
ARGUMENT_CHARS: Final = 160
"""Characters of a call's argument shown on its line."""


def _attempts(batch: Path, arm: str, probe: str, session: str) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    try:
        for record in read_ledger(batch / "ledger.jsonl"):
            if isinstance(record, StartedRecord | FinalRecord) and (
                    record.arm, record.probe, record.session) == (arm, probe, session):
                slot = found.setdefault(record.attempt, {})
                slot["started" if isinstance(record, StartedRecord) else "final"] = record
    except LedgerCorrupt as exc:
        raise UsageError(str(exc)) from exc
    return found


def _short(text: str, limit: int) -> str:
    one = one_line(text)
    return one if len(one) <= limit else one[:limit] + "..."


def _calls(final: FinalRecord) -> list[Call]:
    if final.event is not None:
        return list(final.event.calls or [])
    return list(final.calls or [])


def _usd(cost: Decimal | None) -> str:
    """``$0.0297``: four places, the exact figure the harness printed after it when longer."""
    if cost is None:
        return "unknown"
    shown = f"${cost:.4f}"
    return shown if Decimal(shown[1:]) == cost else f"{shown} (exactly {cost})"


def _cost_text(final: FinalRecord) -> str:
    """The attempt's cost as RC-14 takes it (`campaign.batch.attempt_cost`): the harness's
    figure for an attempt written before the gateway; else the provider-priced figure with
    its price table's date, the unpriced requests (a lower bound) and the harness's figure."""
    cost = attempt_cost(final)
    if not cost.provider:
        return _usd(final.cost_usd)
    bound = ">=" if cost.unpriced_requests else ""
    unpriced = ""
    if cost.unpriced_requests:
        models = (one_line(", ".join(cost.unpriced_models))
                  or "no usage read, or cut before its final usage")
        unpriced = f", {cost.unpriced_requests} request(s) unpriced ({models})"
    return (f"{bound}{_usd(cost.usd)} (the provider's usage, prices of {cost.prices}"
            f"{unpriced}; the harness said {_usd(final.cost_usd)})")


def _print_attempt(out: list[str], n: int, slot: dict[str, Any], root: Path) -> None:
    started: StartedRecord | None = slot.get("started")
    final: FinalRecord | None = slot.get("final")
    out.append(f"attempt {n}" + (f" (invocation {started.invocation}, started {started.at})"
                                 if started else ""))
    if final is None:
        out.append("  no final record: the attempt was running when its runner was killed "
                   "(resume reruns the session)")
        return
    cost = _cost_text(final)
    out.append(f"  state: {final.state}")
    out.append(f"  reason: {one_line(final.reason)}")
    served = one_line(final.served_model or "-")
    out.append(f"  ended {final.at}; cost {cost}; served model {served}; "
               f"outside paths {final.outside_paths}; stdout lines {final.lines or 0}")
    calls = _calls(final)
    out.append(f"  calls ({len(calls)}):")
    for call in calls:
        shown = call.result[:DIGEST_SHOWN] if call.result is not None else "(no result)"
        out.append(f"    {one_line(call.tool)} {_short(call.argument, ARGUMENT_CHARS)}"
                   f" -> {shown}")
    if final.unknown_init_keys:
        keys = ", ".join(one_line(key) for key in final.unknown_init_keys)
        out.append(f"  init keys not decided ({len(final.unknown_init_keys)}): {keys}: the "
                   "recorder has not decided them (docs/recorder.md \"Every init key "
                   "decided\"); listed, not refused (`make census` on this release)")
    if final.permission_denials:
        tools = one_line(", ".join(sorted(set(final.permission_denials))))
        out.append(f"  denied by the permission rules: {len(final.permission_denials)} "
                   f"call{'s' if len(final.permission_denials) != 1 else ''} ({tools}): the "
                   "arm's allowed tools do not include them, and the harness refused them "
                   "(they are still listed above; a denied Write produced nothing)")
    if final.event is not None:
        for art in final.event.produced or []:
            out.append(f"  produced: {one_line(art.path)} "
                       f"cites {one_line(art.cites if art.cites is not None else '-')}")
        answer = (final.event.answer if "answer" in final.event.model_fields_set
                  else "(no answer key)")
        out.append(f"  answer: {one_line(answer) if answer is not None else 'null'}")
    text_file = root / f"attempt-{n}" / FINAL_TEXT_NAME
    if text_file.is_file():
        out.append("  final text:")
        # Bytes decoded as they are: a text read would turn a carriage return into a line.
        text = block(text_file.read_bytes().decode("utf-8", "replace"))
        out += [f"    | {line}" for line in text.split("\n")]
    else:
        out.append("  final text: none kept (no final message, or the batch ran with "
                   "--no-keep-streams)")
    if final.stream:
        out.append(f"  kept stream: {one_line(final.stream)} "
                   f"({final.stream_bytes or 0} bytes received)")


def cmd_show(args: ShowArgs) -> int:
    """``show``: print one session's attempts (module docstring)."""
    batch = args.batch.expanduser().resolve()
    fold = batch_reading(batch, is_dir_first=True).fold  # refuses what is not a batch
    slots = _attempts(batch, args.arm, args.probe, args.session)
    if not slots:
        asked = f"{args.arm} {args.probe} {args.session}"
        if any(f"{k.arm} {k.probe} {k.session}" == asked for k in fold.sessions):
            raise UsageError(one_line(f"session {asked} of batch {batch} is planned but has no "
                                      "attempt yet: nothing to show (`status` counts what is "
                                      "queued; `resume` runs it)"))
        known = sorted(f"{k.arm} {k.probe} {k.session}" for k in fold.sessions
                       if k.probe == args.probe or k.arm == args.arm)[:10]
        raise UsageError(one_line(f"batch {batch} has no session {asked}"
                                  + (f" (some it has: {'; '.join(known)})" if known else "")))
    root = session_paths(batch, arm=args.arm, probe=args.probe, session=args.session).root
    out = [one_line(f"{args.arm} {args.probe} {args.session} in {batch}")]
    for n in sorted(slots):
        _print_attempt(out, n, slots[n], root)
    # Every value a session sent is escaped where it is put on its line (docs/cli.md).
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK
