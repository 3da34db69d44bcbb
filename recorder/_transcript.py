"""Transcripts: the four closed key sets, the RC-16 layout, its writer and its reader.

A transcript is one Markdown file per arm (DESIGN.md RC-14..RC-16, seed spec
15 "The recorder contract"). This module owns the models of the four closed
key sets (`Identity`, `Event`, `Call`, `Artifact`), the `## Sessions` row
(`SessionRow`), the renderer, the contract check (`parse_transcript`) and the
atomic writer. The renderer proves its own output by parsing it back.

The three states (RC-12) live in ``model_fields_set``: an optional key that
was never given is *absent* (nothing watched); ``[]`` is watched-and-empty;
``answer=None`` given explicitly is ``answer: null``. Dump with
``exclude_unset=True``. ``None`` is not a state of a list key or of a
``result``: passing it explicitly is refused, so "absent" has one spelling.

Errors:

* TranscriptRefused  - the text (or the values) break the contract; carries ``rule``
* TranscriptUnproven - the renderer's output did not read back as its input (a bug)
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.representer import SafeRepresenter

from ._digest import is_digest
from ._vocab import Arm, SessionState, Tier

if TYPE_CHECKING:
    from ._cost import CostFigure

__all__ = [
    "HEADINGS",
    "SESSIONS_HEADER",
    "Arm",
    "Artifact",
    "Call",
    "Event",
    "Identity",
    "SessionRow",
    "SessionState",
    "Tier",
    "Transcript",
    "TranscriptRefused",
    "TranscriptUnproven",
    "parse_transcript",
    "prose_for",
    "render_transcript",
    "served_version_of",
    "write_transcript",
]


class TranscriptRefused(Exception):
    """The transcript breaks the contract; the whole file is refused (RC-16).

    Raised by `parse_transcript` (and so by the check) for any text that is not
    exactly the RC-16 layout over the four closed key sets. A failure to *read*
    the file is not this: the check reports that as "unverified".

    Attributes:
        rule: The contract rule broken, e.g. ``"RC-16"`` (layout, closed sets),
            ``"RC-14"`` (identity), ``"RC-15"`` (event names), ``"RC-12"`` (a
            ``null`` where only absent or a list is a state).
        detail: What was found and where, naming the key or line.
    """

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"{rule}: {detail}")
        self.rule = rule
        self.detail = detail


class TranscriptUnproven(RuntimeError):
    """`render_transcript` wrote text that does not read back as its input.

    A bug in this module, never bad input: input that breaks the contract is
    refused earlier, when its models are built (pydantic ``ValidationError``).
    """

    def __init__(self, detail: str) -> None:
        super().__init__(f"transcript did not read back as written (a bug): {detail}")
        self.detail = detail


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
_SESSIONS_RULE: Final = "|---|---|---|---|"


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
        value = _normal_prose(value)
        for line in value.split("\n"):
            if line in HEADINGS:
                raise PydanticCustomError(
                    "RC-16", "prose holds the heading line {h!r}", {"h": line}
                )
        return value

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
        totals = [
            int(m.group(1)) for line in self.prose.split("\n") if (m := OUTSIDE_LINE.match(line))
        ]
        expected = sum(r.outside_paths for r in self.sessions)
        if totals != [expected]:
            raise PydanticCustomError(
                "RC-16",
                "prose must hold one line 'Outside-workspace paths named: {n}' "
                "(the table's sum); found {t}",
                {"n": expected, "t": totals},
            )
        return self


def _check_unique(keys: list[tuple[str, str]], where: str) -> None:
    counts = Counter(keys)
    dupes = sorted(f"{p}/{s}" for (p, s), n in counts.items() if n > 1)
    if dupes:
        raise PydanticCustomError(
            "RC-15",
            "session names must be distinct within a probe; repeated in {w}: {d}",
            {"w": where, "d": ", ".join(dupes)},
        )


# ---------------------------------------------------------------------------
# YAML: ruamel only, YAML 1.2 pure-Python loader/dumper (the C loader is 1.1).


class _Quoted(str):
    """A string value: always written double-quoted, so ``yes``/``0052``/``null`` stay strings."""


class _Representer(SafeRepresenter):
    """Safe representer of our own: insertion order, quoted values (the global one is untouched)."""


_Representer.add_representer(
    _Quoted, lambda r, s: r.represent_scalar("tag:yaml.org,2002:str", str(s), style='"')
)
_Representer.add_representer(
    dict, lambda r, d: r.represent_mapping("tag:yaml.org,2002:map", list(d.items()))
)


def _dumper() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 2**31 - 1  # never fold: one value, one line; no line can look like a fence
    return yaml


def _quote_values(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _quote_values(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_quote_values(v) for v in data]
    if isinstance(data, str):
        return _Quoted(data)
    return data


def _yaml_text(data: Any) -> str:
    buf = io.StringIO()
    _dumper().dump(_quote_values(data), buf)
    return buf.getvalue()


def _yaml_load(text: str, where: str) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(text)
    except (YAMLError, ValueError, TypeError, RecursionError) as exc:
        raise TranscriptRefused(
            "RC-16", f"the yaml block under {where} does not load: {exc}"
        ) from exc


# ---------------------------------------------------------------------------
# Rendering


def _table(rows: Sequence[SessionRow]) -> str:
    lines = [SESSIONS_HEADER, _SESSIONS_RULE]
    lines += [f"| {r.probe} | {r.session} | {r.state} | {r.outside_paths} |" for r in rows]
    return "\n".join(lines) + "\n"


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="python", exclude_unset=True)


def render_transcript(transcript: Transcript) -> str:
    """Return the RC-16 Markdown text of ``transcript``, proven by reading it back.

    Layout, exactly: the prose; ``## Run identity`` and one ```` ```yaml ````
    block (the twelve keys in table order); ``## Events`` and one ```` ```yaml
    ```` block (a top-level sequence, ``[]`` when empty); ``## Sessions`` and
    the table ``| probe | session | state | outside paths |``. Every string
    value is double-quoted; unset optional keys are absent (RC-12).

    Raises:
        TranscriptUnproven: the text did not parse back to an equal transcript
            (a bug in this module; the input was already validated).
    """
    text = (
        f"{transcript.prose}\n\n"
        f"{HEADINGS[0]}\n\n```yaml\n{_yaml_text(transcript.identity.model_dump())}```\n\n"
        f"{HEADINGS[1]}\n\n```yaml\n{_yaml_text([_dump(e) for e in transcript.events])}```\n\n"
        f"{HEADINGS[2]}\n\n{_table(transcript.sessions)}"
    )
    if not transcript.prose:
        text = text.lstrip("\n")
    try:
        back = parse_transcript(text)
    except TranscriptRefused as exc:
        raise TranscriptUnproven(str(exc)) from exc
    if back != transcript or _dump(back) != _dump(transcript):
        raise TranscriptUnproven("parsed transcript differs from the one rendered")
    return text


def write_transcript(path: Path, transcript: Transcript) -> None:
    """Render ``transcript`` and replace ``path`` with it atomically.

    Writes a temporary file in ``path``'s directory, fsyncs it, ``os.replace``s
    it over ``path`` and fsyncs the directory: a reader sees the old file or
    the new one, never a part. The temporary file is removed on any failure.

    Raises:
        TranscriptUnproven: see `render_transcript`; nothing is written.
        OSError: the directory refused the write; ``path`` is unchanged.
    """
    data = render_transcript(transcript).encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fp:
            fp.write(data)
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# ---------------------------------------------------------------------------
# Parsing: the contract check


def _sections(text: str) -> tuple[str, list[list[str]]]:
    lines = text.split("\n")
    found: dict[str, list[int]] = {h: [] for h in HEADINGS}
    for i, line in enumerate(lines):
        if line in found:
            found[line].append(i)
    for heading, where in found.items():
        if len(where) != 1:
            state = (
                "missing"
                if not where
                else f"repeated at lines {', '.join(str(i + 1) for i in where)}"
            )
            raise TranscriptRefused(
                "RC-16", f"heading {heading!r} is {state}; each appears exactly once"
            )
    starts = [found[h][0] for h in HEADINGS]
    if starts != sorted(starts):
        raise TranscriptRefused("RC-16", f"headings out of order; expected {' / '.join(HEADINGS)}")
    bounds = [*starts, len(lines)]
    sections = [lines[bounds[k] + 1 : bounds[k + 1]] for k in range(3)]
    return "\n".join(lines[: starts[0]]), sections


def _trim(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _yaml_block(lines: list[str], heading: str) -> str:
    body = _trim(lines)
    if len(body) < 2 or body[0] != "```yaml" or body[-1] != "```":
        raise TranscriptRefused(
            "RC-16", f"{heading} must hold exactly one ```yaml block and nothing else"
        )
    inner = body[1:-1]
    for line in inner:
        if line.startswith("```"):
            raise TranscriptRefused(
                "RC-16", f"{heading} must hold exactly one ```yaml block; found another fence"
            )
    return "\n".join(inner) + "\n"


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__


_NESTED: Final[dict[type[_Frozen], dict[str, type[_Frozen]]]] = {
    Event: {"calls": Call, "produced": Artifact},
}


def _check_closed(data: object, model: type[_Frozen], where: str) -> dict[str, Any]:
    """Refuse a non-mapping, or any key outside ``model``'s closed set, naming key and place."""
    if not isinstance(data, dict):
        raise TranscriptRefused("RC-16", f"{where} is {_kind(data)}, not a mapping")
    allowed = list(model.model_fields)
    for key in data:
        if key not in allowed:
            raise TranscriptRefused(
                "RC-16",
                f"key {key!r} at {where} is outside the closed set of {model.__name__} "
                f"({', '.join(allowed)})",
            )
    for key, sub in _NESTED.get(model, {}).items():
        items = data.get(key)
        if isinstance(items, list):
            for i, item in enumerate(items):
                _check_closed(item, sub, f"{where}.{key}[{i}]")
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


