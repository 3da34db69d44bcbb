"""A pydantic error as a person would say it: the key, what is wrong, what is allowed.

``tiers.campaign.arms[0]: 'presnt' is not one of the allowed values (present,
absent, ...)``, never pydantic's own sentence ("Input should be ..."). Used by
every reader of a closed file: the corpus's probe.yml and front matter, a
plan, a batch's config, a transcript, the scripted provider's scripts.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

_BUILTIN_KINDS: Final = frozenset({
    "bool_type", "bool_parsing", "float_type", "float_parsing", "finite_number",
    "greater_than", "less_than", "less_than_equal", "too_long", "string_too_long",
    "decimal_parsing", "decimal_type", "none_required", "set_type", "frozen_set_type",
    "string_unicode", "bytes_type", "date_type", "datetime_type", "url_parsing", "is_instance_of"})
"""pydantic's error kinds that have no sentence of ours; any other kind is a model's own
rule (a custom error such as an ``RC-`` one) whose message is already in words."""
_SHOWN_CHARS: Final = 60
"""The most of a bad value an error message quotes."""


def _where(loc: tuple[int | str, ...]) -> str:
    """``("tiers", "campaign", "arms", 0)`` -> ``tiers.campaign.arms[0]``; dict keys named."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part != "[key]":
            out += f".{part}" if out else str(part)
    return out or "the top level"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _value(value: Any) -> str:
    """``a number 3``; ``empty (null)`` alone for None (its repr would say nothing more)."""
    return _kind(value) if value is None else f"{_kind(value)} {_shown(value)}"


def _kind(value: Any) -> str:
    """What a YAML value is, in words (for "must be a string, not a number ...")."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", tuple: "a list", dict: "a mapping", type(None): "empty (null)"}
    return next((word for t, word in names.items() if type(value) is t), type(value).__name__)


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``; ``Annotated[X, ...]`` -> ``X``."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            rest = [a for a in get_args(annotation) if a is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation


def _keys_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[str, ...]:
    """The keys the closed model found at ``loc`` allows (empty when it is not a model)."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return ()
            annotation = field.annotation
        elif get_origin(annotation) in (dict, tuple, list) and get_args(annotation):
            annotation = get_args(annotation)[-1 if get_origin(annotation) is dict else 0]
        else:
            return ()
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return tuple(annotation.model_fields)
    return ()


def _allowed(expected: str) -> list[str]:
    """The values of pydantic's ``expected`` text of a literal: its quoted strings
    (``'a', 'b' or 'c'``), or, when none is quoted, the bare values (numbers: ``1 or 2``)."""
    quoted = re.findall(r"'([^']*)'", expected)
    return quoted or [part for part in re.split(r",\s*|\s+or\s+", expected) if part]


def _one(err: Any, model: type[BaseModel] | None, patterns: Mapping[str, str]) -> str:
    """One pydantic error (an ``ErrorDetails``) in words."""
    loc: tuple[int | str, ...] = tuple(err["loc"])
    kind, ctx, value = err["type"], err.get("ctx", {}), err.get("input")
    where = _where(loc)
    is_key = bool(loc) and loc[-1] == "[key]"
    if kind == "extra_forbidden":
        allowed = _keys_at(model, loc[:-1]) if model is not None else ()
        return (f"unknown key {where!r}"
                + (f" (the keys here are {', '.join(allowed)}; a typo?)" if allowed else ""))
    if kind == "missing":
        return f"missing key {where!r}"
    if kind in ("literal_error", "enum"):
        expected = ", ".join(_allowed(str(ctx.get("expected", ""))))
        what = (f"the key {_shown(value)} of {_where(loc[:-2])}" if is_key
                else f"{where}: {_shown(value)}")
        return f"{what} is not one of the allowed values ({expected})"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{where} must be a whole number, not {_value(value)}"
    if kind == "greater_than_equal":
        return f"{where} must be at least {ctx.get('ge')}, not {_shown(value)}"
    if kind == "too_short":
        least = ctx.get("min_length")
        return (f"{where} must hold at least {least} {'entry' if least == 1 else 'entries'}, "
                f"not {ctx.get('actual_length', 'fewer')}")
    if kind == "string_too_short":
        return f"{where} must not be empty"
    if kind == "string_type":
        hint = " (quote it in YAML to make it a string)" if _kind(value) in (
            "a number", "a boolean") else ""
        return f"{where} must be a string, not {_value(value)}{hint}"
    if kind == "string_pattern_mismatch":
        rule = patterns.get(str(ctx.get("pattern")), f"of the form {ctx.get('pattern')}")
        return f"{where}: {_shown(value)} is not {rule}"
    if kind in ("tuple_type", "list_type"):
        return f"{where} must be a list, not {_value(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"{where} must be a mapping of keys to values, not {_value(value)}"
    if kind == "value_error":
        return f"{where}: {ctx.get('error', err['msg'])}"
    if kind in _BUILTIN_KINDS:  # pydantic's own sentence, made to read as ours
        said = str(err["msg"]).replace("Input should be", "must be")
        return f"{where} {said[:1].lower()}{said[1:]}, not {_value(value)}"
    return f"{where}: {err['msg']}" if loc else str(err["msg"])  # a model's own rule


def describe_validation(exc: ValidationError, model: type[BaseModel] | None = None, *,
                        patterns: Mapping[str, str] | None = None,
                        hidden: frozenset[str] = frozenset()) -> str:
    """Every error of ``exc`` (raised by ``model.model_validate``) in words.

    Each names the key (``tiers.campaign.arms[0]``), says what is wrong and,
    where the model knows it, what is allowed (the keys of a closed mapping,
    the values of a closed vocabulary, the form a pattern stands for in
    ``patterns``). One error gives one line; several give one line each, after
    a count. ``hidden``: parts of an error's place that name no key (the tag of
    a tagged union). A list too short because its one entry was refused is
    that entry's error only.
    """
    parts = describe_errors(exc, model, patterns=patterns, hidden=hidden)
    if len(parts) == 1:
        return parts[0]
    return f"{len(parts)} problems:\n" + "\n".join(f"  - {part}" for part in parts)


def _errors(exc: ValidationError, hidden: frozenset[str]) -> list[Any]:
    errors = []
    for err in exc.errors(include_url=False):
        err["loc"] = tuple(p for p in err["loc"] if not (isinstance(p, str) and p in hidden))
        errors.append(err)
    inner = {e["loc"][:-1] for e in errors if e["loc"] and isinstance(e["loc"][-1], int)}
    return [e for e in errors if not (e["type"] == "too_short" and e["loc"] in inner)]


def describe_errors(exc: ValidationError, model: type[BaseModel] | None = None, *,
                    patterns: Mapping[str, str] | None = None,
                    hidden: frozenset[str] = frozenset(),
                    own: Callable[[Any], str | None] | None = None) -> list[str]:
    """The errors of ``exc`` in words, one string each (`describe_validation` joins them).

    ``own``: a reader's own words for an error (an ``ErrorDetails``, its place
    without ``hidden`` parts), or None to leave it to these.
    """
    out = []
    for err in _errors(exc, hidden):
        said = own(err) if own is not None else None
        out.append(said if said is not None else _one(err, model, patterns or {}))
    return out
