"""pydantic's errors in words: the key, what is wrong, what is allowed; never its own sentence.

Each case is one a new user met as raw validator text ("Input should be ...") or
as a line that said something untrue.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError
from pydantic_core import PydanticCustomError

from recorder._validation import describe_errors, describe_validation


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tier(_Closed):
    arms: tuple[Literal["present", "absent"], ...] = Field(min_length=1)
    repetitions: int = Field(ge=1)
    nightly: bool = False


class Config(_Closed):
    tiers: dict[str, Tier]


def _words(model: type[BaseModel], data: object) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    text = describe_validation(caught.value, model)
    assert "Input should" not in text and "input_value" not in text
    return text


def test_a_refused_entry_is_its_own_error_not_also_an_empty_list() -> None:
    said = _words(Config, {"tiers": {"c": {"arms": ["presnt"], "repetitions": 1}}})
    assert said == ("tiers.c.arms[0]: 'presnt' is not one of the allowed values "
                    "(present, absent)")


def test_a_null_is_named_once() -> None:
    assert _words(Config, {"tiers": None}) == (
        "tiers must be a mapping of keys to values, not empty (null)")


def test_a_kind_without_a_sentence_of_ours_still_reads_as_ours() -> None:
    said = _words(Config, {"tiers": {"c": {"arms": ["present"], "repetitions": 1,
                                            "nightly": "often"}}})
    assert said.startswith("tiers.c.nightly must be a valid boolean") and "'often'" in said


def test_an_unknown_key_names_the_keys_there() -> None:
    said = _words(Config, {"tiers": {"c": {"arms": ["present"], "repetitions": 1, "x": 1}}})
    assert said == "unknown key 'tiers.c.x' (the keys here are arms, repetitions, nightly; a typo?)"


def test_a_models_own_rule_keeps_its_words() -> None:
    class Ruled(BaseModel):
        n: int

        def model_post_init(self, _: object) -> None:
            if self.n > 3:
                raise PydanticCustomError("RC-99", "n is over the rule's 3")

    with pytest.raises(ValidationError) as caught:
        Ruled.model_validate({"n": 4})
    assert describe_errors(caught.value) == ["n is over the rule's 3"]


def test_a_tagged_unions_tag_names_no_key() -> None:
    class A(_Closed):
        size: int

    class B(_Closed):
        kind: Literal["b"]

    class Holder(_Closed):
        steps: list[Annotated[Annotated[A, Tag("a")] | Annotated[B, Tag("b")],
                              Discriminator(lambda v: "b" if "kind" in v else "a")]]

    with pytest.raises(ValidationError) as caught:
        Holder.model_validate({"steps": [{"size": "big"}]})
    assert describe_errors(caught.value, hidden=frozenset({"a", "b"})) == [
        "steps[0].size must be a whole number, not a string 'big'"]


class Versioned(_Closed):
    format: Literal[1, 2]


def test_a_literal_of_numbers_names_the_numbers_allowed() -> None:
    # pydantic writes a literal's numbers unquoted ("1 or 2"); a file of another format must
    # still be told which formats are read, not "()".
    assert _words(Versioned, {"format": 9}) == "format: 9 is not one of the allowed values (1, 2)"
