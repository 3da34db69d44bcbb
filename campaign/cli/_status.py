"""``status BATCH [--json]``: a running or finished batch at a glance (read-only).

Folds the ledger as it stands (never writes: a torn last line is only
skipped) and says whether a process holds the batch now (its pid), how many
sessions are outstanding, the per-arm counts, the spend against the budget
the batch has now (the last one given, and who gave it: `batch_budget`),
the Claude Code releases its sessions ran when one is not covered by the harness census
(`uncovered_line`), and the last failures. ``--json`` prints the same as one stable object
(``"format": 1``; docs/batch.md lists its keys). Exit 0, or 2 when BATCH is
not a batch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from campaign._json_text import json_safe
from campaign._terminal_text import one_line
from campaign.batch import (
    BatchFold,
    BatchReading,
    BatchStatistics,
    ResumeAdvice,
    SessionLog,
    batch_budget,
    resume_advice,
)
from recorder import COVERED_RELEASES, coverage

from ._args import StatusArgs
from ._console import StdoutConsole
from ._errors import EXIT_OK
from ._reading import batch_reading
from ._view import arms_table, budget_line, failures_table

STATUS_FORMAT = 1
"""Version of ``status --json``'s shape."""


def _running(fold: BatchFold, holder: int | None) -> list[SessionLog]:
    return [log for log in fold.sessions.values() if log.running] if holder is not None else []


def status_data(batch: Path, reading: BatchReading | None = None) -> dict[str, Any]:
    """``status --json``'s object for ``batch`` (as ``reading`` read it, or read now).

    Raises:
        UsageError: not a directory, not a batch, or a ledger line the runner did not write.
    """
    reading = reading or batch_reading(batch, is_dir_first=True)
    fold, config = reading.fold, reading.config
    command = config.options.command
    holder = reading.holder
    stats = fold.statistics()
    budget = batch_budget(config, fold.last_run)  # the one a resume would run with
    return {
        "format": STATUS_FORMAT,
        "batch": str(batch),
        "command": command,
        "running": holder is not None,
        "pid": holder or None,
        "invocations": stats.invocations,
        "outstanding": len(fold.outstanding()),
        "in_flight": [_key(log) for log in _running(fold, holder)],
        "interrupted": [_key(log) for log in fold.sessions.values() if log.interrupted],
        "spend_usd": str(stats.spend_usd),
        "cost_unknown_attempts": stats.cost_unknown,
        "unpriced_requests": stats.unpriced_requests,
        "cost_source": {"provider_priced": stats.provider_priced,
                        "harness_priced": stats.harness_priced,
                        "prices": list(stats.price_dates)},
        "max_cost_cents": budget.max_cost_cents,
        "budget_set_by": {"invocation": budget.invocation, "command": budget.command,
                          "at": budget.at},
        "stopped": stats.stopped.model_dump(mode="json") if stats.stopped else None,
        "budget_stop": stats.budget_stop.model_dump(mode="json") if stats.budget_stop else None,
        "arms": {arm: {"planned": c.planned, "queued": c.queued, "running": c.running,
                       "interrupted": c.interrupted,
                       "recorded": c.recorded, "refused": c.refused, "failed": c.failed,
                       "retried": c.retried, "cost_usd": str(c.cost_usd),
                       "cost_unknown_attempts": c.cost_unknown,
                       "unpriced_requests": c.unpriced_requests}
                 for arm, c in sorted(stats.arms.items())},
        "harness_versions": {version: {"attempts": n, "coverage": coverage(version)}
                             for version, n in stats.harness_versions},
        "last_failures": [{"arm": f.key.arm, "probe": f.key.probe, "session": f.key.session,
                           "attempt": f.attempt, "state": f.state, "reason": f.reason}
                          for f in stats.last_failures],
    }


def uncovered_line(harness_versions: tuple[tuple[str, int], ...]) -> str | None:
    """The line ``status`` prints when any session ran a release the census does not cover.

    Args:
        harness_versions: (``claude_code_version``, attempts) of the batch's final records.

    Returns:
        None when every version is covered (or none was seen); else one line naming each
        version that is not, with its attempts, the covered releases and what it means.
    """
    outside = [(v, n) for v, n in harness_versions if coverage(v) != "covered"]
    if not outside:
        return None
    listed = ", ".join(f"{v} ({n} attempt{'' if n == 1 else 's'}"
                       f"{'' if coverage(v) == 'uncovered' else ', not a release number'})"
                       for v, n in outside)
    return (f"Claude Code not covered by the harness census: {listed}; the census covers "
            f"{', '.join(COVERED_RELEASES)}, so the recorder was not checked against what "
            "those sessions printed (`make census CENSUS_VERSION=<release>` checks a release)")