def _refusal(exc: ValidationError, where: str, default_rule: str) -> TranscriptRefused:
    errors = exc.errors(include_url=False)
    parts = []
    for e in errors:
        loc = ".".join(str(p) for p in e["loc"])
        got = (
            f" (got {e['input']!r})"
            if isinstance(e.get("input"), (str, int, float, type(None)))
            else ""
        )
        parts.append(f"{loc + ': ' if loc else ''}{e['msg']}{got}")
    return TranscriptRefused(_rule_of(errors[0], default_rule), f"{where}: {'; '.join(parts)}")


_ROW: Final = re.compile(r"\A\|(.*)\|\Z")
_RULE_ROW: Final = re.compile(r"\A\|(?: *:?-{3,}:? *\|){4}\Z")


def _session_rows(lines: list[str]) -> list[SessionRow]:
    body = _trim(lines)
    if not body or body[0] != SESSIONS_HEADER:
        got = body[0] if body else "nothing"
        raise TranscriptRefused(
            "RC-16", f"## Sessions must open with {SESSIONS_HEADER!r}; found {got!r}"
        )
    if len(body) < 2 or not _RULE_ROW.match(body[1]):
        raise TranscriptRefused("RC-16", "## Sessions table lacks its |---| separator row")
    rows = []
    for line in body[2:]:
        m = _ROW.match(line)
        cells = [c.strip() for c in m.group(1).split("|")] if m else []
        if len(cells) != 4 or not cells[3].isdigit():
            raise TranscriptRefused("RC-16", f"malformed ## Sessions row: {line!r}")
        values = dict(zip(("probe", "session", "state"), cells, strict=False))
        try:
            rows.append(SessionRow.model_validate({**values, "outside_paths": int(cells[3])}))
        except ValidationError as exc:
            raise _refusal(exc, f"## Sessions row {line!r}", "RC-16") from exc
    return rows


