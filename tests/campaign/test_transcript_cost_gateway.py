"""The transcripts' cost from attempts that ran through the provider gateway (RC-14 proposed).

An arm's ``cost_cents`` is one ceiling of 100 x the exact sum of its attempts' costs, each
by its source: the gateway's provider-priced sum when the final record has ``gateway``, the
harness's ``total_cost_usd`` when it was written before the gateway. The prose names the
source(s), the price table's date, the harness's agreement and the system prompts the
recorded sessions met. Batches written before the gateway (tests/fixtures/batches/) keep
their cost sentence byte for byte and resume into a mixed figure. Sums worked by hand.
"""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from campaign.batch import read_batch
from campaign.batch._fold import SessionKey
from campaign.batch._journal import Journal
from campaign.batch._records import InvocationRecord
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import Plan, compose_plan
from recorder.transcript import parse_transcript
from recorder.transcript._provider_prose import PROMPT_COVERS
from tests.campaign.corpora import probe_yml, write_files
from tests.campaign.gateway_ledger import final, request, started

NOTE = "Provider: scripted. A test double."
FIXTURES = Path(__file__).parent.parent / "fixtures" / "batches"


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    files = {".headwater/probe.yml": probe_yml()}
    for n in (1, 2):
        files[f"docs/probes/p{n}.md"] = (f"---\nid: HW-PRB-00{n}\ntitle: Probe {n}\n"
                                         "answers: [yes]\nexamines: []\n---\n\n## Task\n\nGo.\n")
    write_files(tmp_path / "corpus", files)
    return compose_plan(load_corpus(tmp_path / "corpus"), tier="campaign")


def invocation(n: int) -> InvocationRecord:
    return InvocationRecord(number=n, command="run" if n == 1 else "resume", pid=9,
                            runner="x", retries=0, max_cost_cents=None,
                            est_session_cents=None, max_wall_s=None)


def _key(probe: str, session: str = "s1") -> SessionKey:
    return SessionKey("present", probe, session)


async def _transcript(plan: Plan, batch: Path, records: list[object]) -> tuple[str, int]:
    """The present arm's prose and cost_cents once ``records`` are journaled into ``batch``
    (an existing, empty directory)."""
    planned = [(SessionKey(arm, p.id, f"s{rep}"), rep) for rep in (1, 2)
               for p in plan.probes for arm in plan.arms]
    with Journal(batch, plan, planned=planned, network="confined",
                 provider_note=NOTE) as journal:
        for record in records:
            await journal.record(record)  # type: ignore[arg-type]
        await journal.render(["present"])
    t = parse_transcript((batch / "transcripts" / "present.md").read_text())
    return t.prose, t.identity.cost_cents


def _paragraph(prose: str, start: str) -> str:
    found = [p for p in prose.split("\n\n") if p.startswith(start)]
    assert len(found) == 1, prose
    return found[0]


@pytest.mark.anyio
async def test_cost_cents_is_the_provider_priced_sum_and_the_prose_says_the_harness_agrees(
    plan: Plan, tmp_path: Path
) -> None:
    # Provider: 0.0123 + 0.0045 = 0.0168 USD -> ceiling(1.68) = 2 cents. The harness said
    # 0.0100 + 0.0070 = 0.0170: 0.0002 apart, within a cent. (Priced by the harness it
    # would have been 2 cents too, so a third attempt sets them apart: below.)
    a, b = _key("HW-PRB-001"), _key("HW-PRB-002")
    prose, cents = await _transcript(plan, tmp_path, [
        started(a), request(a), final(a, harness="0.0100", provider="0.0123"),
        started(b), request(b), final(b, harness="0.0070", provider="0.0045"),
    ])
    assert cents == 2
    line = _paragraph(prose, "Cost source:")
    assert "priced with the price table of 2025-11-24" in line
    assert "cost_cents = 2." in line
    assert line.endswith("the provider's usage prices $0.0168 and the harness's own "
                         "total_cost_usd sums to $0.0170: they agree within a cent.")


@pytest.mark.anyio
async def test_the_harnesss_figure_does_not_make_cost_cents_when_the_gateway_priced(
    plan: Plan, tmp_path: Path
) -> None:
    # Provider 0.0168 (2 cents); the harness 0.5 (50 cents): 0.4832 more, 2876.2 % of
    # 0.0168 (0.4832 / 0.0168 = 28.7619...).
    a = _key("HW-PRB-001")
    prose, cents = await _transcript(plan, tmp_path, [
        started(a), final(a, harness="0.5", provider="0.0168")])
    assert cents == 2
    assert _paragraph(prose, "Cost source:").endswith(
        "the harness says $0.4832 more (2876.2% of the provider's figure).")


@pytest.mark.anyio
async def test_an_unpriced_model_and_an_interrupted_attempt_make_a_named_lower_bound(
    plan: Plan, tmp_path: Path
) -> None:
    # a: 0.01 priced, 2 requests of "claude-<x>" unknown. b: interrupted (a new invocation
    # began while it ran) after one row priced 0.004: counted, and named unknown.
    a, b = _key("HW-PRB-001"), _key("HW-PRB-002")
    prose, cents = await _transcript(plan, tmp_path, [
        invocation(1), started(a), final(a, harness="0.01", provider="0.01",
                                          unpriced=["claude-<x>"], unpriced_requests=2),
        started(b), request(b, cost="0.004"), invocation(2)])
    assert cents == 2  # 0.01 + 0.004 = 0.014 -> 1.4 -> 2
    line = _paragraph(prose, "Cost source:")
    assert "This is a lower bound: 2 requests priced as unknown in whole or in part" in line
    assert '; served models the price table lacks: "claude-\\u003cx\\u003e".' in line
    assert "The requests of interrupted attempts priced before they were cut, $0.004" in line
    assert "HW-PRB-002/s1 attempt 1 (interrupted)" in line


