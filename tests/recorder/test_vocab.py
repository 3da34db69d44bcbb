"""The vocabulary's state predicates against docs/batch.md's "Session states" table, row by row.

The expected values are the table's columns written out here, not read from the
module: a predicate that drifts from the table goes red.
"""

from __future__ import annotations

import pytest

from recorder._vocab import (
    STATES,
    cost_known,
    is_failure,
    is_recorded,
    is_refusal,
    state_retryable,
)

# state: (event, retryable, cost) as docs/batch.md's table gives them; "provider" = harness-error's
# "yes for provider errors", which the state alone answers "no" to.
TABLE = {
    "recorded": (True, False, "counted"),
    "refused-init": (False, False, "counted"),
    "refused-seal": (False, False, "nothing"),
    "refused-confinement": (False, False, "nothing"),
    "env-fault": (False, True, "counted"),
    "harness-error": (False, "provider", "counted"),
    "no-result": (False, True, "unknown"),
    "truncated": (False, True, "unknown"),
    "timed-out": (False, True, "unknown"),
    "killed": (False, True, "unknown"),
    "line-too-long": (False, False, "unknown"),
    "damaged": (False, True, "counted"),
    "budget-stopped": (False, True, "counted"),
    "limit-exceeded": (False, False, "counted"),
    "uncontained": (False, False, "counted"),
}


def test_the_vocabulary_holds_exactly_the_tables_states() -> None:
    assert set(STATES) == set(TABLE)
    assert len(STATES) == len(set(STATES))


@pytest.mark.parametrize("state", sorted(TABLE))
def test_state_predicates_follow_the_table(state: str) -> None:
    event, retryable, cost = TABLE[state]
    assert is_recorded(state) is event
    assert state_retryable(state) is (retryable is True)  # type: ignore[arg-type]
    assert cost_known(state) is (cost != "unknown")  # type: ignore[arg-type]
    assert is_refusal(state) is state.startswith("refused-")
    assert is_failure(state) is (not event and not state.startswith("refused-"))


def test_an_unknown_word_is_neither_refusal_nor_failure() -> None:
    assert not is_refusal("refused-by-mood")
    assert not is_failure("exploded")