def parse_transcript(text: str) -> Transcript:
    """Check ``text`` against the contract and return the transcript it holds.

    This is the contract check (RC-14..RC-16, RC-10..RC-12): the RC-16 layout
    exactly (each heading once, in order; one ```` ```yaml ```` block under each
    of the first two and nothing else there; the sessions table), keys only
    from the four closed sets, all twelve identity keys, whole-number
    ``cost_cents``, digests where digests go, session names distinct within a
    probe, every event's session listed as ``recorded``. Prose is free; only
    the ``Outside-workspace paths named: N`` line is read (it must equal the
    table's sum).

    Raises:
        TranscriptRefused: the first breach found, with its rule and place.
    """
    prose, (identity_lines, event_lines, session_lines) = _sections(text)
    raw = _check_closed(
        _yaml_load(_yaml_block(identity_lines, HEADINGS[0]), HEADINGS[0]),
        Identity,
        "## Run identity",
    )
    missing = [k for k in Identity.model_fields if k not in raw]
    if missing:
        raise TranscriptRefused(
            "RC-14", f"## Run identity lacks {', '.join(missing)}; all twelve keys are required"
        )
    try:
        identity = Identity.model_validate(raw)
    except ValidationError as exc:
        raise _refusal(exc, "## Run identity", "RC-14") from exc
    raw_events = _yaml_load(_yaml_block(event_lines, HEADINGS[1]), HEADINGS[1])
    if not isinstance(raw_events, list):
        raise TranscriptRefused(
            "RC-16", f"## Events holds {_kind(raw_events)}, not a sequence of events"
        )
    events = []
    for i, item in enumerate(raw_events):
        where = f"events[{i}]"
        try:
            events.append(Event.model_validate(_check_closed(item, Event, where)))
        except ValidationError as exc:
            raise _refusal(exc, where, "RC-15") from exc
    sessions = _session_rows(session_lines)
    try:
        return Transcript(prose=prose, identity=identity, events=events, sessions=sessions)
    except ValidationError as exc:
        raise _refusal(exc, "transcript", "RC-16") from exc


