"""Scripts of the scripted provider: the turns it plays per probe, loaded from JSON files.

A script (docs/provider.md) names the text its probe's task contains
(``match``), the served model, and the turns to play: text, thinking and
tool_use blocks, fault steps (demo/_faults.py: an HTTP status, a cut
connection, an SSE error event) that apply to the requests for the next real
turn, and a branch: the rest of the script chosen by text the request carries
(``when_request_contains``), else ``otherwise``. A branch is decided per
request from that request alone (`Script.route`): the provider keeps no
per-connection state.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
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

from recorder import ARMS, describe_errors

from ._faults import FAULT_TAGS
from ._faults import CutFault as CutFault
from ._faults import Fault as Fault
from ._faults import HttpFault as HttpFault
from ._faults import SseErrorFault as SseErrorFault


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


MAX_DELAY_S: Final = 120.0
"""The longest ``delay_s`` a turn may ask for (the CLI's own request timeout is longer)."""


class Turn(_Strict):
    """One model message, answered to the request whose assistant count is its index."""

    blocks: list[Block] = Field(min_length=1)
    model: str | None = None
    """Served model for this turn; default: the script's, else the request's."""
    usage: Usage = Usage()
    delay_s: float = Field(default=0.0, ge=0.0, le=MAX_DELAY_S)
    """Seconds the provider waits before it answers with this turn (a slow model: the
    k_*_during_api situations signal the CLI meanwhile); 0 answers at once."""
    chunk: int | None = Field(default=None, ge=1)
    """Stream each block's text, thinking and tool input JSON in pieces of this many
    characters; default: about three pieces per block (`demo._wire.DELTA_PIECES`)."""


class Alternative(_Strict):
    """One way a branch goes: taken when the request carries ``when_request_contains``."""

    when_request_contains: str = Field(min_length=1)
    """Text searched in what the request carries (`demo._wire.request_text`): the system
    prompt and the text of the messages that are not the model's, reminders included."""
    turns: list[Step] = Field(min_length=1)
    """The rest of the script when this alternative is taken; indices go on from the branch."""

    @model_validator(mode="after")
    def _not_an_arm_name(self) -> Self:
        if self.when_request_contains.strip().lower() in ARMS:
            raise ValueError(
                f"when_request_contains {self.when_request_contains!r} is an arm's name: a "
                "branch decides on text the arm's layers put in the request (a line of "
                "CLAUDE.md, a skill), never on the arm's name, which no request carries")
        return self


class Branch(_Strict):
    """The rest of the script, chosen per request: the first alternative whose text the
    request carries, else ``otherwise``. It is the last step of the list that holds it."""

    branch: list[Alternative] = Field(min_length=1)
    otherwise: list[Step] = Field(min_length=1)
    """The rest of the script when no alternative's text is in the request."""


_BRANCH_TAG: Final = "branch step"
"""The tag of a branch step (not ``branch``, its key: a tag is hidden from an error's place)."""


def _step_kind(value: Any) -> str:
    if isinstance(value, dict):
        return _BRANCH_TAG if "branch" in value or "otherwise" in value else str(
            value.get("fault", "turn"))
    if isinstance(value, Branch):
        return _BRANCH_TAG
    return "turn" if isinstance(value, Turn) else str(getattr(value, "fault", "turn"))


Step: TypeAlias = Annotated[
    Annotated[Turn, Tag("turn")]
    | Annotated[HttpFault, Tag("http")]
    | Annotated[CutFault, Tag("cut")]
    | Annotated[SseErrorFault, Tag("sse_error")]
    | Annotated[Branch, Tag(_BRANCH_TAG)],
    Discriminator(_step_kind),
]
Alternative.model_rebuild()
Branch.model_rebuild()

Route: TypeAlias = tuple[int, ...]
"""The alternatives a request took, one per branch met in order; ``-1`` is ``otherwise``."""
OTHERWISE: Final = -1
"""The route entry of a branch that went ``otherwise``."""
Playbook: TypeAlias = list[tuple[tuple[Fault, ...], Turn]]
"""Each real turn with the fault steps that precede it, by turn index."""


def _steps_of(steps: list[Step], route: Route) -> Iterator[Turn | Fault]:
    """The flat steps of ``steps`` along ``route`` (one entry per branch met)."""
    for step in steps:
        if not isinstance(step, Branch):
            yield step
            continue
        if not route:
            raise ValueError("the script branches here: a route must say which way")
        taken, rest = route[0], route[1:]
        yield from _steps_of(step.otherwise if taken == OTHERWISE
                             else step.branch[taken].turns, rest)
        return


def _routes(steps: list[Step]) -> Iterator[Route]:
    """Every route through ``steps``: each alternative of each branch, and ``otherwise``."""
    last = steps[-1]
    if not isinstance(last, Branch):
        yield ()
        return
    for taken, turns in [*enumerate(a.turns for a in last.branch), (OTHERWISE, last.otherwise)]:
        for rest in _routes(turns):
            yield (taken, *rest)


def _route_for(steps: list[Step], text: str) -> Route:
    last = steps[-1]
    if not isinstance(last, Branch):
        return ()
    for taken, alternative in enumerate(last.branch):
        if alternative.when_request_contains in text:
            return (taken, *_route_for(alternative.turns, text))
    return (OTHERWISE, *_route_for(last.otherwise, text))


def _branch_last(steps: list[Step], where: str) -> None:
    """Refuse a branch that is not the last step of its list (it holds the rest)."""
    for index, step in enumerate(steps):
        if isinstance(step, Branch):
            if index != len(steps) - 1:
                raise ValueError(
                    f"{where}.{index}: a branch must be the last step of its turns (it holds "
                    "the rest of the script: put the steps after it in each alternative)")
            for n, alternative in enumerate(step.branch):
                _branch_last(alternative.turns, f"{where}.{index}.branch.{n}.turns")
            _branch_last(step.otherwise, f"{where}.{index}.otherwise")


class Script(_Strict):
    """The scripted conversation of one probe (or one subagent prompt)."""

    match: str = Field(min_length=1)
    """A phrase of the task text (or Agent prompt) that selects this script."""
    model: str | None = None
    """Default served model (``message.model``) of this script's turns."""
    turns: list[Step] = Field(min_length=1)
    name: str = ""
    """Key of `ScriptedProvider.requests`; `load_scripts` sets the file's stem."""
    after_last: Literal["repeat_last"] | None = None
    """What a request past the last turn of its route gets: None, ``no script for this
    request``; ``repeat_last``, the route's last turn again (`repeated`), so a session
    that never ends its loop meets the CLI's ``--max-turns``."""

    def route(self, text: str) -> Route:
        """The route a request takes: at each branch, the first alternative whose
        ``when_request_contains`` occurs in ``text`` (what the request carries,
        `demo._wire.request_text`), else ``otherwise``. ``()`` for a script without one.

        Decided from this one request: a later request of the same session takes another
        route when its text differs, and then plays that route's turn at its own index.
        """
        return _route_for(self.turns, text)

    @property
    def branches(self) -> bool:
        """Whether the script has a branch (else every request takes the route ``()``)."""
        return isinstance(self.turns[-1], Branch)

    def routes(self) -> list[Route]:
        """Every route through the script, alternatives in order, ``otherwise`` last."""
        return list(_routes(self.turns))

    def describe(self, route: Route) -> str:
        """A route in words, for a miss: ``""`` without branches, else e.g.
        ``" (when the request contains 'X')"`` or ``" (otherwise)"`` per branch met."""
        words: list[str] = []
        steps = self.turns
        for taken in route:
            last = steps[-1]
            assert isinstance(last, Branch)
            if taken == OTHERWISE:
                words.append("otherwise")
                steps = last.otherwise
            else:
                alternative = last.branch[taken]
                words.append(f"when the request contains {alternative.when_request_contains!r}")
                steps = alternative.turns
        return f" ({', then '.join(words)})" if words else ""

    def playbook(self, route: Route = ()) -> Playbook:
        """Each real turn of ``route`` with the fault steps that precede it, by turn index.

        Raises:
            ValueError: fault steps follow the route's last turn.
        """
        played: Playbook = []
        pending: list[Fault] = []
        for step in _steps_of(self.turns, route):
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
        _branch_last(self.turns, "turns")
        for route in self.routes():
            self.playbook(route)
        return self


def repeated(turn: Turn, index: int) -> Turn:
    """``turn`` played again at turn ``index`` (a script's ``after_last: repeat_last``):
    each tool_use id gets ``_<index>`` appended, so no two calls of a session share one."""
    blocks = [b.model_copy(update={"id": f"{b.id}_{index}"}) if isinstance(b, ToolUseBlock)
              else b for b in turn.blocks]
    return turn.model_copy(update={"blocks": blocks})


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


def matching(scripts: Sequence[Script], text: str) -> Iterator[Script]:
    """The scripts whose ``match`` is a phrase of ``text``, in the order a request is matched
    against them (`load_scripts`'s, by file name): the first is the one that plays."""
    return (script for script in scripts if script.match in text)


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


_STEP_TAGS: Final = frozenset({"turn", *FAULT_TAGS, _BRANCH_TAG})
"""The tags of a step's kinds in an error's place: they name no key of the file."""


def _special(error: Any) -> str | None:
    where = ".".join(str(p) for p in error["loc"]) or "the script"
    if error["type"] == "missing":
        return (f"{where} is missing (a script needs match and turns; a turn, blocks or a "
                f"fault; a branch, branch and otherwise; an alternative, "
                f"when_request_contains and turns)")
    if error["type"] == "extra_forbidden":
        return (f"{where} is not a key of a script, a turn, a block, a branch or an "
                f"alternative (docs/provider.md)")
    if error["type"] == "union_tag_invalid":
        ctx = error.get("ctx") or {}
        return (f"{where}: type {ctx.get('tag')!r} is not one of "
                f"{ctx.get('expected_tags', 'the known types')}")
    return None