def cost_source_line(stats: BatchStatistics) -> str | None:
    """Where the spend's figure came from, in words (RC-14's sources; docs/batch.md).

    Args:
        stats: The fold's snapshot: its attempts priced from the provider's usage (with the
            price tables' dates) and by the harness's own figure.

    Returns:
        One line naming each source with its attempts, the provider's usage first; None
        when no attempt has a known cost yet.
    """
    parts = []
    if stats.provider_priced:
        dates = " and ".join(stats.price_dates) or "an unnamed date"
        parts.append(f"the provider's own usage, read by the gateway and priced by the price "
                     f"table of {dates}, for {_attempts(stats.provider_priced)}")
    if stats.harness_priced:
        parts.append("the harness's own total_cost_usd, for "
                     f"{_attempts(stats.harness_priced)} written before the gateway")
    if not parts:
        return None
    return f"cost source: {'; '.join(parts)} (not the provider's invoice)"


def _attempts(n: int) -> str:
    return f"{n} attempt{'' if n == 1 else 's'}"


def _key(log: SessionLog) -> dict[str, Any]:
    return {"arm": log.key.arm, "probe": log.key.probe, "session": log.key.session,
            "attempt": log.attempts}


def cmd_status(args: StatusArgs) -> int:
    """``status``: print the batch's standing (module docstring)."""
    batch = args.batch.expanduser().resolve()
    reading = batch_reading(batch, is_dir_first=True)
    data = status_data(batch, reading)
    if args.json:
        sys.stdout.write(json.dumps(json_safe(data), indent=1, sort_keys=True) + "\n")
        return EXIT_OK
    _print(batch, data, reading.fold.statistics(),
           scripted=reading.config.options.provider == "scripted",
           advice=resume_advice(batch, reading.fold, reading.config))
    return EXIT_OK


def _print(batch: Path, data: dict[str, Any], stats: BatchStatistics, *, scripted: bool,
           advice: ResumeAdvice) -> None:
    out = StdoutConsole(file=sys.stdout, highlight=False, soft_wrap=True)
    if data["running"]:
        who = f"process {data['pid']}" if data["pid"] else "another process"
        out.print(one_line(f"batch {batch}: running ({who} holds it)"), markup=False)
    else:
        out.print(one_line(f"batch {batch}: not running"), markup=False)
    out.print(arms_table(stats.arms, title="sessions per arm"))
    setter = data["budget_set_by"]
    out.print(budget_line(stats, data["max_cost_cents"],
                          set_by=f"set by {setter['command']}, invocation {setter['invocation']}"),
              markup=False)
    source = cost_source_line(stats)
    if source is not None:
        out.print(source, markup=False, soft_wrap=True)
    if scripted:
        out.print("(the provider was scripted: the spend prices the usage its scripts "
                  "report; nothing was billed)", markup=False)
    uncovered = uncovered_line(stats.harness_versions)
    if uncovered is not None:
        out.print(one_line(uncovered), markup=False, soft_wrap=True)
    stopped = stats.stopped
    if stopped is not None and not data["running"]:
        out.print(f"last invocation ({stats.invocations}) ended: {stopped.reason}: "
                  f"{one_line(stopped.detail)}", markup=False, soft_wrap=True)
    elif not data["running"] and stats.invocations:
        out.print(f"last invocation ({stats.invocations}) did not end cleanly (the runner was "
                  "killed)", markup=False)
    for label in ("in_flight", "interrupted"):
        if data[label]:
            names = ", ".join(f"{k['arm']} {k['probe']} {k['session']}" for k in data[label])
            out.print(f"{label.replace('_', ' ')}: {one_line(names)}", markup=False,
                      soft_wrap=True)
    hint = f"finish with: {advice.text()}"
    out.print(one_line(f"outstanding: {data['outstanding']}"
                       + (f" ({hint})" if data["outstanding"] and not data["running"] else "")),
              markup=False)
    table = failures_table(stats.last_failures)
    if table is not None:
        out.print(table)
