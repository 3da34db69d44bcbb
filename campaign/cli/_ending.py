"""What ``run``, ``demo`` and ``resume`` print before a batch runs and after it ends.

The ending puts the answer first: the sessions per arm, the transcripts, then
the report's summary (the graded share per probe and arm; docs/report.md) and
the command for the whole report; then, on stderr, what is outstanding and how
to finish it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from campaign._errors import CampaignError
from campaign._terminal_text import one_line
from campaign.batch import transcript_path
from campaign.report import build_report, print_summary
from campaign.supervisor import LOGIN_HOW

from ._console import StdoutConsole, stdout_gone
from ._errors import plural
from ._report import grading_of
from ._status import uncovered_line
from ._view import arms_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from campaign.batch import OpenBatch, ScriptedDouble
    from campaign.plan import PlanProbe
    from campaign.supervisor import BatchOutcome


def print_header(err: Console, opened: OpenBatch, outstanding: int, mode: str) -> None:
    """What a batch is before it runs: its path, its size, its provider, a resume's standing,
    its budgets (stderr)."""
    plan = opened.plan
    err.print(f"batch: {opened.path}", markup=False)
    err.print(f"{plural(plan.session_count, 'session')} ({plural(len(plan.probes), 'probe')} "
              f"x {plural(len(plan.arms), 'arm')} x {plural(plan.repetitions, 'repetition')}), "
              "concurrency "
              f"{opened.options.concurrency}, network {opened.network}", markup=False)
    err.print(opened.config.facts.provider_note, markup=False, soft_wrap=True)
    if mode == "resume":
        err.print(f"resuming (invocation {opened.invocation}): {outstanding} of "
                  f"{plan.session_count} sessions outstanding", markup=False)
    if opened.options.max_wall_s is not None:  # recorded with the options: resume's too
        hard = (", then the sessions still running are cancelled (--hard-wall; "
                "--no-hard-wall lets them finish)" if opened.options.hard_wall
                else ", and sessions running then finish")
        err.print(f"wall-clock budget: {opened.options.max_wall_s:g} s from this "
                  f"invocation's start (--max-wall): no session starts once it could be "
                  f"passed{hard}", markup=False, soft_wrap=True)
    if opened.scripted is not None:  # said before anything runs, by probe
        for line in script_warnings(opened.scripted, plan.probes):
            err.print(line, markup=False, soft_wrap=True)


def script_warnings(scripted: ScriptedDouble, probes: Sequence[PlanProbe]) -> list[str]:
    """What is wrong between the scripted provider's scripts and the plan's probes, one
    warning each (docs/provider.md, "Script files": a script's ``match`` is a phrase of
    exactly one task).

    A probe no script matches gets ``no script for this request``; a probe several scripts
    match gets only the first of them (the others never play for it); a script that is the
    first match of several probes plays the same turns to all of them. Each would make a dry
    run measure something other than its scripts, so each is said before anything runs.
    """
    lines = []
    matched: dict[str, list[str]] = {}
    for probe in probes:
        names = scripted.scripts_for(probe.task)
        if names:  # the one that plays to its sessions
            matched.setdefault(names[0], []).append(probe.id)
        if not names:
            lines.append(f"warning: no script of the scripted provider matches probe "
                         f"{probe.id}'s task (no script's `match` is a phrase of it): its "
                         "sessions will be answered 'no script for this request' and end "
                         "without an answer (docs/provider.md)")
        elif len(names) > 1:
            lines.append(f"warning: {len(names)} scripts of the scripted provider match probe "
                         f"{probe.id}'s task ({', '.join(names)}): only the first, "
                         f"{names[0]}, plays to its sessions; a script's `match` must be a "
                         "phrase of exactly one task (docs/provider.md)")
    for name, ids in matched.items():
        if len(ids) > 1:
            lines.append(f"warning: script {name} of the scripted provider matches the tasks "
                         f"of {len(ids)} probes ({', '.join(ids)}): it plays the same turns to "
                         "the sessions of each; a script's `match` must be a phrase of exactly "
                         "one task (docs/provider.md)")
    return lines


def print_verdict(path: Path) -> None:
    """The report's summary of the batch at ``path`` (the graded share per probe and arm,
    or ungraded and why), and the command for the whole report: the question first.

    The batch is already recorded when this runs, so a report that cannot be built says so
    and why, and never changes how the invocation ends (its exit status)."""
    try:
        grading, ungraded = grading_of([path])
        report = build_report([path], grading=grading, ungraded=ungraded)
    except (CampaignError, OSError) as exc:
        print(f"\nthe summary could not be built ({one_line(str(exc))}); the batch is "
              f"recorded: headwater-campaign report {path}", flush=True)
        return
    print()
    print_summary(report, sys.stdout)
    print(f"the whole report: headwater-campaign report {path}", flush=True)


def print_harness_warning(err: Console, harness_versions: tuple[tuple[str, int], ...]) -> None:
    """A warning on ``err`` when any session ran a Claude Code release the harness census does
    not cover (`uncovered_line`, as ``status`` prints it); nothing when every one is covered.

    Args:
        harness_versions: (``claude_code_version``, attempts) of the batch's final records;
            the versions are what the sessions printed, so the line is made one line.
    """
    line = uncovered_line(harness_versions)
    if line is not None:
        err.print(f"warning: {one_line(line)}", markup=False, soft_wrap=True)


def print_login_failure(err: Console, attempts: int, failure: str) -> None:
    """The warning when the provider gateway could not use the host's login: how many
    attempts ended so (``harness-error``, not retried: docs/batch.md "Session states"),
    why, and how to get a credential that outlasts the batch."""
    err.print(f"warning: {plural(attempts, 'session')} ended harness-error because the "
              f"provider gateway could not use the host's login ({one_line(failure)}); an "
              f"authentication failure is not retried: {LOGIN_HOW}", markup=False,
              soft_wrap=True)


def print_ending(opened: OpenBatch, outcome: BatchOutcome, err: Console) -> None:
    """How the invocation ended: the sessions per arm, the transcripts, the report's summary
    (stdout), and what is left and how to finish it (stderr)."""
    stats = opened.journal.fold.statistics()
    try:
        out = StdoutConsole(file=sys.stdout, highlight=False)
        out.print(arms_table(stats.arms, title="sessions per arm"))
        for arm in opened.plan.arms:
            path = transcript_path(opened.path, arm)
            if arm in opened.journal.behind:
                out.print(f"transcript: {path} is behind the ledger (its write was refused; "
                          "resume writes it)", markup=False)
            elif path.exists():
                out.print(f"transcript: {path}", markup=False)
        if outcome.recorded and outcome.signal is None:
            print_verdict(opened.path)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()
    resume = f"headwater-campaign resume {opened.path}"
    if outcome.signal is not None:
        err.print(f"{one_line(outcome.detail)}; {plural(outcome.outstanding, 'session')} "
                  "outstanding; "
                  "every "
                  f"finished attempt is in the ledger. Finish with: {resume}", markup=False)
    elif outcome.budget_stopped:
        stop = opened.journal.fold.budget_stop
        larger = ("--max-wall D (it counts from each invocation's start)"
                  if stop is not None and stop.budget == "wall"
                  else "--max-cost-cents N (a total over every attempt)")
        err.print(f"a budget stopped the batch: {one_line(outcome.detail)}; "
                  f"{plural(outcome.outstanding, 'session')} outstanding. Resume with a larger "
                  f"budget: {resume} {larger}", markup=False, soft_wrap=True)
    elif outcome.write_refused:
        left = plural(outcome.outstanding, "session")
        remedy = outcome.remedy or "free space"
        err.print(f"{one_line(outcome.detail)}. Nothing already recorded was lost; {left} "
                  "outstanding. "
                  f"{remedy[:1].upper()}{remedy[1:]}, then: {resume}", markup=False,
                  soft_wrap=True)
    elif outcome.outstanding:
        left = plural(outcome.outstanding, "session")
        are = "is" if outcome.outstanding == 1 else "are"
        err.print(f"{left} ended in a state worth another attempt and {are} out of retries for "
                  f"this invocation; {resume} tries them again", markup=False, soft_wrap=True)
    if opened.scripted is not None:
        for what, count in sorted(opened.scripted.misses.items()):
            err.print(f"warning: the scripted provider answered 'no script for this request' "
                      f"{count} time{'s' if count != 1 else ''}: {one_line(what)}; those "
                      "sessions ended without the scripted answer (docs/provider.md)", markup=False)
    print_harness_warning(err, stats.harness_versions)
    if outcome.login_failure is not None:
        print_login_failure(err, outcome.login_failures, outcome.login_failure)
    if outcome.recorded == 0 and outcome.signal is None and not outcome.budget_stopped:
        err.print("no session of the batch was recorded (exit 5): see the states above, or "
                  f"`headwater-campaign status {opened.path}`", markup=False, soft_wrap=True)
    try:
        print(f"batch: {opened.path}", flush=True)
    except BrokenPipeError:
        stdout_gone()
