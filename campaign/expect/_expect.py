"""A probe's expectations: the ``expect:`` mapping of its front matter, read for the grader only.

The corpus load (`load_corpus`) ignores ``expect:``: a `Probe` carries no
expectation, so nothing the seal, the supervisor or the recorder is handed
holds one (RC-13: the recorder never reads expected values). The grader and
``plan`` read them here, from the probe files again (docs/grading.md).

* `Expectations` - the closed mapping: ``answered``, ``opened``,
  ``not_opened``, ``cites``, ``clean``; an unknown key refuses it.
* `read_expectations` - every probe's expectations, by probe id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from campaign._errors import CorpusError
from campaign.corpus import ID_PATTERN, check_relpath, describe_validation, read_front

if TYPE_CHECKING:
    from campaign.corpus import Corpus

EXPECT_KEY: Final = "expect"
"""The front-matter key that holds a probe's expectations."""


class Expectations(BaseModel):
    """One probe's ``expect:`` mapping, closed (docs/grading.md says each key's verdict rule).

    Every key is optional; a mapping with none of them declares nothing and is refused.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    answered: Annotated[str, Field(strict=True, pattern=r"\S")] | None = None
    """The answer the session should give: one of the probe's ``answers`` (RC-13)."""
    opened: tuple[str, ...] | None = Field(default=None, min_length=1)
    """Corpus-relative documents the session should open (Read, Grep path, Bash word)."""
    not_opened: tuple[str, ...] | None = Field(default=None, min_length=1)
    """Corpus-relative documents the session should leave unopened."""
    cites: tuple[Annotated[str, Field(strict=True, pattern=ID_PATTERN)], ...] | None = Field(
        default=None, min_length=1)
    """Corpus ids that some artifact produced inside the workspace should cite (RC-11)."""
    clean: Literal[True] | None = None
    """``true``: every produced artifact should have ``findings: []`` (RC-11)."""

    @field_validator("opened", "not_opened")
    @classmethod
    def _paths(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for path in value or ():
            check_relpath(path)
        return value

    def keys(self) -> tuple[str, ...]:
        """The declared keys, in the model's order (``answered`` first)."""
        return tuple(name for name in type(self).model_fields if getattr(self, name) is not None)


class ExpectationsRefused(CorpusError):
    """A probe's ``expect:`` breaks a rule; the message names the file, the key and the rule."""


_NAMES: Final = "answered, opened, not_opened, cites, clean"
"""The five keys, in words, for the messages."""

_CLEAN_RULE: Final = ("clean takes only `true` (every produced artifact has `findings: []`); "
                      "leave the key out to expect nothing of findings")


def _raw_problem(raw: Mapping[object, object]) -> str | None:
    """What the raw ``expect:`` mapping breaks before the model sees it, in words; None: nothing.

    Checked here because the model's own messages say it badly or not at all: a key that is
    not a string, a null value (which the model would read as "not declared" and drop), a
    ``clean`` other than the boolean ``true``, and a list holding an entry twice.
    """
    for key, value in raw.items():
        if not isinstance(key, str):
            return (f"the key {key!r} is not a name: the keys of `expect:` are the five names "
                    f"{_NAMES}")
        if key not in Expectations.model_fields:
            continue  # the model refuses it by name
        if value is None:
            return (f"{key}: a null value declares nothing: give a value or leave the key out")
        if key == "clean" and value is not True:
            return f"clean: {json.dumps(value, default=str)} is refused: {_CLEAN_RULE}"
        if key in ("opened", "not_opened", "cites") and isinstance(value, list):
            strings = [entry for entry in value if isinstance(entry, str)]
            twice = next((e for i, e in enumerate(strings) if e in strings[:i]), None)
            if twice is not None:
                return (f"{key}: {twice!r} is listed twice: each entry is one expectation, "
                        "so list it once")
    return None


def parse_expectations(root: str, rel: str, front: Mapping[str, object]) -> Expectations | None:
    """The ``expect:`` of the front matter of probe file ``rel`` (corpus-relative) of the corpus
    at ``root``, or None when it declares none.

    Raises:
        ExpectationsRefused: ``expect:`` is not a mapping, has an unknown key, a value of the
            wrong form, or no key at all.
    """
    if EXPECT_KEY not in front:
        return None
    raw = front[EXPECT_KEY]
    if not isinstance(raw, Mapping) or not raw:
        raise ExpectationsRefused(root, rel, "`expect:` must be a mapping of at least one of "
                                  f"{_NAMES} (docs/expectations.md)")
    problem = _raw_problem(raw)
    if problem is not None:
        raise ExpectationsRefused(root, rel, f"expect: {problem}")
    try:
        return Expectations.model_validate(dict(raw))
    except ValidationError as exc:
        raise ExpectationsRefused(
            root, rel, f"expect: {describe_validation(exc, Expectations)}") from exc


def read_expectations(corpus: Corpus) -> dict[str, Expectations]:
    """Every probe's declared expectations, probe id -> `Expectations` (probes without
    ``expect:`` are absent), read again from the probe files.

    Raises:
        ExpectationsRefused: a probe's ``expect:`` breaks a rule (see `parse_expectations`).
        CorpusError: a probe file can no longer be read as it was loaded.
    """
    found: dict[str, Expectations] = {}
    for probe_id, probe in corpus.probes.items():
        front = read_front(corpus, probe.path)
        expectations = parse_expectations(str(corpus.root), probe.path, front)
        if expectations is not None:
            found[probe_id] = expectations
    return found


def expectation_lines(expectations: Expectations | None) -> list[str]:
    """The lines ``plan`` prints under a probe: each declared key and its value, indented two
    spaces (``expect: none declared`` when ``expectations`` is None)."""
    if expectations is None:
        return ["  expect: none declared (`grade` leaves the probe ungraded; "
                "docs/expectations.md)"]
    lines = ["  expect (graded by `grade`, never seen by a session):"]
    declared = expectations.keys()  # a model iterates as (name, value) pairs
    for key in declared:
        value = getattr(expectations, key)
        shown = ", ".join(value) if isinstance(value, tuple) else (
            "true" if value is True else str(value))
        lines.append(f"    {key}: {shown}")
    return lines
