"""The closed vocabularies: arms, tiers, session states, and what each state means.

One place for every closed set the runner names (RC-14's ``arm`` and ``tier``;
docs/batch.md "Session states"), and for the predicates over states that the
recorder, the supervisor, the transcript, the progress view and ``resume``
all ask. Nobody classifies a state by its spelling (``startswith("refused")``)
or keeps a private table: they ask here.

The state table, row by row (docs/batch.md "Session states"):

============================  =====  ===========================  ==========
state                         event  retryable                    cost
============================  =====  ===========================  ==========
``recorded``                  yes    (finished)                   counted
``refused-init``              no     no                           counted
``refused-seal``              no     no                           nothing
``refused-confinement``       no     no                           nothing
``env-fault``                 no     yes                          counted
``harness-error``             no     provider errors only         counted
``no-result``                 no     yes                          unknown
``truncated``                 no     yes                          unknown
``timed-out``                 no     yes                          unknown
``killed``                    no     yes                          unknown
``line-too-long``             no     no                           unknown
``damaged``                   no     yes                          counted
``budget-stopped``            no     yes (a larger budget)        counted
``limit-exceeded``            no     no                           counted
``uncontained``               no     no                           counted
============================  =====  ===========================  ==========
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal, TypeAlias, get_args

if TYPE_CHECKING:
    from collections.abc import Mapping

Tier: TypeAlias = Literal["regression", "campaign", "documentation"]
"""RC-14: the closed vocabulary of ``tier``."""
TIERS: Final[tuple[Tier, ...]] = get_args(Tier)

Arm: TypeAlias = Literal["present", "absent", "no-hook", "no-skills", "no-claude-md", "mcp"]
"""RC-14: the closed vocabulary of ``arm`` (``present``, ``absent`` and the component arms)."""
ARMS: Final[tuple[Arm, ...]] = get_args(Arm)

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
    "damaged",
    "budget-stopped",
    "limit-exceeded",
    "uncontained",
]
"""docs/batch.md "Session states": every attempt ends in exactly one of these."""
STATES: Final[tuple[SessionState, ...]] = get_args(SessionState)

DriveEnd: TypeAlias = Literal["exited", "timed-out", "watchdog", "post-result-grace",
                              "line-too-long", "stdout-limit", "stderr-limit", "line-limit"]
"""How a drive ended (`recorder._driver.drive_child`), as the final record keeps it
(``end``): the child exited by itself, or the driver stopped it for a reason: its wall
limit, the no-output watchdog, the post-result grace, an over-long line, or one of the
bounds on what it prints (docs/batch.md "Session states")."""

REFUSALS: Final = frozenset[SessionState]({"refused-init", "refused-seal", "refused-confinement"})
"""The states in which the runner refused the session (RC-05, RC-07, RC-09): never retried."""

NOTHING_SPENT: Final = frozenset[SessionState]({"refused-seal", "refused-confinement"})
"""Decided before the harness started: their cost is zero, known (never a lower bound)."""

_COST_UNKNOWN: Final = frozenset[SessionState](
    {"no-result", "truncated", "timed-out", "killed", "line-too-long"}
)

_RETRYABLE: Final[Mapping[SessionState, bool]] = MappingProxyType(
    {
        "recorded": False,  # the table's "-": finished, nothing to retry
        "refused-init": False,
        "refused-seal": False,
        "refused-confinement": False,
        "env-fault": True,
        "harness-error": False,  # provider errors are: see harness_error_retryable
        "no-result": True,
        "truncated": True,
        "timed-out": True,
        "killed": True,
        "line-too-long": False,
        "damaged": True,
        "budget-stopped": True,
        "limit-exceeded": False,
        "uncontained": False,  # the host is at fault: a retry would meet it again
    }
)


def is_recorded(state: str) -> bool:
    """True for ``recorded``, the one state that becomes an event (RC-15)."""
    return state == "recorded"


def is_refusal(state: str) -> bool:
    """True for the three ``refused-*`` states (RC-05, RC-07, RC-09)."""
    return state in REFUSALS


def is_failure(state: str) -> bool:
    """True for a final state that is neither recorded nor a refusal (a fault of some kind)."""
    return state in STATES and not is_recorded(state) and not is_refusal(state)


def cost_known(state: SessionState) -> bool:
    """Whether an attempt in ``state`` has a known cost (RC-14: else the figure is a lower bound).

    A state whose stream may have ended before its result line (``no-result``,
    ``truncated``, ``timed-out``, ``killed``, ``line-too-long``) is unknown;
    every other state either read a result line or spent nothing.
    """
    return state not in _COST_UNKNOWN


def state_retryable(state: SessionState) -> bool:
    """The table's ``retryable`` column for ``state`` alone.

    ``harness-error`` answers False here: whether one attempt of it is
    retryable depends on the provider's status (`harness_error_retryable`),
    and the attempt's ledger record carries that answer.
    """
    return _RETRYABLE[state]


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
    """Whether a ``harness-error`` attempt is worth retrying (docs/batch.md "Session states").

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
