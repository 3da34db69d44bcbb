"""The batch order (docs/batch.md, "Order"), checked against its written definition.

The definition, implemented here again from the docs' words: repetition by
repetition; in each, the probes in a Fisher-Yates shuffle whose step i draws
j = int(sha256("<seed>:<rep>:probes:<i>")) mod (i + 1), i from n-1 down to 1; for
each probe its arms in the same shuffle under the label "<seed>:<rep>:<probe>:arms".
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from campaign.corpus._corpus import load_corpus
from campaign.plan import ORDER_ALGORITHM
from campaign.plan._plan import Plan, compose_plan
from campaign.supervisor import session_order
from tests.campaign.corpora import probe_yml, write_files


def _fisher_yates(items: list[str], label: str) -> list[str]:
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = int(hashlib.sha256(f"{label}:{i}".encode()).hexdigest(), 16) % (i + 1)
        out[i], out[j] = out[j], out[i]
    return out


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    files = {".headwater/probe.yml": probe_yml(tiers={"campaign": {
        "arms": ["present", "absent", "no-claude-md"], "repetitions": 3}})}
    files["CLAUDE.md"] = "Be brief.\n"
    for n in range(1, 6):
        files[f"docs/probes/p{n}.md"] = (f"---\nid: HW-PRB-00{n}\ntitle: Probe {n}\nanswers: []\n"
                                         f"examines: []\n---\n\n## Task\n\nDo {n}.\n")
    write_files(tmp_path, files)
    return compose_plan(load_corpus(tmp_path), tier="campaign", seed=7)


def test_the_order_is_the_documented_definition(plan: Plan) -> None:
    expected = []
    for rep in (1, 2, 3):
        for probe in _fisher_yates([p.id for p in plan.probes], f"7:{rep}:probes"):
            for arm in _fisher_yates(list(plan.arms), f"7:{rep}:{probe}:arms"):
                expected.append((rep, probe, arm))
    got = [(s.repetition, s.probe.id, s.arm.arm) for s in session_order(plan)]
    assert got == expected
    assert [s.position for s in session_order(plan)] == list(range(len(expected)))
    assert "sha256" in ORDER_ALGORITHM


def test_each_session_once_arms_of_a_probe_together_repetitions_in_turn(plan: Plan) -> None:
    specs = list(session_order(plan))
    keys = [s.key for s in specs]
    assert len(keys) == len(set(keys)) == plan.session_count
    assert [s.repetition for s in specs] == sorted(s.repetition for s in specs)
    for start in range(0, len(specs), len(plan.arms)):
        block = specs[start:start + len(plan.arms)]
        assert len({s.probe.id for s in block}) == 1
        assert {s.arm.arm for s in block} == set(plan.arms)
    assert {s.session for s in specs if s.repetition == 2} == {"s2"}


def test_the_seed_moves_the_order_and_nothing_else(plan: Plan) -> None:
    other = plan.model_copy(update={"seed": 8})
    a, b = list(session_order(plan)), list(session_order(other))
    assert [s.key for s in a] != [s.key for s in b]
    assert {s.key for s in a} == {s.key for s in b}
    assert [s.key for s in session_order(plan)] == [s.key for s in a]  # same seed, same order
