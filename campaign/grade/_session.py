"""One event graded against its probe's expectations, and the session rule (DESIGN "Grading").

Verdicts in the model's order of keys (``answered``, ``opened``, ``not_opened``, ``cites``,
``clean``), one per target of a list. The session: unsatisfied when any verdict is, else not
observed when any is, else satisfied (`session_verdict`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._answered import answered_verdict
from ._artifacts import cites_verdicts, clean_verdict
from ._model import ExpectationVerdict, Verdict
from ._opened import opened_verdicts

if TYPE_CHECKING:
    from collections.abc import Iterable

    from campaign.expect import Expectations
    from recorder.transcript import Event


def event_verdicts(event: Event, index: int, expectations: Expectations,
                   workspace_path: str | None) -> tuple[ExpectationVerdict, ...]:
    """Every verdict of the event at ``index`` (0-based, in its arm's transcript) against
    ``expectations``; ``workspace_path``: where the batch's sessions saw their workspace."""
    verdicts: list[ExpectationVerdict] = []
    if expectations.answered is not None:
        verdicts.append(answered_verdict(event, index, expectations.answered))
    if expectations.opened is not None:
        verdicts += opened_verdicts(event, index, "opened", expectations.opened, workspace_path)
    if expectations.not_opened is not None:
        verdicts += opened_verdicts(event, index, "not_opened", expectations.not_opened,
                                    workspace_path)
    if expectations.cites is not None:
        verdicts += cites_verdicts(event, index, expectations.cites)
    if expectations.clean is not None:
        verdicts.append(clean_verdict(event, index))
    return tuple(verdicts)


def session_verdict(verdicts: Iterable[ExpectationVerdict]) -> Verdict:
    """Unsatisfied when any of ``verdicts`` is, else not observed when any is, else satisfied
    (none at all: satisfied; a probe with expectations always has one)."""
    seen = {v.verdict for v in verdicts}
    if Verdict.UNSATISFIED in seen:
        return Verdict.UNSATISFIED
    if Verdict.NOT_OBSERVED in seen:
        return Verdict.NOT_OBSERVED
    return Verdict.SATISFIED
