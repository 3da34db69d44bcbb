"""``cites`` and ``clean``: what the session produced (DESIGN "Grading", RC-11, RC-12).

Only ``produced`` is read; an artifact *inside* the workspace has a relative path, one
outside an absolute path (or ``~``) and ``path`` alone. An inside artifact without ``cites``
was not read after the session (missing, not a regular file, too large): what it cites, and
whether a rule reported over it, is not known.

``cites: [ID...]``, one verdict per id. No ``produced`` key: not observed. Some inside
artifact's ``cites`` holds the id: satisfied, the evidence naming that artifact (the first).
Else some inside artifact has no ``cites`` key: not observed (it may cite it). Else (nothing
produced inside the workspace, ``produced: []`` included): unsatisfied.

``clean: true``, one verdict. No ``produced`` key: not observed. Some artifact has a
non-empty ``findings``: unsatisfied, naming it. Else some artifact has no ``findings`` key
(no checker ran over it: a batch without a checker, an artifact outside the workspace or one
not read): not observed. Else satisfied: every artifact was checked and no rule reported;
``produced: []`` is satisfied too (nothing was produced, so nothing has a finding; declare
``cites`` beside it to ask for an artifact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._model import Evidence, ExpectationVerdict, Verdict

if TYPE_CHECKING:
    from recorder.transcript import Artifact, Event

_UNWATCHED = "the event has no produced key: nothing watched what it produced"


def inside(artifact: Artifact) -> bool:
    """The artifact lies inside the workspace (its path is workspace-relative)."""
    return not artifact.path.startswith(("/", "~"))


def cites_verdicts(event: Event, index: int, ids: tuple[str, ...]) -> list[ExpectationVerdict]:
    """One ``cites`` verdict per id of ``ids`` over the event at ``index`` (module docstring)."""
    if "produced" not in event.model_fields_set or event.produced is None:
        return [ExpectationVerdict("cites", i, Verdict.NOT_OBSERVED, None, _UNWATCHED)
                for i in ids]
    mine = [a for a in event.produced if inside(a)]
    unread = [a.path for a in mine if a.cites is None]
    verdicts = []
    for cited in ids:
        by = next((a.path for a in mine if a.cites is not None and cited in a.cites), None)
        if by is not None:
            verdicts.append(ExpectationVerdict("cites", cited, Verdict.SATISFIED,
                                               Evidence(index, artifact=by), f"{by} cites it"))
        elif unread:
            verdicts.append(ExpectationVerdict(
                "cites", cited, Verdict.NOT_OBSERVED, None,
                f"{unread[0]} was not read after the session, so what it cites is not known"))
        else:
            said = (f"none of its {len(mine)} artifacts inside the workspace cites it" if mine
                    else "it produced nothing inside the workspace")
            verdicts.append(ExpectationVerdict("cites", cited, Verdict.UNSATISFIED, None, said))
    return verdicts


def clean_verdict(event: Event, index: int) -> ExpectationVerdict:
    """The ``clean: true`` verdict over the event at ``index`` (module docstring)."""
    if "produced" not in event.model_fields_set or event.produced is None:
        return ExpectationVerdict("clean", None, Verdict.NOT_OBSERVED, None, _UNWATCHED)
    for artifact in event.produced:
        if artifact.findings:
            return ExpectationVerdict(
                "clean", None, Verdict.UNSATISFIED, Evidence(index, artifact=artifact.path),
                f"{artifact.path} has findings: {', '.join(artifact.findings)}")
    unchecked = [a.path for a in event.produced if a.findings is None]
    if unchecked:
        return ExpectationVerdict("clean", None, Verdict.NOT_OBSERVED, None,
                                  f"{unchecked[0]} has no findings key: no checker ran over it")
    said = (f"all {len(event.produced)} artifacts have findings: []" if event.produced
            else "it produced nothing (produced: [])")
    return ExpectationVerdict("clean", None, Verdict.SATISFIED, Evidence(index), said)
