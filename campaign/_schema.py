"""The closed key sets a corpus is read through, and their errors in words.

* `ProbeConfig` - ``.headwater/probe.yml``, closed: an unknown key is an error.
* `TierConfig` - one tier of it.
* `ProbeFront` - a probe's front matter (other keys allowed and ignored).
* `describe_validation` - a pydantic error as a person would say it: the key
  (``tiers.campaign.arms[0]``), what is wrong, and what is allowed; never
  pydantic's own sentence (docs/plan.md lists the rules).
"""

from __future__ import annotations

import re
import types
from typing import Annotated, Any, Final, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from recorder._vocab import Arm as Arm
from recorder._vocab import Tier as Tier

ID_PATTERN: Final = r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$"
ID_RE: Final = re.compile(ID_PATTERN.replace("$", r"\Z"))
"""A corpus id: starts with a letter or digit and ends with one (or ``_``), so its word
boundaries (docs/sealing.md) are well defined."""
ID_RULE: Final = ("an id: letters, digits, `_`, `.` and `-`, starting with a letter or digit "
                  "and ending with a letter, digit or `_`")
DIGEST_PATTERN: Final = r"^sha256:[0-9a-f]{64}$"
_PATTERN_WORDS: Final = {
    ID_PATTERN: ID_RULE,
    DIGEST_PATTERN: "a digest: `sha256:` followed by 64 lowercase hex digits",
    r"\S": "a non-blank string",
}
"""What each pattern of the models means, for people."""
_SHOWN_CHARS: Final = 60
"""The most of a bad value an error message quotes."""


def check_relpath(value: str) -> str:
    """Return ``value`` if it is a normalised corpus-relative POSIX path.

    Raises:
        ValueError: empty, absolute, with ``\\``, ``.`` or ``..`` parts, or not normalised.
    """
    parts = value.split("/")
    if (not value or value.startswith("/") or "\\" in value
            or any(part in {"", ".", ".."} for part in parts)):
        raise ValueError(f"{value!r} is not a corpus-relative path (no leading `/`, no `./`, "
                         "`..`, `\\` or `//`)")
    return value


RelPath = Annotated[str, Field(min_length=1)]


class _Closed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class TierConfig(_Closed):
    """One tier of ``probe.yml``: which arms, how many repetitions."""

    arms: tuple[Arm, ...] = Field(min_length=1)
    """Arms run for every probe, in this order; no arm twice."""
    repetitions: int = Field(ge=1, strict=True)
    """Sessions per probe and arm."""

    @field_validator("arms")
    @classmethod
    def _unique(cls, arms: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(arms)) != len(arms):
            raise ValueError(f"an arm is listed twice: {', '.join(arms)}")
        return arms


class ProbeConfig(_Closed):
    """``.headwater/probe.yml``, closed: an unknown key refuses the corpus."""

    lock: RelPath | None = None
    """The taxonomy lock file; absent: ``.headwater/taxonomy.lock`` when it exists."""
    tiers: dict[Tier, TierConfig] = Field(min_length=1)
    tools: tuple[str, ...]
    """The one ``--allowedTools`` list of every arm (RC-04); checked against the pinned
    harness when a plan is composed (`campaign._tools`)."""
    model: str = Field(min_length=1, strict=True)
    checker: str | None = None
    """The findings checker command, run over the workspace (RC-11); optional."""
    folds: dict[str, tuple[RelPath, ...]] = Field(default_factory=dict)
    """Probe id -> files outside docs/ that name the probe and are kept (RC-09)."""
    answer_keys: dict[str, tuple[RelPath, ...]] = Field(default_factory=dict)
    """Probe id -> documents answering the probe, removed with every line naming them."""

    @field_validator("lock")
    @classmethod
    def _lock_path(cls, value: str | None) -> str | None:
        return None if value is None else check_relpath(value)

    @field_validator("folds", "answer_keys")
    @classmethod
    def _paths(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for paths in value.values():
            for path in paths:
                check_relpath(path)
        return value


class ProbeFront(BaseModel):
    """A probe's front matter. Other keys (taxonomy fields) are allowed and ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str = Field(strict=True, pattern=ID_PATTERN)
    title: str = Field(strict=True, min_length=1)
    answers: tuple[Annotated[str, Field(strict=True, pattern=r"\S")], ...]
    examines: tuple[RelPath, ...]

    @field_validator("examines")
    @classmethod
    def _paths(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for path in value:
            check_relpath(path)
        return value


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


def _one(err: Any, model: type[BaseModel]) -> str:
    """One pydantic error (an ``ErrorDetails``) in words."""
    loc: tuple[int | str, ...] = tuple(err["loc"])
    kind, ctx, value = err["type"], err.get("ctx", {}), err.get("input")
    where = _where(loc)
    is_key = bool(loc) and loc[-1] == "[key]"
    if kind == "extra_forbidden":
        allowed = _keys_at(model, loc[:-1])
        return (f"unknown key {where!r}"
                + (f" (the keys here are {', '.join(allowed)}; a typo?)" if allowed else ""))
    if kind == "missing":
        return f"missing key {where!r}"
    if kind in ("literal_error", "enum"):
        expected = ", ".join(re.findall(r"'([^']*)'", str(ctx.get("expected", ""))))
        what = (f"the key {_shown(value)} of {_where(loc[:-2])}" if is_key
                else f"{where}: {_shown(value)}")
        return f"{what} is not one of the allowed values ({expected})"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{where} must be a whole number, not {_kind(value)} {_shown(value)}"
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
        return f"{where} must be a string, not {_kind(value)} {_shown(value)}{hint}"
    if kind == "string_pattern_mismatch":
        rule = _PATTERN_WORDS.get(str(ctx.get("pattern")), f"of the form {ctx.get('pattern')}")
        return f"{where}: {_shown(value)} is not {rule}"
    if kind in ("tuple_type", "list_type"):
        return f"{where} must be a list, not {_kind(value)} {_shown(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"{where} must be a mapping of keys to values, not {_kind(value)} {_shown(value)}"
    if kind == "value_error":
        return f"{where}: {ctx.get('error', err['msg'])}"
    return f"{where}: {_shown(value)} is not accepted ({kind.replace('_', ' ')})"


def describe_validation(exc: ValidationError, model: type[BaseModel]) -> str:
    """Every error of ``exc`` (raised by ``model.model_validate``) in words.

    Each names the key (``tiers.campaign.arms[0]``), says what is wrong and,
    where the model knows it, what is allowed (the keys of a closed mapping,
    the values of a closed vocabulary, the form of an id or a digest). One
    error gives one line; several give one line each, after a count.
    """
    parts = [_one(err, model) for err in exc.errors()]
    if len(parts) == 1:
        return parts[0]
    return f"{len(parts)} problems:\n" + "\n".join(f"  - {part}" for part in parts)
