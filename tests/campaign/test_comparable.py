"""Which plan members make two batches the same measurement: one list, `Plan.COMPARABLE`.

`resume` and `record` (`compare_batch`), the report's merge (`_mergeable`) and a given plan
file (`load_plan_file`) all ask that list, so a change of any member is caught by each of them
and a change of a plan value that is not a member is caught by none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from campaign._errors import PlanError
from campaign.batch._open import compare_batch
from campaign.corpus import load_corpus
from campaign.plan import Plan, compose_plan, dump_plan, load_plan_file
from campaign.report import BatchesDiffer
from campaign.report._build import MEMBERS, _mergeable
from tests.campaign.corpora import doc, probe_doc, probe_yml, write_files

if TYPE_CHECKING:
    from campaign.report._reading import ReportReading

OTHER_DIGEST = "sha256:" + "0" * 64
SAME_MEASUREMENT = ("tree", "lock", "selection", "read_set", "seed", "harness", "arm_specs")
"""The members docs/batch.md and docs/report.md name, in the order they are named: the keys
of a plan file."""
ATTRIBUTES = ("tree", "lock", "selection", "read_set", "seed", "runner_version", "arm_specs")
"""The same members as `Plan` names them in code (``harness`` is the runner's version)."""


@dataclass(frozen=True)
class _Reading:
    """What `_mergeable` reads of a batch: its path and plan."""

    path: Path
    plan: Plan


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    root = tmp_path_factory.mktemp("corpus")
    write_files(root, {
        ".headwater/probe.yml": probe_yml(),
        "docs/probes/p1.md": probe_doc("HW-PRB-001", "P", examines=["docs/notes.md"]),
        "docs/notes.md": doc("HW-N-001", "notes\n"),
    })
    return compose_plan(load_corpus(root), tier="campaign")


def _changed(plan: Plan, member: str) -> Any:
    value = getattr(plan, member)
    if member == "seed":
        return value + 1
    if member == "runner_version":
        return value + "-other"
    if member == "arm_specs":
        first = value[0].model_copy(update={"identity": OTHER_DIGEST})
        return (first, *value[1:])
    if member == "repetitions":
        return value + 1
    return OTHER_DIGEST


def _merge(plan: Plan, other: Plan) -> None:
    readings = [_Reading(Path("/b/1"), plan), _Reading(Path("/b/2"), other)]
    _mergeable(cast("list[ReportReading]", readings))


def test_the_report_lists_the_same_members_as_the_plan() -> None:
    assert (*MEMBERS, "arm_specs") == ATTRIBUTES


def test_the_members_are_the_documented_ones() -> None:
    assert Plan.COMPARABLE == ATTRIBUTES
    assert tuple(Plan.key(m) for m in Plan.COMPARABLE) == SAME_MEASUREMENT


@pytest.mark.parametrize(("member", "key"), list(zip(ATTRIBUTES, SAME_MEASUREMENT, strict=True)))
def test_a_change_of_each_member_is_caught_by_resume_record_and_the_report(
        plan: Plan, member: str, key: str) -> None:
    """Each is named as a plan file spells it, so the reader finds it in plan.yaml."""
    other = plan.model_copy(update={member: _changed(plan, member)})
    assert plan.moved(other) == [member]
    moved = compare_batch(plan, other, recorded_harness_version="v", current_harness_version="v")
    assert moved  # a tree that moved also says where (here: that it cannot say which file)
    assert moved[0].startswith("the arms" if member == "arm_specs" else f"{key} was ")
    with pytest.raises(BatchesDiffer) as caught:
        _merge(plan, other)
    assert caught.value.member == ("arms" if member == "arm_specs" else key)


@pytest.mark.parametrize("member", ["lock", "selection", "read_set", "arm_specs"])
def test_a_plan_file_whose_member_differs_from_the_corpus_is_refused(
        member: str, tmp_path: Path) -> None:
    # tree is refused before (TreeMismatch); seed and harness are the file's own to give.
    root = tmp_path / "corpus"
    write_files(root, {
        ".headwater/probe.yml": probe_yml(),
        "docs/probes/p1.md": probe_doc("HW-PRB-001", "P", examines=["docs/notes.md"]),
        "docs/notes.md": doc("HW-N-001", "notes\n"),
    })
    corpus = load_corpus(root)
    given = compose_plan(corpus, tier="campaign")
    path = tmp_path / "plan.yaml"
    path.write_text(dump_plan(given.model_copy(update={member: _changed(given, member)}),
                              "yaml"))
    with pytest.raises(PlanError) as caught:
        load_plan_file(path, corpus)
    assert ("identity" if member == "arm_specs" else member) in str(caught.value)


def test_a_value_that_is_no_member_is_caught_by_none(plan: Plan) -> None:
    assert "repetitions" not in Plan.COMPARABLE
    other = plan.model_copy(update={"repetitions": plan.repetitions + 1})
    assert plan.moved(other) == []
    assert compare_batch(plan, other, recorded_harness_version="v",
                         current_harness_version="v") == []
    _merge(plan, other)
