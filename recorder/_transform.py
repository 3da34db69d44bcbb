"""The transform: one session's stdout lines -> an `Observation` (RC-07, RC-08, RC-10..RC-13).

`StreamObserver.feed` takes each complete stdout line in order and keeps only
compact facts: per tool call its name, argument, id, the digest of its
tool_result text (taken when the result arrives; the text is dropped), and its
outside paths; the current final-message candidate; the last result line's
few fields. Raw lines are never kept, so memory grows with the number of calls,
not with the bytes of the stream (RC-01: the stdout pipe is the only input).

`StreamObserver.finish` decides the session state from the table in DESIGN.md.
Order of precedence (the first that applies):

1. ``line-too-long``, ``timed-out`` (the driver's end), ``truncated`` (a tail
   without newline);
2. ``refused-init`` (RC-07: any init line refused, a JSON line other than a
   hook event before the first init, or no init line at all);
3. ``env-fault`` (a declared MCP server reported ``failed``);
4. no result line: ``killed`` when the exit status is a signal (< 0), else
   ``no-result``;
5. the last result line: ``is_error`` true -> ``harness-error`` (whatever its
   ``subtype`` and the exit code; BC-10a/b), else ``recorded``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from recorder._digest import digest_text
from recorder._harness import (
    assistant_model,
    content_blocks,
    decimal_or_none,
    is_allowed_before_init,
    is_main_thread,
    is_synthetic,
    line_kind,
    message_of,
    parse_line,
    tool_result_text,
)
from recorder._initcheck import InitPolicy, check_init, failed_declared_mcp_servers
from recorder._paths import outside_paths, relative_if_inside
from recorder._states import RETRYABLE, SessionState, harness_error_retryable

if TYPE_CHECKING:
    from pathlib import Path

End: TypeAlias = Literal["exited", "timed-out", "watchdog", "line-too-long"]
"""How the driver saw the stream end."""

ANOMALIES_KEPT: Final = 8
"""Non-JSON lines kept aside verbatim (truncated); later ones are only counted."""
ANOMALY_EXCERPT_BYTES: Final = 240
"""Bytes of each kept anomaly: enough to recognise a banner or a debug line."""
REASON_TEXT_CHARS: Final = 200
"""Characters of a result text quoted in a harness-error reason."""
PATH_ARGUMENT_KEYS: Final = {"Read": "file_path", "Write": "file_path", "Edit": "file_path",
                             "NotebookEdit": "notebook_path"}
"""RC-10: tools whose argument is a path, written workspace-relative when inside."""
PLAIN_ARGUMENT_KEYS: Final = {"Bash": "command", "Glob": "pattern", "Agent": "description",
                              "Task": "description", "Skill": "skill"}
"""RC-10: tools whose argument is one input value, verbatim."""
WRITE_TOOLS: Final = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
                      "NotebookEdit": "notebook_path"}
"""RC-11: tools whose path is produced, whatever their result."""


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A stdout line that is not a JSON object (RC-07): kept aside, never merged."""

    line_number: int
    """1-based line number in the stream."""
    size_bytes: int
    """Length of the whole line."""
    excerpt: str
    """Its first `ANOMALY_EXCERPT_BYTES` bytes, decoded with replacement."""


@dataclass(frozen=True, slots=True)
class ObservedCall:
    """One tool_use as seen on the stream, paired with its tool_result by id (RC-10)."""

    tool: str
    """The tool's name exactly as the stream gives it."""
    argument: str
    """RC-10's argument (see `call_argument`)."""
    tool_use_id: str | None
    """The tool_use ``id`` (None when the line had none: it can never be paired)."""
    result_digest: str | None
    """``sha256:`` of the tool_result text; None when no result arrived."""
    result_is_error: bool
    """The tool_result had ``is_error: true`` (a failed Read keeps its text digest)."""
    read_path: str | None
    """For a Read, its ``file_path`` as given (for the manifest lookup); else None."""
    outside_paths: frozenset[str]
    """RC-08 paths this call named outside the workspace."""
    in_subagent: bool
    """``parent_tool_use_id`` was set: the call ran inside a subagent."""

    @property
    def is_read(self) -> bool:
        """True for a Read call with a path."""
        return self.read_path is not None


