"""`grade_batches`: batches and a corpus read, every recorded event graded, counts tallied.

What it reads (and nothing else): each batch's config.yaml and plan.yaml (the corpus path,
the workspace path the sessions saw, the plan and its recorded read set; through
`campaign.batch.read_batch`), each arm's transcript (``transcripts/<arm>.md``, through the
recorder's closed reader), and the probes' expectations from the corpus
(`campaign.expect.read_expectations`). It writes nothing. The verdicts are a function of the
transcripts, the expectations and `GRADER_VERSION` alone.

Several batches are graded together only when their plans are one measurement (the plan
members of `Plan.COMPARABLE`, the arms with their identities, and the model asked for), as
the report merges them. The denominator of a probe and arm is its recorded sessions; the
sessions of the plan that are not recorded are `Apart`: their state from the transcript's
``## Sessions`` table, or ``not final`` for a planned session with no row there yet.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Final

from campaign.batch import (
    BatchFileError,
    LedgerCorrupt,
    SessionKey,
    read_batch,
    transcript_path,
)
from campaign.corpus import PROBE_YML, load_corpus
from campaign.expect import read_expectations
from campaign.plan import Plan
from recorder import is_recorded, tree_digest
from recorder.transcript import TranscriptRefused, read_transcript

from ._errors import BatchesDiffer, NoCorpus, NotABatch, SameBatchTwice, TranscriptMissing
from ._held import LedgerView, hold_identity, hold_to_ledger
from ._model import GRADER_VERSION, Apart, CellGrade, Grading, SessionGrade, Verdict
from ._session import event_verdicts, session_verdict

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from campaign.batch import BatchReading
    from campaign.corpus import Corpus
    from campaign.expect import Expectations
    from recorder.transcript import Transcript

INTERRUPTED: Final = "interrupted"
"""The state shown for a session whose last attempt its runner cut short (it died, or it
stopped and wrote the attempt ``killed`` with ``counts: false``): ``status``'s word for it,
so the two commands name one session alike."""

NOT_FINAL: Final = "not final"
"""The state of a planned session that has no row in its arm's ``## Sessions`` table yet
(never started, running, or interrupted)."""


def grade_batches(paths: Sequence[Path], *, corpus: Path | None = None) -> Grading:
    """Grade the batches at ``paths`` (each resolved) against the corpus's expectations.

    Args:
        paths: One or more batch directories of one plan.
        corpus: The corpus root to read the expectations from; None: the path the first
            batch's config.yaml records.

    Raises:
        SameBatchTwice: a batch is named twice.
        NotABatch: a path is not a readable batch, or a transcript of it breaks the contract.
        BatchesDiffer: the batches are not of one plan, or asked another model.
        NoCorpus: no corpus (no ``.headwater/probe.yml``) at the corpus path.
        CorpusError: the corpus is there but cannot be loaded, or a probe's ``expect:``
            breaks a rule (`campaign.expect.ExpectationsRefused`).
    """
    seen: set[Path] = set()
    for path in paths:
        if path in seen:
            raise SameBatchTwice(path)
        seen.add(path)
    views = [LedgerView() for _ in paths]
    readings = [_read(path, view) for path, view in zip(paths, views, strict=True)]
    plan = _one_plan(readings)
    root = corpus if corpus is not None else Path(readings[0].config.options.corpus)
    if not (root / PROBE_YML).is_file():
        raise NoCorpus(root, readings[0].path, given=corpus is not None)
    loaded = load_corpus(root)
    wanted = {p.id for p in plan.probes}
    expectations = {k: v for k, v in read_expectations(loaded).items() if k in wanted}
    sessions: list[SessionGrade] = []
    apart: list[Apart] = []
    for reading, view in zip(readings, views, strict=True):
        _grade_batch(reading, view, expectations, sessions, apart)
    probes = tuple(p.id for p in plan.probes)
    return Grading(
        grader=GRADER_VERSION, corpus=root, batches=tuple(r.path for r in readings),
        arms=plan.arms, probes=probes, expectations=expectations,
        moved_read_set=read_set_now(loaded, plan) != plan.read_set,
        sessions=tuple(sessions), apart=tuple(apart),
        cells=_cells(probes, plan.arms, expectations, sessions, apart))


def read_set_now(corpus: Corpus, plan: Plan) -> str | None:
    """The read set ``corpus`` composes for ``plan``'s probes (the ``tree`` formula over the
    probe files and the files they examine, as the planner computes it); None when a probe of
    the plan is no longer on the corpus's shelf (the read set moved)."""
    files: dict[str, str] = {}
    for planned in plan.probes:
        probe = corpus.probes.get(planned.id)
        if probe is None:
            return None
        for path in (probe.path, *probe.examines):
            files[path] = corpus.files[path]
    return tree_digest(files)


