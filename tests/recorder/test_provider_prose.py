"""The prose's cost source and system-prompt sentences (recorder/transcript/_provider_prose.py).

RC-14 as proposed: the sentence names the source(s), the price table's date, the unpriced
models (a lower bound), and how far the harness's own figure stands from the provider's
(absolute and relative; within a cent they agree). Differences are worked out by hand.
"""

from __future__ import annotations

from decimal import Decimal

from recorder.transcript import CostSource, cost_source_line, system_prompts_line
from recorder.transcript._provider_prose import HARNESS_SOURCE, PROMPT_COVERS

OLD = ("Cost source: the harness's own computed cost, total_cost_usd of the last result line "
       "of each attempt; not the provider's invoice. cost_cents = 2.")


def test_an_arm_without_a_gateway_attempt_says_what_older_batches_say_byte_for_byte() -> None:
    assert cost_source_line(None, cents=2) == OLD
    assert cost_source_line(CostSource(harness_attempts=3), cents=2) == OLD
    assert HARNESS_SOURCE.format(cents=2) == OLD


def test_the_provider_source_names_the_price_tables_date_and_agreement_within_a_cent() -> None:
    source = CostSource(provider_attempts=2, prices=("2025-11-24",), compared=2,
                        compared_provider=Decimal("0.0168"), compared_harness=Decimal("0.0170"))
    line = cost_source_line(source, cents=2)
    assert line.startswith("Cost source: the provider's own token usage of each request")
    assert "priced with the price table of 2025-11-24 that ships with headwater-campaign" in line
    assert "written before the gateway" not in line
    # RC-14: the exact sum, then one ceiling; the prose says so (0.0168 USD is 1.68 cents: 2)
    assert "summed exactly, then rounded up once to whole cents" in line
    assert "cost_cents = 2." in line
    assert line.endswith("Over the 2 attempts with both figures, the provider's usage prices "
                         "$0.0168 and the harness's own total_cost_usd sums to $0.0170: they "
                         "agree within a cent.")


def test_a_difference_of_a_cent_or_more_is_said_absolute_and_relative() -> None:
    # 0.0500 - 0.0168 = 0.0332; 0.0332 / 0.0168 = 1.976190... -> 197.6 %.
    source = CostSource(provider_attempts=1, prices=("2025-11-24",), compared=1,
                        compared_provider=Decimal("0.0168"), compared_harness=Decimal("0.0500"))
    assert cost_source_line(source, cents=2).endswith(
        "the harness says $0.0332 more (197.6% of the provider's figure).")
    # Exactly one cent apart is not "within a cent"; the harness lower: "less".
    source = CostSource(provider_attempts=1, prices=("2025-11-24",), compared=1,
                        compared_provider=Decimal("0.04"), compared_harness=Decimal("0.03"))
    assert cost_source_line(source, cents=4).endswith(
        "the harness says $0.01 less (25.0% of the provider's figure).")


def test_attempts_written_before_the_gateway_are_counted_in_the_source() -> None:
    source = CostSource(provider_attempts=1, harness_attempts=2, prices=("2025-11-24",))
    line = cost_source_line(source, cents=3)
    assert ("and, for 2 attempts written before the gateway, the harness's own computed "
            "cost (total_cost_usd of the last result line)") in line
    assert line.endswith("was read for none of these attempts, so the two cannot be compared.")


def test_unpriced_models_make_a_lower_bound_that_names_them_escaped() -> None:
    source = CostSource(provider_attempts=1, prices=("2025-11-24",), unpriced_requests=3,
                        unpriced_models=("claude-<new>\n# heading",))
    line = cost_source_line(source, cents=1)
    assert ("This is a lower bound: 3 requests priced as unknown in whole or in part" in line)
    assert ('; served models the price table lacks: "claude-\\u003cnew\\u003e\\n# heading".'
            in line)
    assert "\n" not in line and "<" not in line


def test_unpriced_requests_without_a_model_say_what_may_have_left_them_unknown() -> None:
    source = CostSource(provider_attempts=1, prices=("2025-11-24",), unpriced_requests=1)
    assert ("This is a lower bound: 1 request priced as unknown in whole or in part (no usage "
            "read, a model the table lacks, or a response cut before its final usage, whose "
            "known part is counted)." in cost_source_line(source, cents=1))


def test_one_system_prompt_for_every_recorded_session_is_said_so() -> None:
    assert system_prompts_line({"sha256:ab": 4}, 4) == (
        "System prompts (the provider gateway's digest of each request's system prompt, its "
        'date line taken out): every recorded session (4) met the same system prompt, '
        '"sha256:ab". The digest covers the system prompt alone: the harness sends CLAUDE.md '
        "and its other memory files in the conversation's first user message, not in the "
        "system prompt, so arms that differ only in what they load meet the same system "
        "prompt.")


def test_different_system_prompts_are_listed_with_their_sessions() -> None:
    line = system_prompts_line({"sha256:ab": 3, "sha256:cd": 1}, 4)
    assert line is not None
    assert line.endswith('the 4 recorded sessions did not all meet the same ones: 2 distinct '
                         'digests, "sha256:ab" (3 sessions), "sha256:cd" (1 session).'
                         + PROMPT_COVERS)


def test_the_same_two_system_prompts_in_every_session_are_the_same_prompts() -> None:
    line = system_prompts_line({"sha256:ab": 2, "sha256:cd": 2}, 2)
    assert line is not None and line.endswith(
        'every recorded session (2) met the same 2 system prompts: "sha256:ab", "sha256:cd".'
        + PROMPT_COVERS)


def test_no_digest_no_sentence() -> None:
    assert system_prompts_line({}, 0) is None


def test_the_harness_sum_is_written_to_the_provider_figures_places_not_its_float_noise() -> None:
    # The demo's arm: eight floats like 0.029699999999999997 sum to 0.222399999999999990;
    # beside the provider's $0.222400 it reads $0.222400, rounded half up, and says so.
    source = CostSource(provider_attempts=8, prices=("2025-11-24",), compared=8,
                        compared_provider=Decimal("0.222400"),
                        compared_harness=Decimal("0.222399999999999990"))
    assert cost_source_line(source, cents=23).endswith(
        "the provider's usage prices $0.222400 and the harness's own total_cost_usd sums to "
        "$0.222400 (rounded): they agree within a cent.")
    # A difference carries the harness's noise too: 0.050000000000000003 - 0.0168.
    source = CostSource(provider_attempts=1, prices=("2025-11-24",), compared=1,
                        compared_provider=Decimal("0.0168"),
                        compared_harness=Decimal("0.050000000000000003"))
    assert cost_source_line(source, cents=2).endswith(
        "total_cost_usd sums to $0.0500 (rounded): the harness says $0.0332 (rounded) more "
        "(197.6% of the provider's figure).")
