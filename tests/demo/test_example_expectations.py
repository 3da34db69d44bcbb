"""The demo corpus's ``expect:``: it parses, it names what the corpus holds, and it is true to
the scripts, so a graded demo batch differs between its arms on exactly one probe.

The scripts are read route by route: the present arm's requests carry the corpus's
CLAUDE.md (the pinned CLI sends it as a reminder in the first user message,
tests/fixtures/captures/STREAM_JSON_FACTS.md) and its skill; ``absent`` removes that whole
layer, so its requests carry neither. What each route's session opens, writes and answers
is judged here by the rules as docs/grading.md states them (``opened``: a Read path or a
Grep path equal to the document; ``cites``: an id in a written artifact; ``answered``:
RC-13's set rule over the final line), restated, not taken from the grader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from campaign.corpus import load_corpus
from campaign.expect import Expectations, read_expectations
from demo import Script, load_scripts
from demo._scripts import TextBlock, ToolUseBlock

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "demo" / "example" / "corpus"
SCRIPTS = REPO / "demo" / "example" / "scripts"
LAYER: Final = ("CLAUDE.md", ".claude/skills/headwater-house-style/SKILL.md")
"""The harness layer the present arm loads and ``absent`` removes, as far as a request
can carry its text."""


def _arm_text(arm: str) -> str:
    return "\n".join((CORPUS / rel).read_text() for rel in LAYER) if arm == "present" else ""


def _words(line: str) -> list[str]:
    """RC-13's normalisation, restated: trim, one trailing period, casefold, split."""
    return line.strip().removesuffix(".").casefold().split()


def _answer(final: str, answers: tuple[str, ...]) -> str | None:
    """RC-13: the declared answer whose words, as a set, are the last line's; else None."""
    lines = [line for line in final.split("\n") if line.strip()]
    last = sorted(_words(lines[-1])) if lines else []
    return next((a for a in answers if sorted(_words(a)) == last), None)


def _verdict(script: Script, arm: str, expect: Expectations,
             answers: tuple[str, ...]) -> dict[str, bool]:
    """Per declared key: whether the session this arm's route plays satisfies it."""
    turns = [turn for _, turn in script.playbook(script.route(_arm_text(arm)))]
    uses = [b for t in turns for b in t.blocks if isinstance(b, ToolUseBlock)]
    opened = {str(u.input.get("file_path")) for u in uses if u.name == "Read"}
    opened |= {str(u.input.get("path")) for u in uses if u.name == "Grep"}
    written = " ".join(str(u.input.get("content", "")) for u in uses if u.name == "Write")
    final = "\n".join(b.text for b in turns[-1].blocks if isinstance(b, TextBlock))
    verdict: dict[str, bool] = {}
    if expect.answered is not None:
        verdict["answered"] = _answer(final, answers) == expect.answered
    if expect.opened is not None:
        verdict["opened"] = set(expect.opened) <= opened
    if expect.not_opened is not None:
        verdict["not_opened"] = not set(expect.not_opened) & opened
    if expect.cites is not None:
        verdict["cites"] = all(cited in written for cited in expect.cites)
    assert expect.clean is None, "the demo configures no checker: clean would be not observed"
    return verdict


def test_every_demo_probe_declares_expectations_that_parse() -> None:
    corpus = load_corpus(CORPUS)
    expectations = read_expectations(corpus)
    assert sorted(expectations) == sorted(corpus.probes)
    for probe_id, expect in expectations.items():
        assert expect.answered is not None and expect.opened is not None, probe_id


def test_the_expectations_name_what_the_corpus_holds() -> None:
    # The rules of item 1 that plan will enforce: an answered value among the probe's
    # answers, opened / not_opened paths that are documents, cited ids that exist.
    corpus = load_corpus(CORPUS)
    documents = set(corpus.documents.values())
    for probe_id, expect in read_expectations(corpus).items():
        assert expect.answered in corpus.probes[probe_id].answers, probe_id
        for path in (*(expect.opened or ()), *(expect.not_opened or ())):
            assert path in documents, (probe_id, path)
        assert set(expect.cites or ()) <= corpus.ids, probe_id


@pytest.mark.parametrize("arm", ["present", "absent"])
def test_the_expectations_are_true_to_the_scripts(arm: str) -> None:
    corpus = load_corpus(CORPUS)
    scripts = {s.name: s for s in load_scripts(SCRIPTS, home="/home/runner")}
    verdicts = {
        probe_id: _verdict(scripts[probe_id], arm, expect, corpus.probes[probe_id].answers)
        for probe_id, expect in read_expectations(corpus).items()
    }
    # Every key holds but one: HW-PRB-0002's script ends in a sentence (RC-13 reads no answer
    # from it) in both arms; HW-PRB-0001 without the layer stops at the superseded record.
    failing = {(p, key) for p, keys in verdicts.items() for key, ok in keys.items() if not ok}
    expected = {("HW-PRB-0002", "answered")}
    if arm == "absent":
        expected |= {("HW-PRB-0001", "answered"), ("HW-PRB-0001", "opened")}
    assert failing == expected


def test_exactly_one_probe_differs_between_the_arms() -> None:
    corpus = load_corpus(CORPUS)
    scripts = {s.name: s for s in load_scripts(SCRIPTS, home="/home/runner")}
    differ = []
    for probe_id, expect in read_expectations(corpus).items():
        answers = corpus.probes[probe_id].answers
        sessions = {arm: all(_verdict(scripts[probe_id], arm, expect, answers).values())
                    for arm in ("present", "absent")}
        if sessions["present"] != sessions["absent"]:
            differ.append((probe_id, sessions))
    assert differ == [("HW-PRB-0001", {"present": True, "absent": False})]
