"""Errors raised by the grader (exit status 2 for ``grade``: bad input, docs/cli.md).

* GradeError             - base class (a `campaign._errors.CampaignError`, so exit 2)
  x NoCorpus             - no corpus where config.yaml (or ``--corpus``) says, so no
                           expectations to grade against (the report then says "ungraded")
  x NotABatch            - a directory that is not a readable batch, or a transcript of it
                           that breaks the contract
    x TranscriptDiffers  - a transcript's event or state is not its batch ledger's
    x TranscriptMissing  - the ledger ended sessions of an arm that has no transcript
  x BatchesDiffer        - batches of different plans, asked to be graded together
  x SameBatchTwice       - one batch named twice (its sessions would count twice)

Each message names the path and what is wrong, in words; the same facts are kept as
attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from campaign._errors import CampaignError

if TYPE_CHECKING:
    from pathlib import Path


class GradeError(CampaignError):
    """Base class of the grader's errors; the CLI exits 2."""


class NoCorpus(GradeError):
    """No corpus at ``corpus``: the expectations live in its probe documents, so nothing can
    be graded. ``given``: the path came from ``--corpus`` (else from ``batch``'s config.yaml)."""

    def __init__(self, corpus: Path, batch: Path, *, given: bool) -> None:
        source = "--corpus" if given else f"the path {batch}/config.yaml records"
        super().__init__(
            f"no corpus at {corpus} ({source}: no .headwater/probe.yml there), so there are "
            "no expectations to grade against; give the corpus's directory with --corpus DIR")
        self.corpus = corpus
        self.batch = batch
        self.given = given


class NotABatch(GradeError):
    """``path`` is not a batch the grader can read (plan, config, ledger or a transcript)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path} is not a batch the grader can read: {problem}; give a batch "
                         "directory made by run, demo or record")
        self.path = path
        self.problem = problem


class TranscriptDiffers(NotABatch):
    """The transcript at ``transcript`` says of session ``session`` (``probe/session``)
    something its batch's ledger does not: ``key`` names what (its state, calls, produced,
    answer, or an event the ledger has not recorded)."""

    def __init__(self, batch: Path, transcript: Path, session: str, key: str) -> None:
        super().__init__(batch, (
            f"the transcript differs from the batch's ledger at {session}: {key}; the "
            "transcript may have been edited (or its last write refused), and the grader "
            "grades no transcript the ledger contradicts; `check-transcript "
            f"{transcript} --batch {batch}` says which holds"))
        self.transcript = transcript
        self.session = session
        self.key = key


class TranscriptMissing(NotABatch):
    """The ledger ended ``ended`` sessions of ``arm`` and its transcript is not there."""

    def __init__(self, batch: Path, transcript: Path, arm: str, ended: int) -> None:
        super().__init__(batch, (
            f"{transcript} is missing while the ledger holds {ended} ended "
            f"session{'s' if ended != 1 else ''} of arm {arm}; grading without it would "
            "show that arm as untested; `headwater-campaign retranscribe "
            f"{batch}` writes it again from the ledger (each session re-derived from its "
            "kept stream where kept)"))
        self.transcript = transcript
        self.arm = arm
        self.ended = ended


class BatchesDiffer(GradeError):
    """Two batches to grade together differ in a plan member, their arms, or the model.

    Attributes:
        member: the plan file's key (``tree``, ``read_set``, ``harness`` ...), ``arms`` or
            ``model``. first, second: the two batches. was, now: the two values, as text.
    """

    def __init__(self, member: str, first: Path, second: Path, was: str, now: str) -> None:
        super().__init__(
            f"batches {first} and {second} differ in {member} ({was} against {now}), so their "
            "sessions did not measure the same thing and are not graded together; grade each "
            "on its own")
        self.member = member
        self.first = first
        self.second = second
        self.was = was
        self.now = now


class SameBatchTwice(GradeError):
    """One batch directory was named more than once."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"batch {path} is named more than once; its sessions would count twice")
        self.path = path