@dataclass(frozen=True, slots=True)
class Observation:
    """What one attempt of a session showed on its stdout, and the state it ends in."""

    state: SessionState
    reason: str
    """Human reason naming the rule, e.g. ``"RC-07: permissionMode bypassPermissions, ..."``."""
    calls: tuple[ObservedCall, ...]
    """Tool calls in tool_use order, subagent calls included."""
    produced_paths: tuple[str, ...]
    """Paths named by Edit/Write/MultiEdit/NotebookEdit, as given, first-seen order, unique."""
    final_text: str | None
    """RC-13's final message (text blocks joined with ""), None when it had no text block."""
    served_model: str | None
    """``message.model`` of the last main-thread non-synthetic assistant line."""
    cost_usd: Decimal | None
    """``total_cost_usd`` of the last result line, exact; None = unknown (no result line)."""
    claude_code_version: str | None
    """``claude_code_version`` of the first init line."""
    anomalies: tuple[Anomaly, ...]
    """The first `ANOMALIES_KEPT` non-JSON lines."""
    anomaly_count: int
    """Every non-JSON line, kept or not."""
    outside_paths: frozenset[str]
    """RC-08: distinct outside paths over all calls."""
    retryable: bool
    api_error_status: int | None
    """The last result line's ``api_error_status`` (None when null, absent or no result)."""
    refusals: tuple[str, ...] = ()
    """Every RC-07 reason seen (the state may still be decided earlier, e.g. timed-out)."""
    failed_mcp_servers: tuple[str, ...] = ()
    """Declared MCP servers an init line reported ``failed``."""
    result_subtype: str | None = None
    num_turns: int | None = None
    orphan_results: int = 0
    """tool_results that matched no earlier tool_use by id, or one already answered."""
    lines: int = 0
    """Complete lines fed."""


@dataclass(slots=True)
class _Call:
    tool: str
    argument: str
    tool_use_id: str | None
    read_path: str | None
    outside: frozenset[str]
    in_subagent: bool
    result_digest: str | None = None
    result_is_error: bool = False


@dataclass(slots=True)
class _Result:
    is_error: bool
    subtype: str | None
    api_error_status: int | None
    cost_usd: Decimal | None
    text: str | None
    num_turns: int | None
    final_text: str | None


@dataclass(slots=True)
class _Message:
    """The latest main-thread, non-synthetic assistant message (grouped by ``message.id``)."""

    message_id: object
    texts: list[str] = field(default_factory=list)

    def final_text(self) -> str | None:
        return "".join(self.texts) if self.texts else None


def call_argument(tool: str, tool_input: object, *, workspace: Path) -> str:
    """RC-10's ``argument`` for one tool_use.

    Read/Write/Edit ``file_path`` and NotebookEdit ``notebook_path`` (relative
    to the workspace when lexically inside it), Bash ``command`` verbatim, Grep
    ``pattern`` plus `` in <path>`` when a path is given, Glob ``pattern``,
    Agent/Task ``description``, Skill ``skill``. Anything else, and any of
    these whose key is missing or not a string: the canonical JSON of the
    input (sorted keys, no spaces, non-ASCII kept).
    """
    if isinstance(tool_input, dict):
        if (key := PATH_ARGUMENT_KEYS.get(tool)) and isinstance(value := tool_input.get(key), str):
            return relative_if_inside(value, workspace)
        if (key := PLAIN_ARGUMENT_KEYS.get(tool)) and isinstance(value := tool_input.get(key), str):
            return value
        if tool == "Grep" and isinstance(pattern := tool_input.get("pattern"), str):
            path = tool_input.get("path")
            return f"{pattern} in {path}" if isinstance(path, str) and path else pattern
    return canonical_json(tool_input)