def _read(path: Path, view: LedgerView) -> BatchReading:
    try:
        return read_batch(path, watch=lambda _plan: view)
    except (BatchFileError, LedgerCorrupt) as exc:
        raise NotABatch(path, str(exc)) from exc


def _one_plan(readings: list[BatchReading]) -> Plan:
    """The first batch's plan, when every other batch's is the same measurement
    (`Plan.first_difference`; else `BatchesDiffer`, naming the first member that differs)."""
    first = readings[0]
    for other in readings[1:]:
        if (differs := first.plan.first_difference(other.plan)) is not None:
            raise BatchesDiffer(differs[0], first.path, other.path, differs[1], differs[2])
    return first.plan


def _transcript(reading: BatchReading, view: LedgerView, arm: str) -> Transcript | None:
    """The arm's transcript, held to its batch (`campaign.grade._held`); None when the
    batch has none for it yet and its ledger has ended none of the arm's sessions.

    Raises:
        TranscriptMissing: the ledger ended sessions of ``arm`` and the file is not in
            the batch's ``transcripts/`` directory (a batch without that directory, a
            ledger alone, has no transcripts to grade: its sessions are apart).
        NotABatch: unreadable, breaking the contract, or not this batch's and arm's.
        TranscriptDiffers: an event or state is not the ledger's.
    """
    batch = reading.path
    path = transcript_path(batch, arm)
    if not path.exists():
        ended = sum(1 for key in view.ended if key.arm == arm)
        if ended and path.parent.is_dir():  # a ledger alone (no transcripts/) grades nothing
            raise TranscriptMissing(batch, path, arm, ended)
        return None
    try:
        transcript = read_transcript(path)
    except OSError as exc:
        raise NotABatch(batch, f"cannot read {path}: {exc.strerror or exc}") from exc
    except TranscriptRefused as exc:
        raise NotABatch(batch, f"{path} breaks the transcript contract: {exc}") from exc
    hold_identity(batch, path, arm, transcript, reading.plan)
    hold_to_ledger(batch, path, arm, transcript, view)
    return transcript


def _grade_batch(reading: BatchReading, view: LedgerView, expectations: Mapping[str, Expectations],
                 sessions: list[SessionGrade], apart: list[Apart]) -> None:
    """Grade every recorded event of ``reading``'s graded probes into ``sessions``; put the
    sessions of those probes that are not recorded into ``apart``."""
    workspace_path = reading.config.options.workspace_path
    for arm in reading.plan.arms:
        transcript = _transcript(reading, view, arm)
        states: dict[tuple[str, str], str] = {}
        if transcript is not None:
            states = {(r.probe, r.session): r.state for r in transcript.sessions}
            for index, event in enumerate(transcript.events):
                expected = expectations.get(event.probe)
                if expected is None:
                    continue
                verdicts = event_verdicts(event, index, expected, workspace_path)
                sessions.append(SessionGrade(  # the arm is the transcript's own (held)
                    batch=reading.path, arm=transcript.identity.arm, probe=event.probe,
                    session=event.session, event=index, verdict=session_verdict(verdicts),
                    verdicts=verdicts))
        planned = [(k.probe, k.session) for k, _ in reading.planned if k.arm == arm]
        for probe, session in dict.fromkeys([*planned, *states]):
            state = states.get((probe, session), NOT_FINAL)
            log = reading.fold.sessions.get(SessionKey(arm, probe, session))
            if log is not None and log.interrupted and not is_recorded(state):
                state = INTERRUPTED  # status's word: a row written killed, counts false
            if probe in expectations and not is_recorded(state):
                apart.append(Apart(reading.path, arm, probe, session, state))


def _cells(probes: tuple[str, ...], arms: tuple[str, ...],
           expectations: Mapping[str, Expectations], sessions: list[SessionGrade],
           apart: list[Apart]) -> dict[tuple[str, str], CellGrade]:
    verdicts = Counter((s.probe, s.arm, s.verdict) for s in sessions)
    outside: dict[tuple[str, str], Counter[str]] = {}
    for a in apart:
        outside.setdefault((a.probe, a.arm), Counter())[a.state] += 1
    return {(probe, arm): CellGrade(
        probe=probe, arm=arm, satisfied=verdicts[probe, arm, Verdict.SATISFIED],
        unsatisfied=verdicts[probe, arm, Verdict.UNSATISFIED],
        not_observed=verdicts[probe, arm, Verdict.NOT_OBSERVED],
        apart=dict(sorted(outside.get((probe, arm), Counter()).items())))
        for probe in probes if probe in expectations for arm in arms}
