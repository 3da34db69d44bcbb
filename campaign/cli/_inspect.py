"""The commands that read and print without running a session: plan, seal, check-transcript,
doctor."""

from __future__ import annotations

import sys
from pathlib import Path

from campaign._errors import CampaignError
from campaign._terminal_text import one_line
from campaign.batch import (
    LEDGER_NAME,
    BatchReading,
    FinalRecord,
    LedgerCorrupt,
    host_skill_dirs,
    read_ledger,
)
from campaign.corpus import Corpus, corpus_notes, large_file_notes
from campaign.doctor import doctor_checks
from campaign.expect import checked_expectations
from campaign.plan import (
    BatchFigures,
    arms_without_effect,
    dump_plan,
    projection_lines,
    sizing_lines,
)
from campaign.seal import check_folds, explain, resolve_session, seal_workspace
from campaign.supervisor import check_evidence
from recorder import check_transcript_file
from recorder.transcript import TranscriptRefused, read_transcript
from sandbox import sweep_config_root, sweep_killed_runners

from ._args import CheckTranscriptArgs, DoctorArgs, PlanArgs, SealArgs, resolve_harness_path
from ._batch import (
    check_sealed_paths,
    compose,
    default_harness_path,
    load_corpus_or_usage,
    recorded_corpus,
)
from ._console import StderrConsole, quiet_pipe
from ._doctor_view import exit_status, print_report
from ._errors import EXIT_OK, EXIT_UNVERIFIED, UsageError
from ._reading import batch_reading

_FORM_LABEL = {"clean": "well-formed", "refused": "verified broken (refused)",
               "unverified": "could not verify"}
"""Without ``--batch`` only the form is checked: a pass says so, never "verified"."""
_EVIDENCE_LABEL = {"clean": "verified clean",
                   "refused": "refused: it does not match the batch's evidence",
                   "unverified": "could not verify"}


def cmd_plan(args: PlanArgs) -> int:
    """``plan``: print the plan before anything is spent (exit 0, or 2 on bad input): the
    plan, each probe's expectations, the sizing per tier and, with ``--from BATCH``, the
    projected cost and wall time. yaml/json print the plan file alone on stdout (what
    ``run --plan FILE`` reads), the sizing and the projection on stderr."""
    corpus = load_corpus_or_usage(args.corpus)
    plan = compose(corpus, tier=args.tier, seed=args.seed, plan_file=None, model=None,
                   probes=args.probes)
    try:  # what run would refuse before spending, plan refuses before printing
        for probe in plan.probes:
            check_folds(corpus, probe.id)
        expectations = checked_expectations(corpus, [p.id for p in plan.probes])
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc
    check_sealed_paths(corpus, plan)
    figures = None if args.from_batch is None else batch_figures(args.from_batch)
    tiers = {str(t): (c.repetitions, c.arms) for t, c in corpus.config.tiers.items()
             if args.tier is None or str(t) == args.tier}
    extra = ["", *sizing_lines(tiers, base_rate=args.base_rate)]
    if figures is not None:
        extra += ["", *projection_lines(plan.session_count, figures,
                                        concurrency=args.concurrency)]
    if args.format == "text":
        sys.stdout.write(dump_plan(plan, "text", expectations) + "\n".join(extra) + "\n")
    else:
        sys.stdout.write(dump_plan(plan, args.format))
        for line in extra[1:]:
            print(line, file=sys.stderr)
    for line in [*corpus_notes(corpus), *large_file_notes(corpus)]:
        print(f"note: {line}", file=sys.stderr)
    return EXIT_OK


def batch_figures(path: Path) -> BatchFigures:
    """The realized figures of the batch at ``path`` (``plan --from``), read through
    `read_batch` and the ledger reader.

    Raises:
        UsageError: not a batch directory (exit 2), or its ledger is corrupt.
    """
    batch = path.expanduser().resolve()
    with batch_reading(batch, hint="`plan --from` takes a batch directory made by run, demo "
                                   "or record", is_dir_first=True) as reading:
        stats = reading.fold.statistics()
        try:
            attempt_s = sum(r.duration_s or 0.0 for r in read_ledger(batch / LEDGER_NAME)
                            if isinstance(r, FinalRecord))
        except LedgerCorrupt as exc:
            raise UsageError(str(exc)) from exc
    return BatchFigures(path=str(batch), recorded=sum(a.recorded for a in stats.arms.values()),
                        spend_usd=stats.spend_usd, cost_unknown=stats.cost_unknown,
                        attempt_s=attempt_s,
                        scripted=reading.config.options.provider == "scripted")