def canonical_json(value: object) -> str:
    """JSON with sorted keys, ``(",", ":")`` separators, non-ASCII kept; Decimals as numbers."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=_json_default)


def _json_default(value: object) -> object:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


class StreamObserver:
    """Watches one attempt's stdout, line by line, and reports an `Observation`.

    Synchronous and pure apart from RC-08's symlink lookups inside the
    workspace; the driver calls `feed` for each complete line, then `finish`.
    """

    def __init__(self, *, policy: InitPolicy, workspace: Path) -> None:
        self._policy = policy
        self._workspace = workspace
        self._lines = 0
        self._inits = 0
        self._version: str | None = None
        self._refusals: list[str] = []
        self._failed_mcp: list[str] = []
        self._anomalies: list[Anomaly] = []
        self._anomaly_count = 0
        self._calls: list[_Call] = []
        self._by_id: dict[str, _Call] = {}
        self._orphans = 0
        self._produced: dict[str, None] = {}
        self._message: _Message | None = None
        self._served_model: str | None = None
        self._result: _Result | None = None

    def __repr__(self) -> str:
        return (f"<StreamObserver lines={self._lines} inits={self._inits} "
                f"calls={len(self._calls)} result={self._result is not None}>")

    def feed(self, line: bytes) -> None:
        """Take the next complete stdout line (without its newline)."""
        self._lines += 1
        obj = parse_line(line)
        if obj is None:
            self._anomaly(line)
            return
        kind = line_kind(obj)
        if kind == "init":
            self._init(obj)
        elif self._inits == 0:
            if not is_allowed_before_init(obj):
                self._refuse(f"RC-07: line {self._lines} before the init line is "
                             f"{_describe(obj)}, not a hook event")
        elif kind == "assistant":
            self._assistant(obj)
        elif kind == "user":
            self._user(obj)
        elif kind == "result":
            self._result_line(obj)

    def finish(self, *, end: End, exit_status: int | None, tail: bytes | None) -> Observation:
        """Decide the state (module docstring) and return everything observed.

        Args:
            end: how the driver saw the stream end.
            exit_status: the harness's exit status; negative = killed by that signal.
            tail: a final fragment with no newline (the stream was cut), else None.
        """
        if self._inits == 0:
            self._refuse("RC-07: no init line")
        state, reason = self._decide(end, exit_status, tail)
        result = self._result
        retryable = (harness_error_retryable(result.api_error_status, result.text)
                     if state == "harness-error" and result is not None else RETRYABLE[state])
        return Observation(
            state=state,
            reason=reason,
            calls=tuple(_freeze(call) for call in self._calls),
            produced_paths=tuple(self._produced),
            final_text=result.final_text if result is not None else None,
            served_model=self._served_model,
            cost_usd=result.cost_usd if result is not None else None,
            claude_code_version=self._version,
            anomalies=tuple(self._anomalies),
            anomaly_count=self._anomaly_count,
            outside_paths=frozenset().union(*(call.outside for call in self._calls)),
            retryable=retryable,
            api_error_status=result.api_error_status if result is not None else None,
            refusals=tuple(self._refusals),
            failed_mcp_servers=tuple(self._failed_mcp),
            result_subtype=result.subtype if result is not None else None,
            num_turns=result.num_turns if result is not None else None,
            orphan_results=self._orphans,
            lines=self._lines,
        )

    def _decide(self, end: End, exit_status: int | None,
                tail: bytes | None) -> tuple[SessionState, str]:
        if end == "line-too-long":
            return "line-too-long", (f"line-too-long: line {self._lines + 1} exceeded "
                                     "the reader's line cap")
        if end == "timed-out":
            return "timed-out", "timed-out: the session's wall-clock limit fired"
        if end == "watchdog":
            return "timed-out", "timed-out: the no-output watchdog fired"
        if tail is not None:
            return "truncated", f"truncated: the last line ({len(tail)} bytes) has no newline"
        if self._refusals:
            return "refused-init", "; ".join(self._refusals)
        if self._failed_mcp:
            names = ", ".join(self._failed_mcp)
            return "env-fault", f"env-fault: declared MCP server(s) {names} reported failed"
        result = self._result
        if result is None:
            if exit_status is not None and exit_status < 0:
                return "killed", (f"killed: the harness ended by signal {-exit_status} "
                                  "with no result line")
            return "no-result", (f"no-result: the stream ended (exit status {exit_status}) "
                                 "with no result line")
        if result.is_error:
            text = (result.text or "")[:REASON_TEXT_CHARS]
            return "harness-error", (f"harness-error: last result is_error true "
                                     f"(subtype {result.subtype}, "
                                     f"api_error_status {result.api_error_status}): {text}")
        return "recorded", "recorded: the last result line has is_error false"

    def _refuse(self, reason: str) -> None:
        if reason not in self._refusals:
            self._refusals.append(reason)

    def _anomaly(self, line: bytes) -> None:
        self._anomaly_count += 1
        if len(self._anomalies) < ANOMALIES_KEPT:
            excerpt = line[:ANOMALY_EXCERPT_BYTES].decode("utf-8", errors="replace")
            self._anomalies.append(Anomaly(self._lines, len(line), excerpt))

    def _init(self, obj: dict[str, Any]) -> None:
        self._inits += 1
        if self._version is None and isinstance(obj.get("claude_code_version"), str):
            self._version = obj["claude_code_version"]
        for reason in check_init(obj, self._policy):
            self._refuse(reason)
        for name in failed_declared_mcp_servers(obj, self._policy):
            if name not in self._failed_mcp:
                self._failed_mcp.append(name)

    def _assistant(self, obj: dict[str, Any]) -> None:
        main = is_main_thread(obj)
        if main and not is_synthetic(obj):
            self._served_model = assistant_model(obj) or self._served_model
            message = message_of(obj)
            message_id = message.get("id") if message is not None else None
            current = self._message
            if current is None or message_id is None or message_id != current.message_id:
                self._message = _Message(message_id)
        for block in content_blocks(obj):
            btype = block.get("type")
            if btype == "tool_use":
                self._tool_use(block, in_subagent=not main)
            elif btype == "text" and main and not is_synthetic(obj) and self._message is not None:
                text = block.get("text")
                if isinstance(text, str):
                    self._message.texts.append(text)

    def _tool_use(self, block: dict[str, Any], *, in_subagent: bool) -> None:
        tool = block.get("name")
        if not isinstance(tool, str) or not tool:
            return  # not a call anything could have run
        tool_use_id = block.get("id") if isinstance(block.get("id"), str) else None
        if tool_use_id is not None and tool_use_id in self._by_id:
            return  # the same tool_use printed again: one call
        tool_input = block.get("input")
        inputs = tool_input if isinstance(tool_input, dict) else {}
        read_path = inputs.get("file_path") if tool == "Read" else None
        call = _Call(
            tool=tool,
            argument=call_argument(tool, tool_input, workspace=self._workspace),
            tool_use_id=tool_use_id,
            read_path=read_path if isinstance(read_path, str) else None,
            outside=frozenset(outside_paths(tool, inputs, workspace=self._workspace)),
            in_subagent=in_subagent,
        )
        self._calls.append(call)
        if tool_use_id is not None:
            self._by_id[tool_use_id] = call
        if (key := WRITE_TOOLS.get(tool)) and isinstance(path := inputs.get(key), str) and path:
            self._produced.setdefault(path, None)

    def _user(self, obj: dict[str, Any]) -> None:
        for block in content_blocks(obj):
            if block.get("type") != "tool_result":
                continue
            tool_use_id = block.get("tool_use_id")
            call = self._by_id.get(tool_use_id) if isinstance(tool_use_id, str) else None
            if call is None or call.result_digest is not None:
                self._orphans += 1
                continue
            call.result_digest = digest_text(tool_result_text(block))
            call.result_is_error = block.get("is_error") is True

    def _result_line(self, obj: dict[str, Any]) -> None:
        status = obj.get("api_error_status")
        turns = obj.get("num_turns")
        subtype = obj.get("subtype")
        text = obj.get("result")
        self._result = _Result(
            is_error=obj.get("is_error") is not False,  # fail closed: only false records
            subtype=subtype if isinstance(subtype, str) else None,
            api_error_status=_int_or_none(status),
            cost_usd=decimal_or_none(obj.get("total_cost_usd")),
            text=text if isinstance(text, str) else None,
            num_turns=_int_or_none(turns),
            final_text=self._message.final_text() if self._message is not None else None,
        )


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _describe(obj: dict[str, Any]) -> str:
    kind = obj.get("type")
    subtype = obj.get("subtype")
    return f"{kind}/{subtype}" if isinstance(subtype, str) else str(kind)


def _freeze(call: _Call) -> ObservedCall:
    return ObservedCall(
        tool=call.tool,
        argument=call.argument,
        tool_use_id=call.tool_use_id,
        result_digest=call.result_digest,
        result_is_error=call.result_is_error,
        read_path=call.read_path,
        outside_paths=call.outside,
        in_subagent=call.in_subagent,
    )
