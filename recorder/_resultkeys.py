"""Every key of a ``result`` line, decided: read, written in the prose, or ignored (RC-14).

A result line is the harness's last word on a turn; a session can print several (a
background task's notification starts a turn after the first: `recorder._cost`). The
transform reads a few of its keys (`recorder._result_line`); every other key a covered
release prints is decided here with its reason, so a new release's result line is judged
key by key instead of passing unread. The usage-bearing keys are the ones that matter:
``total_cost_usd`` is cumulative over a session's results, so the last one is the
session's cost, while ``usage`` and ``model_usage_since_last_result`` are per result and
``modelUsage`` cumulative per model (tests/fixtures/cost/). Summing any per-result figure
into the cost, or the cumulative one over results, would count a turn twice.

``seen_on`` lists the releases whose committed streams show the key
(tests/fixtures/captures*/, tests/fixtures/cost/, tests/fixtures/resultkeys/). The same table
is in docs/recorder.md ("Result keys"), as `result_keys_markdown` writes it; a test holds
the two equal, and another that every key of the committed result lines is here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

__all__ = ["RESULT_KEYS", "ResultKey", "ResultKeyDecision", "result_keys_markdown"]

ResultKeyDecision: TypeAlias = Literal["read", "prose", "ignored"]
"""``read``: the transform takes it (state, cost, answer, ledger); ``prose``: written in the
transcript's prose; ``ignored``: not kept, for the reason given."""

_BOTH: Final = ("2.1.197", "2.1.332")
_NEW: Final = ("2.1.332",)


@dataclass(frozen=True, slots=True)
class ResultKey:
    """One top-level key of a ``result`` line and what the recorder does with it.

    Attributes:
        key: The key as the harness prints it.
        decision: ``read``, ``prose`` or ``ignored``.
        seen_on: The releases whose committed streams print it, oldest first.
        reason: Why, in one sentence (the rule it serves, or why nothing needs it).
    """

    key: str
    decision: ResultKeyDecision
    seen_on: tuple[str, ...]
    reason: str


RESULT_KEYS: Final[tuple[ResultKey, ...]] = (
    ResultKey("type", "read", _BOTH, "`result`: the line's kind; the last result line read "
              "decides the session's state (docs/batch.md, \"Session states\")."),
    ResultKey("subtype", "read", _BOTH, "named in a harness error's reason; `is_error` "
              "decides, whatever the subtype."),
    ResultKey("is_error", "read", _BOTH, "only `false` records; anything else is a harness "
              "error (fail closed)."),
    ResultKey("api_error_status", "read", _BOTH, "a harness error is retryable when it is "
              "429 or 5xx."),
    ResultKey("result", "read", _BOTH, "the text of a harness error, which says whether a "
              "provider error is retryable when there is no status; never the answer "
              "(the answer rule reads the final assistant message)."),
    ResultKey("total_cost_usd", "read", _BOTH, "the attempt's cost, as its JSON text: "
              "cumulative over the session's results, so the last result's figure is the "
              "attempt's."),
    ResultKey("num_turns", "read", _BOTH, "kept on the observation as the harness counted "
              "the turns; no rule depends on it."),
    ResultKey("permission_denials", "read", _BOTH, "the tool of each call the permission "
              "rules refused, for `show` and the ledger."),
    ResultKey("usage", "ignored", _BOTH, "the tokens of this result's turns only: the cost is "
              "`total_cost_usd` (which prices them), and summing them over results would "
              "only restate it."),
    ResultKey("modelUsage", "ignored", _BOTH, "tokens and `costUSD` per model, cumulative "
              "like `total_cost_usd`, which is their sum; the served model is "
              "`message.model` of the assistant lines."),
    ResultKey("model_usage_since_last_result", "ignored", _NEW, "`modelUsage` of this "
              "result's turns only: per result, so the last one is not the session's cost; "
              "`total_cost_usd` is."),
    ResultKey("subagent_stats", "ignored", _NEW, "counts of the subagents started, "
              "finished or refused; each subagent's calls are recorded as calls, and "
              "their cost is in `total_cost_usd`."),
    ResultKey("safety_stops", "ignored", _NEW, "a count of turns the model stopped for "
              "safety; what the model said is the final message, and nothing is priced "
              "apart from `total_cost_usd`."),
    ResultKey("queued_turn_count", "ignored", _NEW, "prompts waiting when the result was "
              "printed; a `-p` session has one prompt, and a later turn prints its own "
              "result."),
    ResultKey("result_index", "ignored", _NEW, "the result's number in the session (0, 1, "
              "...); the last result line read is the last result, whatever its number."),
    ResultKey("api_error", "ignored", _NEW, "the provider error's kind as the harness names "
              "it (e.g. a cut connection); the state reads `is_error` and `api_error_status`."),
    ResultKey("api_error_type", "ignored", _NEW, "the provider error's `type` (e.g. "
              "`invalid_request_error`); as `api_error`."),
    ResultKey("begun_message_ids", "ignored", _NEW, "the ids of provider messages begun in "
              "the turn; the event groups an answer's lines by `message.id` itself."),
    ResultKey("origin", "ignored", _BOTH, "what started the turn (a background task's "
              "notification); the last result decides the state whatever started it."),
    ResultKey("errors", "ignored", _BOTH, "the messages of an error subtype (max turns, an "
              "error during execution); `is_error` decides the state and the reason names "
              "the subtype."),
    ResultKey("stop_reason", "ignored", _BOTH, "the model's last stop reason; the state "
              "comes from `is_error` and the final message from the assistant lines."),
    ResultKey("terminal_reason", "ignored", _BOTH, "why the harness ended the turn, in its "
              "own words; `is_error` and `subtype` say it for the state."),
    ResultKey("session_id", "ignored", _BOTH, "the harness's random id; the runner names "
              "its sessions (arm, probe, repetition)."),
    ResultKey("uuid", "ignored", _BOTH, "the line's random id; nothing refers to a line by "
              "it."),
    ResultKey("duration_ms", "ignored", _BOTH, "the harness's own timing; the runner "
              "measures each attempt's duration itself."),
    ResultKey("duration_api_ms", "ignored", _BOTH, "time spent in provider calls, as the "
              "harness measured it: no rule reads timings."),
    ResultKey("ttft_ms", "ignored", _BOTH, "time to the first token: a timing."),
    ResultKey("ttft_stream_ms", "ignored", _BOTH, "time to the first streamed token: a "
              "timing."),
    ResultKey("time_to_request_ms", "ignored", _BOTH, "time before the first request: a "
              "timing."),
    ResultKey("first_content_frame_ms", "ignored", _NEW, "time to the first content frame: "
              "a timing."),
    ResultKey("fast_mode_state", "ignored", _BOTH, "the harness's fast-mode toggle; the "
              "driver never asks for it, and the served model is `message.model`."),
    ResultKey("fast_mode_disabled_reason", "ignored", _NEW, "why fast mode is off; as "
              "`fast_mode_state`."),
)
"""Every result-line key of the covered releases, the keys the transform reads first."""


def result_keys_markdown() -> str:
    """`RESULT_KEYS` as the Markdown table docs/recorder.md holds (one row per key)."""
    rows = ["| key | decision | seen on | why |", "|---|---|---|---|"]
    rows += [f"| `{k.key}` | {k.decision} | {', '.join(k.seen_on)} | {k.reason} |"
             for k in RESULT_KEYS]
    return "\n".join(rows)