def cmd_seal(args: SealArgs) -> int:
    """``seal``: one sealed workspace; ``--explain`` lists every removal and why."""
    corpus = load_corpus_or_usage(args.corpus)
    if args.probe not in corpus.probes:
        raise UsageError(f"probe {args.probe!r} is not on the shelf docs/probes/ of {corpus.root}")
    try:
        session = resolve_session(corpus, args.probe, args.arm)
        result = seal_workspace(corpus, session, out=args.out)
    except CampaignError as exc:
        raise UsageError(str(exc)) from exc
    if args.explain:
        sys.stdout.write(explain(result))
    for line in arms_without_effect(corpus, [args.arm], corpus.config.tools):
        print(f"warning: {line} (run and record refuse it)", file=sys.stderr)
    print(f"sealed {len(result.manifest)} files into {args.out.resolve()} "
          f"({len(result.removals)} removals)")
    return EXIT_OK


def cmd_check_transcript(args: CheckTranscriptArgs) -> int:
    """``check-transcript FILE... [--batch BATCH [--corpus DIR]]``: one line per file (and its
    reasons); 1 if any is refused, else 4 if any could not be verified, else 0 (never a pass
    for "could not verify").

    Alone it checks the form (`recorder.check_transcript_file`): a pass is "well-formed".
    With ``--batch`` a well-formed file is also held to that batch's ledger and kept streams
    (`campaign.supervisor.check_evidence`); a pass is then "verified clean".

    Raises:
        UsageError: (``--corpus`` without ``--batch``) or BATCH is not a batch, its ledger
            is corrupt, or its corpus is not found or moved.
    """
    if args.batch is None:
        if args.corpus is not None:
            raise UsageError("--corpus names the corpus of the batch given with --batch; "
                             "give --batch BATCH too")
        lines = [(path, *_form(path)) for path in args.files]
    else:
        batch = args.batch.expanduser().resolve()
        with batch_reading(batch, settle=False) as reading:
            corpus = recorded_corpus(reading, args.corpus)
            lines = [(path, *_evidence(path, reading, corpus)) for path in args.files]
    with quiet_pipe():  # the status is decided: a reader that goes away does not change it
        for path, _, label, reasons in lines:
            print(f"{one_line(path)}: {label}")
            for reason in reasons:  # a reason may quote the file's text
                print(f"  {one_line(reason)}")
    verdicts = {verdict for _, verdict, _, _ in lines}
    if "refused" in verdicts:
        return 1
    return EXIT_UNVERIFIED if "unverified" in verdicts else EXIT_OK


def _form(path: Path) -> tuple[str, str, list[str]]:
    result = check_transcript_file(path)
    return result.verdict, _FORM_LABEL[result.verdict], result.reasons


def _evidence(path: Path, reading: BatchReading, corpus: Corpus) -> tuple[str, str, list[str]]:
    """The form first; a well-formed file is then held to the batch."""
    result = check_transcript_file(path)
    if result.verdict != "clean":
        return result.verdict, _FORM_LABEL[result.verdict], result.reasons
    try:
        transcript = read_transcript(path)
    except (OSError, TranscriptRefused) as exc:  # changed since the check read it
        return "unverified", _EVIDENCE_LABEL["unverified"], [f"cannot read {path}: {exc}"]
    try:
        check = check_evidence(transcript, reading=reading, corpus=corpus, at=path)
    except (OSError, LedgerCorrupt) as exc:
        return "unverified", _EVIDENCE_LABEL["unverified"], [
            f"the batch's ledger cannot be read: {exc}"]
    return check.verdict, _EVIDENCE_LABEL[check.verdict], check.reasons


def cmd_doctor(args: DoctorArgs) -> int:
    """``doctor``: every host check, three answers each; 0 all ok, 12 any broken, else 4.

    Reads and probes only: it removes the config directories killed runners left (and
    says so) but creates no user; see campaign.doctor for the checks.
    """
    err = StderrConsole()
    for left in sweep_config_root():
        err.print(f"removed a session config directory left by a killed runner: {left}",
                  markup=False, soft_wrap=True)
    for left in sweep_killed_runners():
        err.print(f"ended and removed what a killed runner left: {left}", markup=False,
                  soft_wrap=True)
    harness_path: Path | None
    try:
        harness_path = resolve_harness_path(args.harness_path, default_harness_path())
    except UsageError:
        harness_path = None
    report = doctor_checks(bwrap=args.bwrap, harness=harness_path,
                           host_skill_dirs=host_skill_dirs(), api_key_env=args.api_key_env)
    with quiet_pipe():  # the status is decided: a reader that goes away does not change it
        print_report(report)
    return exit_status(report)
