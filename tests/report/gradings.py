"""Hand-made `campaign.grade.Grading` values for the report's tests (the grader is not run).

`grading` writes, per (arm, probe), one `SessionGrade` per verdict asked for,
each with one `ExpectationVerdict` per expectation target: the session's own
verdict for the first target and, for the others, what ``rest`` says. The
report only counts these; nothing here computes a figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from campaign.expect import Expectations
from campaign.grade import (
    GRADER_VERSION,
    Apart,
    CellGrade,
    ExpectationVerdict,
    Grading,
    SessionGrade,
    Verdict,
)

if TYPE_CHECKING:
    from pathlib import Path

S, U, N = Verdict.SATISFIED, Verdict.UNSATISFIED, Verdict.NOT_OBSERVED


def grading(batch: Path, expectations: dict[str, Expectations],
            verdicts: dict[tuple[str, str], list[Verdict]], *,
            apart: dict[tuple[str, str], list[str]] | None = None,
            rest: Verdict = S, moved: bool = False, corpus: str = "/corpus",
            arms: tuple[str, ...] = ("present", "absent")) -> Grading:
    """A grading of ``batch``: ``verdicts[(arm, probe)]`` one per recorded session (``s1``..),
    ``apart[(arm, probe)]`` the states of the sessions outside the denominator."""
    from pathlib import Path

    sessions = []
    cells = {}
    for (arm, probe), found in verdicts.items():
        targets = _targets(expectations[probe])
        for i, verdict in enumerate(found, start=1):
            per = tuple(ExpectationVerdict(key=key, target=target,  # type: ignore[arg-type]
                                           verdict=verdict if t == 0 else rest,
                                           evidence=None, reason="made by the test")
                        for t, (key, target) in enumerate(targets))
            sessions.append(SessionGrade(batch=batch, arm=arm, probe=probe, session=f"s{i}",
                                         event=i - 1, verdict=verdict, verdicts=per))
        cells[probe, arm] = CellGrade(probe=probe, arm=arm, satisfied=found.count(S),
                                      unsatisfied=found.count(U), not_observed=found.count(N))
    gone = tuple(Apart(batch=batch, arm=arm, probe=probe, session=f"x{i}", state=state)
                 for (arm, probe), states in (apart or {}).items()
                 for i, state in enumerate(states))
    return Grading(grader=GRADER_VERSION, corpus=Path(corpus), batches=(batch,), arms=arms,
                   probes=tuple(sorted({p for _, p in verdicts})),
                   expectations=expectations, moved_read_set=moved, sessions=tuple(sessions),
                   apart=gone, cells=cells)


def _targets(expectations: Expectations) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for key in ("answered", "opened", "not_opened", "cites", "clean"):
        value = getattr(expectations, key)
        if value is None:
            continue
        if isinstance(value, tuple):
            out.extend((key, v) for v in value)
        else:
            out.append((key, None if key == "clean" else value))
    return out
