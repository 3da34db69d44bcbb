"""What ``run`` says before anything runs when the scripts and the probes do not pair up.

Rule (docs/provider.md, "Script files"): a script's ``match`` is a phrase of exactly one
task. The scripted provider plays the first script whose ``match`` is a phrase of a
request's text, so a probe no script matches gets no answer, a probe several match gets
only the first, and a script that matches several probes plays the same turns to each.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

from campaign.cli._ending import script_warnings

if TYPE_CHECKING:
    from campaign.batch import ScriptedDouble
    from campaign.plan import PlanProbe


class _Double:
    """The part of the scripted provider the check asks: its scripts' names and matches,
    in the order a request is matched against them."""

    def __init__(self, *scripts: tuple[str, str]) -> None:
        self._scripts = scripts

    def scripts_for(self, task: str) -> tuple[str, ...]:
        return tuple(name for name, match in self._scripts if match in task)


def _probes(**tasks: str) -> list[PlanProbe]:
    return [cast("PlanProbe", SimpleNamespace(id=pid, task=task)) for pid, task in tasks.items()]


def _warnings(double: _Double, probes: list[PlanProbe]) -> list[str]:
    return script_warnings(cast("ScriptedDouble", double), probes)


def test_one_script_per_task_says_nothing() -> None:
    double = _Double(("a.json", "Kettle boils"), ("b.json", "Kettle descales"))
    assert _warnings(double, _probes(K1="The Kettle boils how fast?",
                                     K2="How is the Kettle descales done?")) == []


def test_a_match_in_two_tasks_is_named_by_probe_and_by_script() -> None:
    # the new user's corpus: a.json matches "Kettle 3000", a phrase of both tasks; b.json
    # was written for K2, whose sessions got a.json's turns all the same
    double = _Double(("a.json", "Kettle 3000"), ("b.json", "descale"))
    lines = _warnings(double, _probes(K1="How fast does the Kettle 3000 boil?",
                                      K2="How do I descale the Kettle 3000?"))
    assert lines == [
        "warning: 2 scripts of the scripted provider match probe K2's task (a.json, b.json): "
        "only the first, a.json, plays to its sessions; a script's `match` must be a phrase "
        "of exactly one task (docs/provider.md)",
        "warning: script a.json of the scripted provider matches the tasks of 2 probes "
        "(K1, K2): it plays the same turns to the sessions of each; a script's `match` must "
        "be a phrase of exactly one task (docs/provider.md)"]


def test_a_task_no_script_matches_is_still_named() -> None:
    lines = _warnings(_Double(("a.json", "boil")), _probes(K1="boil it", K2="descale it"))
    assert len(lines) == 1 and "no script of the scripted provider matches probe K2" in lines[0]


def test_a_script_that_plays_to_one_probe_only_is_not_said_to_play_to_two() -> None:
    # b.json's "beta" is a phrase of both tasks, but for K1 a.json comes first and plays:
    # b.json plays to K2 alone, so only K1's double match is said
    double = _Double(("a.json", "alpha"), ("b.json", "beta"))
    assert _warnings(double, _probes(K1="alpha beta?", K2="beta?")) == [
        "warning: 2 scripts of the scripted provider match probe K1's task (a.json, b.json): "
        "only the first, a.json, plays to its sessions; a script's `match` must be a phrase "
        "of exactly one task (docs/provider.md)"]
