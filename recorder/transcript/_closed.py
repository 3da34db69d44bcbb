"""Reading loaded YAML through the closed models: unknown keys and bad values, as refusals.

A key outside a closed set refuses the whole file (RC-16) and the refusal names
the key and its place (``key 'reasoning' at events[0].calls[0] is outside the
closed set of Call``); a pydantic error becomes a refusal naming its rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from recorder._validation import describe_errors

from ._errors import TranscriptRefused
from ._models import Artifact, Call, Event

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import ValidationError


_SET_NAMES = {"Identity": "the run identity ", "Event": "an event ", "Call": "a call ",
              "Artifact": "a produced artifact "}
"""How a refusal names each closed key set, in words."""


def kind(value: object) -> str:
    """What ``value`` is, for a refusal: ``nothing`` for None, else its type's name."""
    return "nothing" if value is None else type(value).__name__


_NESTED: Final[dict[type[BaseModel], dict[str, type[BaseModel]]]] = {
    Event: {"calls": Call, "produced": Artifact},
}


def check_closed(data: object, model: type[BaseModel], where: str) -> dict[str, Any]:
    """Refuse a non-mapping, or any key outside ``model``'s closed set, naming key and place."""
    if not isinstance(data, dict):
        raise TranscriptRefused("RC-16", f"{where} is {kind(data)}, not a mapping")
    allowed = list(model.model_fields)
    owner = _SET_NAMES.get(model.__name__, "")
    for key in data:
        if key not in allowed:
            raise TranscriptRefused(
                "RC-16",
                f"key {key!r} at {where} is not a key {owner}may have: a key outside the "
                f"contract's closed set ({', '.join(allowed)})",
            )
    for key, sub in _NESTED.get(model, {}).items():
        items = data.get(key)
        if isinstance(items, list):
            for i, item in enumerate(items):
                check_closed(item, sub, f"{where}.{key}[{i}]")
    return data


def _rule_of(error: Mapping[str, Any], default: str) -> str:
    if str(error["type"]).startswith("RC-"):
        return str(error["type"])
    loc = [p for p in error["loc"] if isinstance(p, str)]
    if "calls" in loc:
        return "RC-10"
    if "produced" in loc:
        return "RC-11"
    if loc[-1:] == ["answer"]:
        return "RC-13"
    return default


def refusal(exc: ValidationError, where: str, default_rule: str) -> TranscriptRefused:
    """The refusal for pydantic's ``exc`` at ``where``: its rule (an ``RC-`` error type, else
    the rule of the key set it names, else ``default_rule``) and every error with its place."""
    errors = exc.errors(include_url=False)
    parts = describe_errors(exc)
    return TranscriptRefused(_rule_of(errors[0], default_rule), f"{where}: {'; '.join(parts)}")
