"""The grader's values: verdicts per event and expectation, per session, per probe and arm.

All frozen; built by `campaign.grade.grade_batches`, read by the ``grade``
command and the report. docs/grading.md says each rule in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Final, Literal

from campaign.expect import Expectations

GRADER_VERSION: Final = "2"
"""The grader's own version, in every output (``grader``); bumped whenever a verdict rule
changes, never with a release that leaves the rules alone."""

MOVED_READ_SET: Final = "graded over a moved read set"
"""The mark of verdicts whose batch recorded another read set than the corpus composes now."""

ExpectationKey = Literal["answered", "opened", "not_opened", "cites", "clean"]


class Verdict(StrEnum):
    """One of three verdicts (RC-12: an absent key is never a pass)."""

    SATISFIED = "satisfied"
    UNSATISFIED = "unsatisfied"
    NOT_OBSERVED = "not observed"


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a verdict came from: the event, and the call or artifact within it.

    ``event`` is the event's 0-based index in its arm's transcript ``## Events``;
    ``call`` the 0-based index in that event's ``calls``; ``artifact`` a ``produced`` path.
    """

    event: int
    call: int | None = None
    artifact: str | None = None


@dataclass(frozen=True, slots=True)
class ExpectationVerdict:
    """The verdict of one expectation over one event.

    ``target`` is the value (``answered``), the document path (``opened``,
    ``not_opened``), the id (``cites``), or None (``clean``): a list-valued
    expectation gives one verdict per target. ``evidence`` names the event and
    call (or artifact) of every satisfied verdict, and of an unsatisfied one
    where one call decides it (a ``not_opened`` document that was opened).
    """

    key: ExpectationKey
    target: str | None
    verdict: Verdict
    evidence: Evidence | None
    reason: str
    """In words, for people (``the answer is 'X'``, ``no call names it``, ``no calls key``)."""


@dataclass(frozen=True, slots=True)
class SessionGrade:
    """One recorded session's verdicts: unsatisfied if any is, else not observed if any is,
    else satisfied."""

    batch: Path
    arm: str
    probe: str
    session: str
    event: int
    """Its event's 0-based index in the arm's transcript."""
    verdict: Verdict
    verdicts: tuple[ExpectationVerdict, ...]


@dataclass(frozen=True, slots=True)
class Apart:
    """A session of the plan that is not in the denominator: not recorded (its state from the
    transcript's ``## Sessions`` table), or not yet run."""

    batch: Path
    arm: str
    probe: str
    session: str
    state: str


@dataclass(frozen=True, slots=True)
class CellGrade:
    """One probe and arm: counts of recorded sessions by verdict, and the sessions apart.

    ``recorded == satisfied + unsatisfied + not_observed``; the satisfied share is
    ``satisfied / recorded``; not observed is shown apart, never folded into either side.
    """

    probe: str
    arm: str
    satisfied: int
    unsatisfied: int
    not_observed: int
    apart: Mapping[str, int] = field(default_factory=dict)
    """State -> how many sessions of this cell are outside the denominator."""

    @property
    def recorded(self) -> int:
        """The denominator: recorded sessions."""
        return self.satisfied + self.unsatisfied + self.not_observed


@dataclass(frozen=True, slots=True)
class Grading:
    """The grade of one or more batches of the same plan against one corpus's expectations.

    ``expectations`` holds the probes that declare some; a probe absent from it is
    ungraded (the report shows its most frequent answer instead).
    """

    grader: str
    corpus: Path
    batches: tuple[Path, ...]
    arms: tuple[str, ...]
    """In the plan's order; the first is the reference arm."""
    probes: tuple[str, ...]
    """Every probe of the plan, in the plan's order."""
    expectations: Mapping[str, Expectations]
    moved_read_set: bool
    """True when a batch's recorded read set differs from the corpus's: verdicts are kept and
    marked `MOVED_READ_SET`."""
    sessions: tuple[SessionGrade, ...]
    apart: tuple[Apart, ...]
    cells: Mapping[tuple[str, str], CellGrade]
    """(probe, arm) -> counts, for every graded probe and every arm."""

    def cell(self, probe: str, arm: str) -> CellGrade | None:
        """The counts of ``probe`` and ``arm``; None when the probe declares no expectations."""
        return self.cells.get((probe, arm))
