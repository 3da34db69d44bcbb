"""``answered``, ``cites``, ``clean`` and the session rule, from the contract's sentences
(DESIGN "Grading"; RC-12: "calls: [] means watched and saw none; no calls key means nothing
watched. The same for produced, answer (null vs absent) and findings")."""

from __future__ import annotations

from campaign.expect import Expectations
from campaign.grade import Evidence, Verdict, event_verdicts, session_verdict

from .events import DOC, WORKSPACE, artifact, call, event

DIGEST = "sha256:" + "1" * 64


def _one(expectations: Expectations, **keys: object) -> tuple[Verdict, Evidence | None]:
    (verdict,) = event_verdicts(event(**keys), 2, expectations, WORKSPACE)
    return verdict.verdict, verdict.evidence


def test_answered_three_states() -> None:
    expected = Expectations(answered="current FX-DR-0002")
    assert _one(expected, answer="current FX-DR-0002") == (Verdict.SATISFIED, Evidence(2))
    assert _one(expected, answer="superseded")[0] is Verdict.UNSATISFIED
    assert _one(expected, answer=None)[0] is Verdict.UNSATISFIED      # answer: null
    assert _one(expected, calls=[]) == (Verdict.NOT_OBSERVED, None)   # no answer key


def test_cites_needs_an_inside_artifact_that_cites_the_id() -> None:
    expected = Expectations(cites=("FX-DR-0001",))
    citing = artifact("notes/a.md", result=DIGEST, cites=["FX-DR-0001"])
    assert _one(expected, produced=[citing]) == (
        Verdict.SATISFIED, Evidence(2, artifact="notes/a.md"))
    other = artifact("notes/a.md", result=DIGEST, cites=["FX-DR-0002"])
    assert _one(expected, produced=[other])[0] is Verdict.UNSATISFIED
    assert _one(expected, produced=[])[0] is Verdict.UNSATISFIED
    assert _one(expected, produced=[artifact("/tmp/x.md")])[0] is Verdict.UNSATISFIED
    assert _one(expected, calls=[]) == (Verdict.NOT_OBSERVED, None)   # no produced key
    unread = artifact("notes/big.md")                                 # not read after
    assert _one(expected, produced=[other, unread])[0] is Verdict.NOT_OBSERVED
    assert _one(expected, produced=[unread, citing])[0] is Verdict.SATISFIED


def test_clean_needs_every_artifact_checked_and_without_findings() -> None:
    expected = Expectations(clean=True)
    checked = artifact("notes/a.md", result=DIGEST, cites=[], findings=[])
    dirty = artifact("notes/b.md", result=DIGEST, cites=[], findings=["HW-R-1"])
    unchecked = artifact("notes/c.md", result=DIGEST, cites=[])
    assert _one(expected, produced=[checked]) == (Verdict.SATISFIED, Evidence(2))
    assert _one(expected, produced=[])[0] is Verdict.SATISFIED
    assert _one(expected, produced=[checked, dirty]) == (
        Verdict.UNSATISFIED, Evidence(2, artifact="notes/b.md"))
    assert _one(expected, produced=[checked, unchecked])[0] is Verdict.NOT_OBSERVED
    assert _one(expected, produced=[unchecked, dirty])[0] is Verdict.UNSATISFIED
    assert _one(expected, answer="x") == (Verdict.NOT_OBSERVED, None)


def test_a_list_gives_one_verdict_per_target_in_the_keys_order() -> None:
    expected = Expectations(answered="2", opened=(DOC, "docs/decisions/FX-DR-0002.md"),
                            cites=("FX-DR-0001",))
    verdicts = event_verdicts(event(calls=[call("Read", DOC)], produced=[], answer="2"), 0,
                              expected, WORKSPACE)
    assert [(v.key, v.target, v.verdict) for v in verdicts] == [
        ("answered", "2", Verdict.SATISFIED),
        ("opened", DOC, Verdict.SATISFIED),
        ("opened", "docs/decisions/FX-DR-0002.md", Verdict.UNSATISFIED),
        ("cites", "FX-DR-0001", Verdict.UNSATISFIED)]


def test_the_session_is_unsatisfied_then_not_observed_then_satisfied() -> None:
    expected = Expectations(answered="2", opened=(DOC,))
    both = event_verdicts(event(calls=[call("Read", DOC)], answer="2"), 0, expected, WORKSPACE)
    assert session_verdict(both) is Verdict.SATISFIED
    unwatched = event_verdicts(event(answer="2"), 0, expected, WORKSPACE)
    assert session_verdict(unwatched) is Verdict.NOT_OBSERVED
    wrong = event_verdicts(event(answer="3"), 0, expected, WORKSPACE)  # and calls unwatched
    assert session_verdict(wrong) is Verdict.UNSATISFIED
