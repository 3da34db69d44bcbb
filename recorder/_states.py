"""Session states: the DESIGN.md "Session states" table as data.

Every attempt of a session ends in exactly one state; only ``recorded`` becomes
an event. The transform (`recorder._transform`) decides the states it can see
from the stream; ``refused-seal`` and ``refused-confinement`` are decided
before the harness starts (RC-09, RC-05).
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, get_args

if TYPE_CHECKING:
    from collections.abc import Mapping

SessionState: TypeAlias = Literal[
    "recorded",
    "refused-init",
    "refused-seal",
    "refused-confinement",
    "env-fault",
    "harness-error",
    "no-result",
    "truncated",
    "timed-out",
    "killed",
    "line-too-long",
]
STATES: Final[tuple[SessionState, ...]] = get_args(SessionState)

RETRYABLE: Final[Mapping[SessionState, bool]] = MappingProxyType(
    {
        "recorded": False,  # the table's "-": finished, nothing to retry
        "refused-init": False,
        "refused-seal": False,
        "refused-confinement": False,
        "env-fault": True,
        "harness-error": False,  # provider errors are retryable: see harness_error_retryable
        "no-result": True,
        "truncated": True,
        "timed-out": True,
        "killed": True,
        "line-too-long": False,
    }
)
"""Whether ``resume`` reruns a session in this state (harness-error: per attempt)."""

COST_KNOWN: Final[Mapping[SessionState, bool]] = MappingProxyType(
    {
        "recorded": True,
        "refused-init": True,  # the session has spent (read off its result line, if any)
        "refused-seal": True,  # nothing spent
        "refused-confinement": True,  # nothing spent
        "env-fault": True,
        "harness-error": True,
        "no-result": False,
        "truncated": False,
        "timed-out": False,
        "killed": False,
        "line-too-long": False,
    }
)
"""Whether the state's cost is counted (True) or unknown, a lower bound (False; RC-14)."""

NOTHING_SPENT: Final = frozenset[SessionState]({"refused-seal", "refused-confinement"})
"""States decided before the harness started: their cost is zero."""

RETRYABLE_STATUSES: Final = frozenset({429}) | frozenset(range(500, 600))
"""Provider HTTP statuses worth another attempt: rate limit and server errors (529 = overloaded)."""

_RETRYABLE_TEXT: Final = re.compile(
    r"overloaded|rate.?limit|unable to connect|econnreset|econnrefused|etimedout"
    r"|socket hang up|connection error|API Error:.*\b(?:429|5\d\d)\b",
    re.IGNORECASE,
)
"""Provider failures the CLI reports with ``api_error_status: null``: a 529 is
"Repeated 529 Overloaded errors", a dropped stream "Unable to connect to API
(ECONNRESET)" (tests/fixtures/captures f_529_always, f_cut_always)."""


def harness_error_retryable(api_error_status: object, result_text: object) -> bool:
    """Whether a ``harness-error`` attempt is worth retrying (DESIGN.md session states).

    Provider errors are: a status of 429 or 5xx, or, when the status is
    null, a result text naming overload, a rate limit or a failed connection.
    Everything else is not: 4xx other than 429 (a 400 prompt-too-long, a 401),
    ``error_max_turns``, ``error_during_execution``.

    Args:
        api_error_status: the last result line's ``api_error_status`` (int or null).
        result_text: its ``result`` (absent on max-turns and interrupted results).
    """
    if isinstance(api_error_status, int) and not isinstance(api_error_status, bool):
        return api_error_status in RETRYABLE_STATUSES
    return isinstance(result_text, str) and _RETRYABLE_TEXT.search(result_text) is not None
