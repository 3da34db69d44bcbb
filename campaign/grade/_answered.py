"""``answered``: the event's answer is the expected value (DESIGN "Grading", RC-13).

No ``answer`` key: not observed (RC-12: the recorder did not say, never a pass). ``answer:
null`` (the final line held no declared answer, or not one alone): unsatisfied. Another
declared answer: unsatisfied. The expected value: satisfied, the evidence naming the event
(the answer is the event's, no call gives it). Values compare as the recorder writes them:
the declared form, exactly (RC-13 already folded case and word order into it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._model import Evidence, ExpectationVerdict, Verdict

if TYPE_CHECKING:
    from recorder.transcript import Event


def answered_verdict(event: Event, index: int, expected: str) -> ExpectationVerdict:
    """The ``answered: expected`` verdict of the event at ``index`` (module docstring)."""
    if "answer" not in event.model_fields_set:
        return ExpectationVerdict("answered", expected, Verdict.NOT_OBSERVED, None,
                                  "the event has no answer key")
    if event.answer is None:
        return ExpectationVerdict("answered", expected, Verdict.UNSATISFIED, None,
                                  "answer: null (no declared answer alone on the last line)")
    if event.answer != expected:
        return ExpectationVerdict("answered", expected, Verdict.UNSATISFIED, None,
                                  f"the answer is {event.answer!r}")
    return ExpectationVerdict("answered", expected, Verdict.SATISFIED, Evidence(index),
                              f"the answer is {event.answer!r}")