@pytest.mark.anyio
async def test_the_prose_says_every_recorded_session_met_the_same_system_prompt(
    plan: Plan, tmp_path: Path
) -> None:
    a, b, c = _key("HW-PRB-001"), _key("HW-PRB-002"), _key("HW-PRB-001", "s2")
    d = _key("HW-PRB-002", "s2")
    prose, _ = await _transcript(plan, tmp_path, [
        invocation(1), started(a), request(a, digest="sha256:aa"), final(a),
        # b's first attempt met another prompt and failed; its recorded retry met "aa".
        started(b), request(b, digest="sha256:bb"),
        final(b, "harness-error", retryable=True),
        started(b, 2), request(b, attempt=2, digest="sha256:aa"), final(b, attempt=2),
        # c was not recorded: its prompt does not count.
        started(c), request(c, digest="sha256:cc"), final(c, "timed-out", retryable=True),
        # d's first attempt was interrupted (its runner died) after a request with "dd".
        started(d), request(d, digest="sha256:dd"), invocation(2),
        started(d, 2, invocation=2), request(d, attempt=2, digest="sha256:aa", invocation=2),
        final(d, attempt=2, invocation=2),
    ])
    assert _paragraph(prose, "System prompts").endswith(
        'every recorded session (3) met the same system prompt, "sha256:aa".' + PROMPT_COVERS)


@pytest.mark.anyio
async def test_recorded_sessions_that_met_different_system_prompts_are_listed(
    plan: Plan, tmp_path: Path
) -> None:
    a, b = _key("HW-PRB-001"), _key("HW-PRB-002")
    prose, _ = await _transcript(plan, tmp_path, [
        started(a), request(a, digest="sha256:aa"), final(a),
        started(b), request(b, digest="sha256:bb"), final(b)])
    assert _paragraph(prose, "System prompts").endswith(
        'did not all meet the same ones: 2 distinct digests, "sha256:aa" (1 session), '
        '"sha256:bb" (1 session).' + PROMPT_COVERS)


@pytest.mark.parametrize("fmt", ["format1", "format2"])
def test_a_batch_written_before_the_gateway_keeps_its_cost_sentence_byte_for_byte(
    fmt: str, tmp_path: Path
) -> None:
    batch = tmp_path / "batch"
    shutil.copytree(FIXTURES / fmt / "batch", batch)
    with read_batch(batch, transcripts=True) as reading:
        for arm, builder in reading.projection.arms.items():
            prose, identity = builder.freeze().head()
            kept = parse_transcript((batch / "transcripts" / f"{arm}.md").read_text())
            assert _paragraph(prose, "Cost source:") == _paragraph(kept.prose, "Cost source:")
            assert identity.cost_cents == kept.identity.cost_cents
            assert "System prompts" not in prose


@pytest.mark.anyio
async def test_a_resumed_format_2_batch_prices_its_new_attempt_by_the_gateway(
    tmp_path: Path
) -> None:
    """The format-2 fixture resumed (as ``resume`` opens it: a journal on its reading): the
    outstanding absent/FX-PRB-0003/s1 gets attempt 2 through the gateway, provider-priced
    0.0123 (the harness said 0.0500). The arm's older attempts keep the harness's figure:
    0 (its attempt 1) + 0.009600000000000001 (FX-PRB-0002/s1), so the sum is
    0.021900000000000001 USD -> ceiling(2.19...) = 3 cents, and the prose names both."""
    batch = tmp_path / "batch"
    shutil.copytree(FIXTURES / "format2" / "batch", batch)
    finals = [json.loads(line) for line in (batch / "ledger.jsonl").read_text().splitlines()]
    older = [r["cost_usd"] for r in finals if r["kind"] == "final" and r["arm"] == "absent"]
    assert sorted(older) == ["0", "0.009600000000000001"]
    key = SessionKey("absent", "FX-PRB-0003", "s1")
    with read_batch(batch, transcripts=True) as reading:
        assert reading.fold.sessions[key].outstanding
        with Journal(batch, reading.plan, planned=reading.planned,
                     network=reading.config.facts.network,
                     provider_note=reading.config.facts.provider_note,
                     reading=reading) as journal:
            for record in (invocation(2), started(key, 2, invocation=2),
                           request(key, attempt=2, invocation=2),
                           final(key, attempt=2, harness="0.0500", provider="0.0123",
                                 invocation=2)):
                await journal.record(record)
            await journal.render(["absent"])
            assert journal.fold.arms["absent"].cost_usd == sum(
                (Decimal(x) for x in (*older, "0.0123")), Decimal(0))
    t = parse_transcript((batch / "transcripts" / "absent.md").read_text())
    assert t.identity.cost_cents == 3
    line = _paragraph(t.prose, "Cost source:")
    assert "and, for 2 attempts written before the gateway, the harness's own computed" in line
    assert line.endswith("the provider's usage prices $0.0123 and the harness's own "
                         "total_cost_usd sums to $0.0500: the harness says $0.0377 more "
                         "(306.5% of the provider's figure).")


def test_a_request_row_alone_does_not_make_the_arm_render_again(plan: Plan) -> None:
    # Its digest counts only when its attempt ends: until then the transcript is unchanged,
    # so a batch is not rendered once per provider request.
    from campaign.batch._builder import ArmTranscript

    a = _key("HW-PRB-001")
    arm = ArmTranscript(plan, "present", network="confined", provider_note=NOTE)
    arm.started(started(a))
    arm.freeze()
    arm.request(request(a))
    assert not arm.dirty
    arm.final(final(a), 0)
    assert arm.dirty
