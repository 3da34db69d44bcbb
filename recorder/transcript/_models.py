"""The four closed key sets (RC-10..RC-15), the ``## Sessions`` row, and the transcript.

`Identity`, `Event`, `Call` and `Artifact` are the four closed key sets of
the seed spec "The recorder contract"; `SessionRow` is one row of the
``## Sessions`` table; `Transcript` holds the four sections and checks what
crosses them (RC-15, RC-16). Pure pydantic: no YAML and no I/O here.

The three states (RC-12) live in ``model_fields_set``: an optional key that
was never given is *absent* (nothing watched); ``[]`` is watched-and-empty;
``answer=None`` given explicitly is ``answer: null``. Dump with
``exclude_unset=True``. ``None`` is not a state of a list key or of a
``result``: passing it explicitly is refused, so "absent" has one spelling.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from typing import Annotated, Any, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .._digest import is_digest
from .._vocab import Arm, SessionState, Tier

_RFC3339_UTC: Final = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z\Z")


def _digest(value: str) -> str:
    if not is_digest(value):
        raise ValueError(f"not a digest (sha256: + 64 lowercase hex digits): {value!r}")
    return value


def _nonempty(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    return value


def _name(value: str) -> str:
    # Names go into a Markdown table cell: no pipe, no control characters,
    # no padding, so a row reads back as exactly the name written.
    if not value or value != value.strip() or "|" in value or not value.isprintable():
        raise ValueError(f"not a name (non-empty, printable, unpadded, no '|'): {value!r}")
    return value


def _rfc3339_utc(value: str) -> str:
    if not _RFC3339_UTC.match(value):
        raise ValueError(f"not RFC 3339 UTC like 2026-11-30T12:00:00Z: {value!r}")
    try:
        datetime.fromisoformat(value[:19])  # calendar check: month 13, Feb 30 ...
    except ValueError as exc:
        raise ValueError(f"not a real UTC time: {value!r}") from exc
    return value


Digest = Annotated[StrictStr, AfterValidator(_digest)]
Text = Annotated[StrictStr, AfterValidator(_nonempty)]
Name = Annotated[StrictStr, AfterValidator(_name)]


def _null_refused(key: str) -> PydanticCustomError:
    return PydanticCustomError(
        "RC-12",
        "{key}: null is not a state; omit the key (nothing observed) or give a value",
        {"key": key},
    )


class _Frozen(BaseModel):
    """Frozen, closed: an unknown key refuses (RC-16); equality includes presence (RC-12)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    def __eq__(self, other: object) -> bool:
        # pydantic compares values only, so Event(answer=None) would equal an
        # Event with no answer key; the contract says those are two facts.
        if not isinstance(other, BaseModel):
            return NotImplemented
        return super().__eq__(other) and self.model_fields_set == other.model_fields_set


class Call(_Frozen):
    """One tool call (RC-10); closed key set of three."""

    tool: Text
    """The tool's name exactly as the stream gave it."""
    argument: StrictStr
    """The call's argument by the RC-10 table (path, command, pattern, ...)."""
    result: Digest | None = None
    """``sha256:<64 hex>`` of what the call returned; unset = the tool_result never arrived."""

    @field_validator("result")
    @classmethod
    def _result_not_null(cls, value: str | None) -> str:
        if value is None:
            raise _null_refused("result")
        return value


class Artifact(_Frozen):
    """One produced artifact (RC-11); closed key set of four."""

    path: Text
    """Workspace-relative inside the workspace, else absolute (then only ``path``)."""
    result: Digest | None = None
    """Digest of the file after the session; unset when it does not exist or is outside."""
    cites: list[Text] | None = None
    """Sorted, unique corpus ids found on word boundaries; unset when the file was not read."""
    findings: list[Text] | None = None
    """Rules that reported over the artifact; unset = nothing checked, ``[]`` = clean."""

    @field_validator("result", "cites", "findings")
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            raise _null_refused(info.field_name or "")
        if info.field_name == "cites" and value != sorted(set(value)):
            raise PydanticCustomError("RC-11", "cites must be sorted and unique: {v}", {"v": value})
        return value


class Event(_Frozen):
    """One recorded session (RC-15); closed key set of five, three of them three-state."""

    probe: Name
    """The probe's corpus id."""
    session: Name
    """The session's name, distinct within the probe (e.g. ``r1``)."""
    calls: list[Call] | None = None
    """Ordered tool calls; unset = nothing watched, ``[]`` = watched, none seen."""
    produced: list[Artifact] | None = None
    """Produced artifacts; unset = nothing watched, ``[]`` = watched, none seen."""
    answer: Text | None = None
    """The declared answer (RC-13); ``None`` given = ``answer: null``; unset = no key."""

    @field_validator("calls", "produced")
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            raise _null_refused(info.field_name or "")
        return value


