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
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from recorder import Arm as Arm
from recorder import Tier as Tier
from recorder import describe_validation as _describe

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
    harness when a plan is composed (`campaign.corpus._tools`)."""
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


def describe_validation(exc: ValidationError, model: type[BaseModel]) -> str:
    """Every error of ``exc`` (raised by ``model.model_validate``) in words, the corpus's
    patterns (an id, a digest) named as rules (`recorder._validation.describe_validation`)."""
    return _describe(exc, model, patterns=_PATTERN_WORDS)