# ---------------------------------------------------------------------------
# Prose and the served version


def served_version_of(values: Iterable[str], *, fallback: str | None = None) -> str:
    """The identity's ``served_version`` (RC-14): the most frequent served model.

    Args:
        values: One ``message.model`` per recorded session of the arm.
        fallback: Returned when ``values`` is empty (the model *name*, written
            as a name where no version was exposed).

    Returns:
        The most frequent value; on a tie, the lexicographically first (by
        code point) among the most frequent, so the choice is deterministic.

    Raises:
        ValueError: ``values`` is empty and no ``fallback`` was given.
    """
    counts = Counter(values)
    if not counts:
        if fallback is None:
            raise ValueError("no served version observed and no fallback given")
        return fallback
    top = max(counts.values())
    return min(v for v, n in counts.items() if n == top)


_NETWORK_PROSE: Final = {
    "host": "the session shared the host network, so a Bash call could reach the public internet "
    "(the channel was open)",
    "confined": "each session ran in its own network namespace (bwrap --unshare-net, loopback "
    "only, no resolver) whose only way out was an egress proxy outside the sandbox, reached over "
    "a Unix socket, that allowed the provider's host and port and nothing else",
    "mixed": "the sessions ran under different network modes, listed below",
}
_CONTRACT: Final = (
    "Contract: every session ran headless Claude Code (`claude -p`, stream-json read from its "
    "stdout pipe) in permission mode dontAsk with one allowed-tools list ({tools}), WebSearch "
    "and WebFetch denied, confined under bwrap in a sealed workspace. Network mode `{network}`: "
    "{net}. Rates from bypassPermissions batches do not compare with rates from this one."
)
_COST_SOURCE: Final = (
    "Cost source: the harness's own computed cost, total_cost_usd of the last result line of "
    "each attempt; not the provider's invoice. cost_cents = {cents}."
)
_LOWER_BOUND: Final = (
    " This is a lower bound: the cost of {n} is unknown and adds nothing: {names}."
)
_SERVED_DIFFER: Final = (
    "Served versions differ across this arm's sessions: {listed}; served_version names the most "
    "frequent (a tie goes to the lexicographically first)."
)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def prose_for(
    *,
    arm: Arm,
    tier: Tier,
    allowed_tools: Sequence[str],
    network: str,
    claude_code_versions: Iterable[str],
    served_versions: Mapping[str, int],
    cost: CostFigure,
    unknown_cost_sessions: Sequence[str],
    outside_paths_total: int,
    anomalies_total: int = 0,
    arm_identity: str | None = None,
    extra: Sequence[str] = (),
) -> str:
    """Build the prose RC-16 requires of a transcript, from facts only.

    Args:
        arm: The arm; tier: the tier (RC-14 vocabularies).
        allowed_tools: The one ``--allowedTools`` list every session got (RC-04).
        network: The network mode: ``"confined"``, ``"host"`` (the admitted
            exception, RC-05: the prose says the channel was open) or ``"mixed"``.
        claude_code_versions: ``claude_code_version`` of each init line (repeats fine).
        served_versions: served ``message.model`` -> number of recorded sessions.
        cost: The arm's figure from `recorder._cost.cost_cents`.
        unknown_cost_sessions: Names of the attempts whose cost is unknown
            (e.g. ``"probe-a/r2 attempt 1"``); required when ``cost.lower_bound``.
        outside_paths_total: Sum of the table's outside-paths column (RC-08).
        anomalies_total: Non-JSON stdout lines counted across sessions (RC-07).
        arm_identity: One line naming what the arm is (e.g. its config digest).
        extra: Further lines appended before the outside-paths line.

    Returns:
        Markdown paragraphs ending with ``Outside-workspace paths named: <total>``.

    Raises:
        ValueError: unknown-cost names and ``cost.unknown`` disagree on zero.
    """
    if cost.lower_bound != bool(unknown_cost_sessions):
        raise ValueError("a lower-bound cost must name its unknown-cost attempts, and only then")
    net = _NETWORK_PROSE.get(network, "the session reached the network only as that mode allows")
    tools = ", ".join(allowed_tools) or "none"
    paras = [
        f"Transcript of arm `{arm}`, tier `{tier}`, recorded by headwater-campaign.",
        _CONTRACT.format(tools=tools, network=network, net=net),
    ]
    versions = sorted(set(claude_code_versions))
    label = "Claude Code versions" if len(versions) > 1 else "Claude Code version"
    paras.append(f"{label}: {', '.join(versions) or 'not observed'}.")
    served = sorted(served_versions.items())
    if len(served) > 1:
        listed = ", ".join(f"{v} ({_plural(n, 'session')})" for v, n in served)
        paras.append(_SERVED_DIFFER.format(listed=listed))
    elif served:
        paras.append(
            f"Served version: {served[0][0]} ({_plural(served[0][1], 'recorded session')})."
        )
    cost_line = _COST_SOURCE.format(cents=cost.cents)
    if cost.lower_bound:
        names = ", ".join(unknown_cost_sessions)
        cost_line += _LOWER_BOUND.format(n=_plural(cost.unknown, "attempt"), names=names)
    paras.append(cost_line)
    if arm_identity:
        paras.append(f"Arm identity: {arm_identity}")
    if anomalies_total:
        paras.append(
            f"Non-JSON stdout lines (anomalies, kept aside, never merged): {anomalies_total}."
        )
    paras += list(extra)
    paras.append(f"Outside-workspace paths named: {outside_paths_total}")
    return "\n\n".join(paras)
