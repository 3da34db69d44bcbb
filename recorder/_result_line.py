"""The last word of a session: what the transform takes from a ``result`` line.

``is_error`` fails closed (only ``false`` records), ``total_cost_usd`` is its
JSON text as `Decimal` (RC-14), the other fields are taken only when they have
the type the CLI prints (STREAM_JSON_FACTS: result lines), and
``permission_denials`` gives the tool of each call the permission rules refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from recorder._harness import decimal_or_none
from recorder._observation import MAX_DENIALS_KEPT, MAX_TOOL_NAME_CHARS


@dataclass(slots=True)
class ResultLine:
    """One ``result`` line as the transform reads it; the last one decides the state."""

    is_error: bool
    subtype: str | None
    api_error_status: int | None
    cost_usd: Decimal | None
    """USD; None when the line has no JSON number there (the cost is then unknown)."""
    text: str | None
    num_turns: int | None
    final_text: str | None
    """The text of the final main-thread message before it (RC-13 reads the answer there)."""
    damaged_at: int | None
    """The last non-JSON line between the final message and this result, if any."""
    denied_tools: tuple[str, ...] = ()


def read_result(obj: dict[str, Any], *, final_text: str | None,
                damaged_at: int | None) -> ResultLine:
    """The `ResultLine` of a decoded ``result`` line; never raises on its values' types."""
    subtype = obj.get("subtype")
    text = obj.get("result")
    return ResultLine(
        is_error=obj.get("is_error") is not False,  # fail closed: only false records
        subtype=subtype if isinstance(subtype, str) else None,
        api_error_status=int_or_none(obj.get("api_error_status")),
        cost_usd=decimal_or_none(obj.get("total_cost_usd")),
        text=text if isinstance(text, str) else None,
        num_turns=int_or_none(obj.get("num_turns")),
        final_text=final_text,
        damaged_at=damaged_at,
        denied_tools=_denied_tools(obj.get("permission_denials")),
    )


def _denied_tools(value: object) -> tuple[str, ...]:
    """The ``tool_name`` of each entry of a result line's ``permission_denials`` (bounded)."""
    if not isinstance(value, list):
        return ()
    return tuple(str(entry["tool_name"])[:MAX_TOOL_NAME_CHARS]
                 for entry in value[:MAX_DENIALS_KEPT]
                 if isinstance(entry, dict) and isinstance(entry.get("tool_name"), str))


def int_or_none(value: object) -> int | None:
    """``value`` when it is a JSON integer (not a boolean), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
