"""``grade --json``: a `Grading` and its figures as one stable, versioned JSON object.

The object's ``format`` is `GRADE_FORMAT`; a change that removes or renames a key, or changes
what a value means, makes a new format (adding a key does not). ``grader`` is the grader's
own version (`GRADER_VERSION`), which moves whenever a verdict rule does. Shares, differences
and interval ends are fractions rounded to `DIGITS` places; an infinite odds ratio is the
string ``"inf"``; a figure that cannot be computed is null. Every verdict names its event
(0-based in its arm's transcript) and its call (0-based in the event's ``calls``) or
artifact; when the read set moved, the object's ``note`` says so in a sentence and every
session carries the ``mark``. The caller passes the object through `campaign._json_text.json_safe`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

from campaign.stats import CONFIDENCE

from ._model import MOVED_READ_SET
from ._text import MOVED_SENTENCE

if TYPE_CHECKING:
    from campaign.stats import CommonOddsRatio, Interval

    from ._compare import Difference, Figures, Pooled, Share
    from ._model import ExpectationVerdict, Grading, SessionGrade

GRADE_FORMAT: Final = 1
"""Version of the JSON object's shape."""
KIND: Final = "headwater-campaign grade"
DIGITS: Final = 6


def grade_json(grading: Grading, figures: Figures) -> dict[str, Any]:
    """The JSON object of ``grading`` and its ``figures`` (plain types only)."""
    return {
        "format": GRADE_FORMAT,
        "kind": KIND,
        "grader": grading.grader,
        "confidence": CONFIDENCE,
        "corpus": str(grading.corpus),
        "batches": [str(b) for b in grading.batches],
        "arms": list(grading.arms),
        "reference": figures.reference,
        "moved_read_set": grading.moved_read_set,
        "mark": MOVED_READ_SET if grading.moved_read_set else None,
        "note": MOVED_SENTENCE if grading.moved_read_set else None,
        "probes": [{
            "id": p.probe,
            "expectations": grading.expectations[p.probe].model_dump(mode="json",
                                                                     exclude_none=True),
            "arms": [_share(s) for s in p.shares],
            "differences": [_difference(d) for d in p.differences],
        } for p in figures.probes],
        "ungraded": list(figures.ungraded),
        "pooled": [_pooled(p) for p in figures.pooled],
        "sessions": [_session(s, MOVED_READ_SET if grading.moved_read_set else None)
                     for s in grading.sessions],
        "apart": [{"batch": str(a.batch), "arm": a.arm, "probe": a.probe, "session": a.session,
                   "state": a.state} for a in grading.apart],
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _interval(interval: Interval | None) -> list[float | None] | None:
    return None if interval is None else [_round(interval.low), _round(interval.high)]


def _share(share: Share) -> dict[str, Any]:
    cell = share.cell
    return {"arm": cell.arm, "recorded": cell.recorded, "satisfied": cell.satisfied,
            "unsatisfied": cell.unsatisfied, "not_observed": cell.not_observed,
            "share": _round(share.share), "interval": _interval(share.interval),
            "apart": dict(cell.apart)}


def _difference(difference: Difference) -> dict[str, Any]:
    return {"arm": difference.arm, "difference": _round(difference.difference),
            "interval": _interval(difference.interval),
            "fisher_p": _round(difference.fisher_p), "outcome": difference.outcome}


def _odds(odds: CommonOddsRatio) -> dict[str, Any]:
    estimate: float | str | None = odds.estimate
    if isinstance(estimate, float) and math.isinf(estimate):
        estimate = "inf"
    elif isinstance(estimate, float):
        estimate = _round(estimate)
    return {"estimate": estimate, "interval": _interval(odds.interval), "strata": odds.strata}


def _pooled(pooled: Pooled) -> dict[str, Any]:
    tally = pooled.tally
    return {"arm": pooled.arm, "odds_ratio": _odds(pooled.odds), "wins": tally.wins,
            "losses": tally.losses, "ties": tally.ties, "untested": tally.untested}


def _session(session: SessionGrade, mark: str | None) -> dict[str, Any]:
    return {"batch": str(session.batch), "arm": session.arm, "probe": session.probe,
            "session": session.session, "event": session.event,
            "verdict": str(session.verdict), "mark": mark,
            "verdicts": [_verdict(v, session.event) for v in session.verdicts]}


def _verdict(verdict: ExpectationVerdict, event: int) -> dict[str, Any]:
    evidence = verdict.evidence
    return {"key": verdict.key, "target": verdict.target, "verdict": str(verdict.verdict),
            "event": event,
            "call": None if evidence is None else evidence.call,
            "artifact": None if evidence is None else evidence.artifact,
            "reason": verdict.reason}