class Identity(_Frozen):
    """The run identity (RC-14): exactly twelve keys, all required, in this order."""

    model: Text
    """The ``--model`` the runner passed."""
    served_version: Text
    """Most frequent served ``message.model`` (see `served_version_of`), or the name."""
    tree: Digest
    lock: Digest
    selection: Digest
    read_set: Digest
    seed: StrictInt
    """The caller's seed (an integer; ``true`` and ``"0"`` are refused)."""
    harness: Text
    """This planner's version, ``headwater-campaign <version>`` (never Claude Code's)."""
    tier: Tier
    arm: Arm
    at: Annotated[StrictStr, AfterValidator(_rfc3339_utc)]
    """The first session's start, RFC 3339 UTC (``2026-11-30T12:00:00Z``)."""
    cost_cents: Annotated[StrictInt, Field(ge=0)]
    """Whole US cents, ceiling of 100 x the summed USD cost (`recorder._cost.cost_cents`)."""


class SessionRow(_Frozen):
    """One row of the ``## Sessions`` table: every session of the arm, recorded or not."""

    probe: Name
    session: Name
    state: SessionState
    outside_paths: Annotated[StrictInt, Field(ge=0)]
    """Distinct paths outside the workspace the session named (RC-08)."""


OUTSIDE_LINE: Final = re.compile(r"\AOutside-workspace paths named: (\d+)\Z")
HEADINGS: Final = ("## Run identity", "## Events", "## Sessions")
SESSIONS_HEADER: Final = "| probe | session | state | outside paths |"


def _normal_prose(prose: str) -> str:
    lines = prose.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).rstrip()


class Transcript(_Frozen):
    """One arm's transcript (RC-16): prose, identity, events, sessions table.

    Construction checks what crosses sections: session names distinct within a
    probe (RC-15), one row per session, each event's row ``recorded`` and each
    ``recorded`` row an event, and the prose line ``Outside-workspace paths
    named: N`` present once with N the sum of the table's column. Raises
    pydantic ``ValidationError`` (error types ``RC-15``/``RC-16``) otherwise.
    """

    prose: str
    """Free Markdown before the blocks; leading blank lines and trailing space dropped."""
    identity: Identity
    events: list[Event]
    sessions: list[SessionRow]

    @field_validator("prose")
    @classmethod
    def _prose(cls, value: str) -> str:
        return checked_prose(value)

    @model_validator(mode="after")
    def _cross_checks(self) -> Transcript:
        _check_unique([(e.probe, e.session) for e in self.events], "events")
        _check_unique([(r.probe, r.session) for r in self.sessions], "## Sessions rows")
        rows = {(r.probe, r.session): r.state for r in self.sessions}
        seen = {(e.probe, e.session) for e in self.events}
        for key in seen:
            if rows.get(key) != "recorded":
                detail = "no row" if key not in rows else f"state {rows[key]!r}"
                raise PydanticCustomError(
                    "RC-16",
                    "event {k} has {d} in ## Sessions; it must be 'recorded'",
                    {"k": "/".join(key), "d": detail},
                )
        for key, state in rows.items():
            if state == "recorded" and key not in seen:
                raise PydanticCustomError(
                    "RC-16", "row {k} is recorded but no event carries it", {"k": "/".join(key)}
                )
        check_outside_line(self.prose, sum(r.outside_paths for r in self.sessions))
        return self


def checked_prose(value: str) -> str:
    """The prose as a transcript holds it: leading blank lines and trailing space dropped.

    Raises:
        PydanticCustomError: (``RC-16``) a line of it is one of the three headings.
    """
    value = _normal_prose(value)
    for line in value.split("\n"):
        if line in HEADINGS:
            raise PydanticCustomError("RC-16", "prose holds the heading line {h!r}", {"h": line})
    return value


def check_outside_line(prose: str, expected: int) -> None:
    """The prose holds one line ``Outside-workspace paths named: N``, N = ``expected`` (RC-16).

    Raises:
        PydanticCustomError: (``RC-16``) no such line, several, or another N.
    """
    totals = [int(m.group(1)) for line in prose.split("\n") if (m := OUTSIDE_LINE.match(line))]
    if totals != [expected]:
        raise PydanticCustomError(
            "RC-16",
            "prose must hold one line 'Outside-workspace paths named: {n}' "
            "(the table's sum); found {t}",
            {"n": expected, "t": totals},
        )


def _check_unique(keys: list[tuple[str, str]], where: str) -> None:
    counts = Counter(keys)
    dupes = sorted(f"{p}/{s}" for (p, s), n in counts.items() if n > 1)
    if dupes:
        raise PydanticCustomError(
            "RC-15",
            "session names must be distinct within a probe; repeated in {w}: {d}",
            {"w": where, "d": ", ".join(dupes)},
        )
