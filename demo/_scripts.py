"""Scripts of the scripted provider: the turns it plays per probe, loaded from JSON files.

A script (docs/provider.md) names the text its probe's task contains
(``match``), the served model, and the turns to play: text, thinking and
tool_use blocks, or fault steps (an HTTP status, a cut connection) that
apply to the requests for the next real turn.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Self, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from recorder import describe_errors


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Strict):
    """A text block of a scripted turn."""

    type: Literal["text"]
    text: str


class ThinkingBlock(_Strict):
    """A thinking block; streamed as ``thinking_delta`` then ``signature_delta``."""

    type: Literal["thinking"]
    thinking: str
    signature: str = "c2NyaXB0ZWQ="


class ToolUseBlock(_Strict):
    """A tool call; ``input`` is streamed as ``input_json_delta`` pieces.

    Use workspace-relative paths in ``input``: every session has its own
    workspace, and the CLI resolves relative paths against its cwd.
    """

    type: Literal["tool_use"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: dict[str, Any]


Block: TypeAlias = Annotated[TextBlock | ThinkingBlock | ToolUseBlock, Field(discriminator="type")]


class Usage(_Strict):
    """Token counts reported for a turn; the CLI prices them locally."""

    input_tokens: int = Field(default=100, ge=0)
    output_tokens: int = Field(default=20, ge=0)
    cache_read_input_tokens: int = Field(default=0, ge=0)
    cache_creation_input_tokens: int = Field(default=0, ge=0)


class Turn(_Strict):
    """One model message, answered to the request whose assistant count is its index."""

    blocks: list[Block] = Field(min_length=1)
    model: str | None = None
    """Served model for this turn; default: the script's, else the request's."""
    usage: Usage = Usage()


class HttpFault(_Strict):
    """Answer ``times`` requests for the next turn with an HTTP error status."""

    fault: Literal["http"]
    status: Literal[429, 500, 529]
    times: int = Field(default=1, ge=1)


class CutFault(_Strict):
    """Reset the connection of ``times`` requests for the next turn."""

    fault: Literal["cut"]
    times: int = Field(default=1, ge=1)


Fault: TypeAlias = HttpFault | CutFault


def _step_kind(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("fault", "turn"))
    return "turn" if isinstance(value, Turn) else str(getattr(value, "fault", "turn"))


Step: TypeAlias = Annotated[
    Annotated[Turn, Tag("turn")]
    | Annotated[HttpFault, Tag("http")]
    | Annotated[CutFault, Tag("cut")],
    Discriminator(_step_kind),
]


class Script(_Strict):
    """The scripted conversation of one probe (or one subagent prompt)."""

    match: str = Field(min_length=1)
    """A phrase of the task text (or Agent prompt) that selects this script."""
    model: str | None = None
    """Default served model (``message.model``) of this script's turns."""
    turns: list[Step] = Field(min_length=1)
    name: str = ""
    """Key of `ScriptedProvider.requests`; `load_scripts` sets the file's stem."""

    def playbook(self) -> list[tuple[tuple[Fault, ...], Turn]]:
        """Each real turn with the fault steps that precede it, by turn index."""
        played: list[tuple[tuple[Fault, ...], Turn]] = []
        pending: list[Fault] = []
        for step in self.turns:
            if isinstance(step, Turn):
                played.append((tuple(pending), step))
                pending = []
            else:
                pending.append(step)
        if pending:
            raise ValueError("fault steps after the last turn apply to no turn")
        return played

    @model_validator(mode="after")
    def _faults_precede_a_turn(self) -> Self:
        self.playbook()
        return self


class ScriptError(ValueError):
    """Raised by `load_scripts` for a script file that cannot be read or validated."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"bad script {path}: {reason}")
        self.path = path
        self.reason = reason


def _substitute(value: Any, home: str) -> Any:
    if isinstance(value, str):
        return value.replace("{home}", home)
    if isinstance(value, list):
        return [_substitute(item, home) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, home) for key, item in value.items()}
    return value


def load_scripts(directory: Path | str, *, home: str | None = None) -> list[Script]:
    """Read every ``*.json`` script of ``directory``, sorted by file name.

    Args:
        directory: Where the scripts are (not recursive); a path or a string.
        home: Replaces the template ``{home}`` in every string of a script;
            default: the runner's ``$HOME``. Nothing else is templated.

    Raises:
        ScriptError: a file is not JSON or breaks the script model (the
            message names the file), or the directory holds no script.
    """
    home = home if home is not None else os.environ.get("HOME", str(Path.home()))
    directory = Path(directory)
    if not directory.is_dir():
        raise ScriptError(directory, "not a directory (give the directory of the scripts)")
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise ScriptError(directory, "no *.json scripts there")

    scripts: list[Script] = []
    for path in paths:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(raw, dict):
                raw.setdefault("name", path.stem)
            script = Script.model_validate(_substitute(raw, home))
        except json.JSONDecodeError as exc:
            raise ScriptError(path, f"not JSON: {exc.msg} at line {exc.lineno}, column "
                                    f"{exc.colno}") from exc
        except ValidationError as exc:
            raise ScriptError(path, _short(exc)) from exc
        except (OSError, ValueError) as exc:
            raise ScriptError(path, str(exc)) from exc
        scripts.append(script)
    return scripts


def _short(exc: ValidationError) -> str:
    """The problems of a script in words (docs/provider.md has the shape)."""
    return "; ".join(describe_errors(exc, Script, hidden=_STEP_TAGS, own=_special))


_STEP_TAGS: Final = frozenset({"turn", "http", "cut"})
"""The tags of a step's kinds in an error's place: they name no key of the file."""


def _special(error: Any) -> str | None:
    where = ".".join(str(p) for p in error["loc"]) or "the script"
    if error["type"] == "missing":
        return f"{where} is missing (a script needs match and turns; a turn, blocks or a fault)"
    if error["type"] == "extra_forbidden":
        return f"{where} is not a key of a script, a turn or a block (docs/provider.md)"
    if error["type"] == "union_tag_invalid":
        ctx = error.get("ctx") or {}
        return (f"{where}: type {ctx.get('tag')!r} is not one of "
                f"{ctx.get('expected_tags', 'the known types')}")
    return None
