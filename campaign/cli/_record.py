"""``record``: one session, named ``r<N>``, added to a batch and to its arm's transcript.

Exit: 0 recorded; 12 refused (RC-05, RC-07, RC-09); 1 any other final state;
2 bad input, or a batch planned with other inputs; 130/143 stopped by a signal.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import anyio

from campaign._terminal_text import block, one_line
from campaign.batch import BatchRequest, FinalRecord, open_batch, transcript_path
from campaign.supervisor import BatchContext, RunLimits, SessionSpec, Supervisor
from recorder import is_recorded, is_refusal

from ._args import RecordArgs, batch_options, resolve_harness_path
from ._batch import compose, credentials_for, default_harness_path, load_corpus_or_usage
from ._console import StderrConsole
from ._context import provider_ca_file, supervise
from ._errors import EXIT_BUG, EXIT_CONFINEMENT, EXIT_OK, SIGNAL_BASE, UsageError
from ._provider import start_provider

if TYPE_CHECKING:
    from campaign.batch import BatchFold


def next_record_name(fold: BatchFold, *, arm: str, probe: str) -> str:
    """``r<N>``: one more than the highest ``r<n>`` of this probe and arm in the batch."""
    highest = 0
    for key in fold.sessions:
        if key.arm == arm and key.probe == probe and key.session[:1] == "r" \
                and key.session[1:].isdigit():
            highest = max(highest, int(key.session[1:]))
    return f"r{highest + 1}"


def cmd_record(args: RecordArgs) -> int:
    """``record``: one session into ``--batch-dir``; see the module docstring for statuses."""
    corpus = load_corpus_or_usage(args.corpus)
    plan = compose(corpus, tier=args.tier, seed=args.seed, plan_file=None, model=args.model)
    if args.probe not in corpus.probes:
        raise UsageError(f"probe {args.probe!r} is not on the shelf docs/probes/ of {corpus.root}")
    if args.arm not in plan.arms:
        raise UsageError(f"arm {args.arm!r} is not an arm of tier {plan.tier} "
                         f"({', '.join(plan.arms)}); pass the --tier that runs it")
    harness_path = resolve_harness_path(args.harness_path, default_harness_path())
    options = batch_options(args, corpus=corpus.root, tier=plan.tier, harness_path=harness_path,
                            model=plan.model)
    provider_ca = provider_ca_file(args.provider_ca)  # before the batch is opened: exit 2
    err = StderrConsole()
    request = BatchRequest(mode="record", options=options, corpus=corpus, plan=plan,
                           credentials=credentials_for(options), batch_dir=args.batch_dir,
                           planned=(), arms_used=(args.arm,), probes_used=(args.probe,),
                           provider=start_provider)
    with open_batch(request, notify=lambda t: err.print(block(t), markup=False,
                                                        soft_wrap=True)) as opened:
        fold = opened.journal.fold
        probe = next(p for p in plan.probes if p.id == args.probe)
        name = next_record_name(fold, arm=args.arm, probe=args.probe)
        spec = SessionSpec(probe=probe, arm=plan.arm_spec(args.arm), repetition=0, session=name)
        def build(ctx: BatchContext) -> Supervisor:
            return Supervisor(
                ctx, opened.journal, RunLimits(concurrency=1, retries=0, backoff_s=1.0),
                done_detail=f"record ran one session ({args.arm} {args.probe} {name}); the "
                            "batch's planned sessions are run by run and resume")

        outcome = anyio.run(partial(supervise, opened, build, [spec], provider_ca=provider_ca,
                                    produced_extra=args.produced), backend="trio")
        final = _final_of(opened.journal.fold, spec)
        if outcome.signal is not None:
            err.print(f"stopped by signal {outcome.signal}; the session is in the ledger as "
                      "killed", markup=False)
            print(f"batch: {opened.path}")
            return SIGNAL_BASE + outcome.signal
        if final is None:
            raise UsageError(f"{outcome.detail}; the session has no final record")
        print(f"{args.probe} {name}: {final.state}"
              + ("" if is_recorded(final.state) else f" ({one_line(final.reason)})"))
        for warning in record_warnings(final):
            err.print(f"warning: {one_line(warning)}", markup=False, soft_wrap=True)
        print(f"transcript: {transcript_path(opened.path, args.arm)}")
        print(f"batch: {opened.path}")
    if is_recorded(final.state):
        return EXIT_OK
    return EXIT_CONFINEMENT if is_refusal(final.state) else EXIT_BUG


def _final_of(fold: BatchFold, spec: SessionSpec) -> FinalRecord | None:
    """The final record this invocation wrote for ``spec``'s session: the last one the
    journal folded, when it is that session's (its name is new to the batch, so no earlier
    record is)."""
    last = fold.last_final
    if last is not None and (last.arm, last.probe, last.session) == (
            spec.arm.arm, spec.probe.id, spec.session):
        return last
    return None


def record_warnings(record: FinalRecord) -> list[str]:
    """What a user of ``record`` must see besides the state (anomalies, the checker, orphans)."""
    warnings = []
    if record.anomalies:
        first = record.anomaly_lines[0] if record.anomaly_lines else None
        warnings.append(f"{record.anomalies} stdout line(s) were not JSON (anomalies, kept "
                        f"aside in the ledger); first at line {first and first.line}: "
                        f"{first and first.excerpt!r}")
    if record.findings_note:
        warnings.append(f"{record.findings_note} (no findings key was written)")
    if record.orphan_results:
        warnings.append(f"{len(record.orphan_results)} tool_result(s) answered no tool_use")
    return warnings
