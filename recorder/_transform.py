"""The transform: one session's stdout lines -> an `Observation` (RC-07, RC-08, RC-10..RC-13).

`StreamObserver.feed` takes each complete stdout line in order and keeps only
compact facts: per tool call its name, argument, id, the digest of its
tool_result text (taken when the result arrives; the text is dropped), and its
outside paths; the current final-message candidate; the last result line's
few fields. Raw lines are never kept, so memory grows with the number of calls,
not with the bytes of the stream (RC-01: the stdout pipe is the only input).
RC-10's argument table is `recorder._arguments`; the frozen results
(`Observation`, `ObservedCall`, `OrphanResult`, `Anomaly`) are
`recorder._observation`, re-exported here.

`StreamObserver.finish` decides the session state from the table of
docs/batch.md (its steps 1-7 are `recorder._decide`; the record's own bounds,
`recorder._record_bounds`). A refusal the stream showed (RC-07) wins, whatever the end;
then ``limit-exceeded`` (a limit of the sandbox the session passed, which
ended it: processes, memory, /tmp, writes, connections; the runner's bound on
what it prints, ``end="stdout-limit"``; or a call's argument
past what one call, or one session, may add to the record:
`MAX_CALL_ARGUMENT_CHARS`; or the calls' paths past the file lookups RC-08 may spend on
them: `recorder._paths.MAX_PATH_LOOKUPS`); then, the first that applies:

1. ``line-too-long``, ``timed-out`` (the driver's end), ``truncated`` (a tail
   without newline);
2. ``refused-init`` (RC-07: any init line refused, a JSON line other than a
   hook event before the first init, or no init line at all);
3. ``env-fault`` (a declared MCP server reported ``failed``);
4. no result line: ``killed`` when the exit status is a signal (< 0), else
   ``no-result``;
5. the last result line: ``is_error`` true -> ``harness-error`` (whatever its
   ``subtype`` and the exit code; BC-10a/b);
6. ``damaged``: a non-JSON line stands after the last main-thread,
   non-synthetic assistant line and before the last result line. The final
   message may be that line (another writer's bytes injected into it), so no
   earlier message may supply the answer;
7. else ``recorded``.

A harness the driver ended after the post-result grace
(``end="post-result-grace"``) is decided by 5-7 too, from what it printed
(docs/batch.md, "Session states"); its SIGTERM status is not a ``killed``
(that needs no result line).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recorder._arguments import WRITE_TOOLS
from recorder._arguments import call_argument as call_argument
from recorder._arguments import canonical_json as canonical_json
from recorder._bounds import ANOMALIES_KEPT as ANOMALIES_KEPT
from recorder._bounds import ANOMALY_EXCERPT_BYTES as ANOMALY_EXCERPT_BYTES
from recorder._bounds import MAX_CALL_ARGUMENT_CHARS as MAX_CALL_ARGUMENT_CHARS
from recorder._bounds import MAX_KEPT_ID_CHARS as MAX_KEPT_ID_CHARS
from recorder._bounds import MAX_LINE_VALUES as MAX_LINE_VALUES
from recorder._bounds import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
from recorder._bounds import MAX_NAME_CHARS as MAX_NAME_CHARS
from recorder._bounds import MAX_REASON_CHARS as MAX_REASON_CHARS
from recorder._bounds import MAX_SESSION_ARGUMENT_CHARS as MAX_SESSION_ARGUMENT_CHARS
from recorder._bounds import MAX_SESSION_CALLS as MAX_SESSION_CALLS
from recorder._bounds import REASON_TEXT_CHARS as REASON_TEXT_CHARS
from recorder._decide import SIGNAL_EXIT_BASE as SIGNAL_EXIT_BASE
from recorder._decide import End as End
from recorder._decide import decide
from recorder._digest import digest_text
from recorder._errors import LineTooLong
from recorder._harness import (
    PRE_INIT_SUBTYPES,
    assistant_model,
    content_blocks,
    is_allowed_before_init,
    is_main_thread,
    is_synthetic,
    line_kind,
    message_of,
    observe_line,
    repeated_keys,
    tool_result_text,
)
from recorder._initcheck import InitPolicy, check_init, failed_declared_mcp_servers
from recorder._initkeys import MAX_UNKNOWN_INIT_KEYS, unknown_init_keys
from recorder._observation import Anomaly as Anomaly
from recorder._observation import Observation as Observation
from recorder._observation import ObservedCall as ObservedCall
from recorder._observation import OrphanResult as OrphanResult
from recorder._paths import MAX_PATH_LOOKUPS, Lookups, outside_paths
from recorder._record_bounds import RecordBounds
from recorder._result_line import ResultLine, read_result
from recorder._vocab import DriveEnd, SessionState, harness_error_retryable, state_retryable
from sandbox.gateway import MAX_TEXT

if TYPE_CHECKING:
    from pathlib import Path


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
class _Message:
    """The latest main-thread, non-synthetic assistant message (grouped by ``message.id``)."""

    message_id: object
    texts: list[str] = field(default_factory=list)

    def final_text(self) -> str | None:
        return "".join(self.texts) if self.texts else None


class StreamObserver:
    """Watches one attempt's stdout, line by line, and reports an `Observation`.

    Synchronous and pure apart from RC-08's symlink lookups inside the
    workspace; the driver calls `feed` for each complete line, then `finish`.
    ``workspace`` is the workspace's host copy, ``inside`` the workspace path
    the session saw (RC-02; None: the same), against which the paths it
    names are resolved. ``inside_from_init``: with no ``inside``, take the
    first init line's absolute ``cwd`` as the workspace path (an attempt of a
    batch of format 1 saw its workspace at the host path it had then, which
    only its stream still tells). ``bounds``: the record's bounds (a fresh
    `RecordBounds` with the product's figures when None). ``decode``: a line's bytes
    to its object or None (`recorder._harness.observe_line`; the reference
    `parse_line` gives the same observation).
    """

    def __init__(self, *, policy: InitPolicy, workspace: Path, inside: str | None = None,
                 inside_from_init: bool = False, bounds: RecordBounds | None = None,
                 decode: Callable[[bytes], dict[str, Any] | None] = observe_line) -> None:
        self._policy = policy
        self._bounds = RecordBounds() if bounds is None else bounds
        self._decode = decode
        self._workspace = workspace
        self._inside = inside
        self._inside_from_init = inside_from_init and inside is None
        self._lines = 0
        self._inits = 0
        self._version: str | None = None
        self._refusals: list[str] = []
        self._failed_mcp: list[str] = []
        self._unknown_keys: dict[str, None] = {}  # first seen first, at most MAX_UNKNOWN_INIT_KEYS
        self._anomalies: list[Anomaly] = []
        self._anomaly_count = 0
        self._calls: list[_Call] = []
        self._by_id: dict[str, _Call] = {}
        self._orphans: list[OrphanResult] = []
        self._produced: dict[str, None] = {}
        self._message: _Message | None = None
        self._served_model: str | None = None
        self._result: ResultLine | None = None
        self._too_long: LineTooLong | None = None
        self._final_line = 0  # the last main-thread, non-synthetic assistant line
        self._last_anomaly = 0
        self._message_chars = 0  # the current message's text, over its lines
        self._lookups = Lookups()  # RC-08's lstat calls, for the whole session

    def __repr__(self) -> str:
        return (f"<StreamObserver lines={self._lines} inits={self._inits} "
                f"calls={len(self._calls)} result={self._result is not None}>")

    def feed(self, line: bytes) -> bool:
        """Take the next complete stdout line (without its newline).

        Returns:
            True when the line was a ``result`` line the state is decided from
            (after the first init line): the driver's post-result grace starts
            or restarts (docs/batch.md "Session states"; `recorder.drive_child`).
        """
        self._lines += 1
        if not line or line.isspace():  # never JSON: counted without a decoder's exception
            self._anomaly(line)
            return False
        if self._bounds.too_many_values(line, self._lines):
            return False  # not decoded: what it would build is not bounded by its bytes
        obj = self._decode(line)
        if obj is None:
            self._anomaly(line)
            return False
        kind = line_kind(obj)
        if kind == "init":
            self._init(obj, line)
        elif self._inits == 0:
            if not is_allowed_before_init(obj):
                allowed = ", ".join(f"system/{sub}" for sub in sorted(PRE_INIT_SUBTYPES))
                self._refuse(f"line {self._lines} before the init line: type = "
                             f"{_describe(obj)!r}: only {allowed} may precede the init line "
                             "(docs/glossary.md: RC-07)")
        elif kind == "assistant":
            self._assistant(obj)
        elif kind == "user":
            self._user(obj)
        elif kind == "result":
            self._result_line(obj)
            return True
        return False

    @property
    def bound_passed(self) -> bool:
        """True once the stream passed one of the record's own bounds (calls, one message's
        text, an argument: docs/recorder.md); its reason then names the first one passed."""
        return self._bounds.reason is not None

    def _served_message_id(self) -> str | None:
        """The last main-thread non-synthetic assistant line's ``message.id``, bounded as a
        gateway row keeps it (`sandbox.gateway.MAX_TEXT`), or None."""
        message_id = self._message.message_id if self._message is not None else None
        return message_id[:MAX_TEXT] if isinstance(message_id, str) else None

    def finish(self, *, end: DriveEnd, exit_status: int | None, tail: bytes | None,
               too_long: LineTooLong | None = None,
               limit_exceeded: str | None = None) -> Observation:
        """Decide the state (module docstring) and return everything observed.

        Args:
            end: how the driver saw the stream end.
            exit_status: the harness's exit status; negative = killed by that signal.
            tail: a final fragment with no newline (the stream was cut), else None.
            too_long: for ``end="line-too-long"``, the reader's error, naming the line
                number and its size (`recorder._errors.LineTooLong`; its message is the
                reason's).
            limit_exceeded: the reason, when the session passed one of its sandbox's
                limits (processes, memory, /tmp, writes, connections: the sandbox
                ended it); the state is then ``limit-exceeded`` unless RC-07 refused.
        """
        self._too_long = too_long
        # A refusal the stream itself showed is a fact however the stream ended
        # (RC-07); "no init line" is decided only when nothing else explains it.
        seen_refusal = bool(self._refusals)
        if self._inits == 0:
            self._refuse("no init line (type 'system', subtype 'init') on stdout: what the "
                         "session loaded is unknown (docs/glossary.md: RC-07)")
        state: SessionState
        if seen_refusal:
            state, reason = "refused-init", "; ".join(self._refusals)
        elif limit_exceeded is not None:
            state, reason = "limit-exceeded", limit_exceeded
        elif self._bounds.reason is not None:
            state, reason = "limit-exceeded", self._bounds.reason
        else:
            state, reason = decide(end, exit_status, tail, lines=self._lines,
                                   too_long=None if self._too_long is None
                                   else str(self._too_long), refusals=self._refusals,
                                   failed_mcp=self._failed_mcp, result=self._result)
        result = self._result
        retryable = (harness_error_retryable(result.api_error_status, result.text)
                     if state == "harness-error" and result is not None else state_retryable(state))
        return Observation(
            state=state,
            reason=reason,
            calls=tuple(_freeze(call) for call in self._calls),
            produced_paths=tuple(self._produced),
            final_text=result.final_text if result is not None else None,
            served_model=self._served_model,
            served_message_id=self._served_message_id(),
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
            orphan_results=tuple(self._orphans),
            lines=self._lines,
            denied_tools=result.denied_tools if result is not None else (),
            unknown_init_keys=tuple(self._unknown_keys),
        )

    def _refuse(self, reason: str) -> None:
        if len(reason) > MAX_REASON_CHARS:  # it quotes what the stream gave: bounded
            reason = reason[:MAX_REASON_CHARS] + f"... ({len(reason)} characters)"
        if reason not in self._refusals and len(self._refusals) < ANOMALIES_KEPT:
            self._refusals.append(reason)

    def _anomaly(self, line: bytes) -> None:
        self._anomaly_count += 1
        self._last_anomaly = self._lines
        if len(self._anomalies) < ANOMALIES_KEPT:
            excerpt = line[:ANOMALY_EXCERPT_BYTES].decode("utf-8", errors="replace")
            self._anomalies.append(Anomaly(self._lines, len(line), excerpt))

    @property
    def inside(self) -> str | None:
        """The workspace path the session's paths resolve against (None: the host path)."""
        return self._inside

    def _init(self, obj: dict[str, Any], line: bytes) -> None:
        self._inits += 1
        for key in repeated_keys(line):  # readers keeping the first or the last copy disagree
            self._refuse(f"{key} is printed twice in the init line: which copy counts is "
                         "unknown (fail closed) (docs/glossary.md: RC-07)")
        cwd = obj.get("cwd")
        if self._inside_from_init and isinstance(cwd, str) and posixpath.isabs(cwd):
            self._inside, self._inside_from_init = posixpath.normpath(cwd), False
        if self._version is None and isinstance(obj.get("claude_code_version"), str):
            self._version = self._bounds.name("harness version", obj["claude_code_version"],
                                              self._lines)
        for reason in check_init(obj, self._policy):
            self._refuse(reason)
        for key in unknown_init_keys(obj):  # listed, never a refusal by itself (RC-07)
            if len(self._unknown_keys) < MAX_UNKNOWN_INIT_KEYS:
                self._unknown_keys.setdefault(key, None)
        for name in failed_declared_mcp_servers(obj, self._policy):
            if name not in self._failed_mcp:
                self._failed_mcp.append(name)

    def _assistant(self, obj: dict[str, Any]) -> None:
        main = is_main_thread(obj)
        if main and not is_synthetic(obj):
            self._final_line = self._lines
            self._served_model = self._bounds.name(
                "served model", assistant_model(obj), self._lines) or self._served_model
            message = message_of(obj)
            message_id = message.get("id") if message is not None else None
            current = self._message
            if current is None or message_id is None or message_id != current.message_id:
                self._message = _Message(message_id)
                self._message_chars = 0
        for block in content_blocks(obj):
            btype = block.get("type")
            if btype == "tool_use":
                self._tool_use(block, in_subagent=not main)
            elif btype == "text" and main and not is_synthetic(obj) and self._message is not None:
                text = block.get("text")
                if isinstance(text, str):
                    self._message_chars += len(text)
                    if not self._bounds.over_the_message(self._message_chars, self._lines):
                        self._message.texts.append(text)

    def _tool_use(self, block: dict[str, Any], *, in_subagent: bool) -> None:
        tool = block.get("name")
        if not isinstance(tool, str) or not tool:
            return  # not a call anything could have run
        tool_use_id = block.get("id") if isinstance(block.get("id"), str) else None
        if tool_use_id is not None and tool_use_id in self._by_id:
            return  # the same tool_use printed again: one call
        if self._past_the_calls(tool):
            return  # nothing of it is kept: no call, no produced path, no id
        tool_input = block.get("input")
        inputs = tool_input if isinstance(tool_input, dict) else {}
        read_path = inputs.get("file_path") if tool == "Read" else None
        argument = call_argument(tool, tool_input, workspace=self._workspace, inside=self._inside)
        oversized = self._bounds.over_the_bound(tool, argument, self._lines,
                                                len(tool_use_id or ""))
        call = _Call(
            tool=tool,
            argument="" if oversized else argument,
            tool_use_id=tool_use_id,
            read_path=read_path if isinstance(read_path, str) else None,
            outside=frozenset() if oversized else frozenset(
                outside_paths(tool, inputs, workspace=self._workspace, lookups=self._lookups,
                              inside=self._inside, home=self._policy.config_dir)),
            in_subagent=in_subagent,
        )
        if self._lookups.exhausted:
            self._bounds.limit(
                f"limit-exceeded: by the {tool} call on stdout line {self._lines} the calls' "
                f"paths took {MAX_PATH_LOOKUPS} file lookups in the workspace to resolve (its "
                "symlinks followed), the most one session may ask of the runner")
        if not oversized:  # an oversized call is not kept: no value is ever cut to fit
            self._calls.append(call)
        if tool_use_id is not None and (not oversized or len(tool_use_id) <= MAX_KEPT_ID_CHARS):
            self._by_id[tool_use_id] = call
        if (not oversized and (key := WRITE_TOOLS.get(tool))
                and isinstance(path := inputs.get(key), str) and path):
            self._produced.setdefault(path, None)  # the path is the argument, already counted

    def _past_the_calls(self, what: str) -> bool:
        return self._bounds.past_the_calls(what, len(self._calls) + len(self._orphans),
                                           self._lines)

    def _user(self, obj: dict[str, Any]) -> None:
        for block in content_blocks(obj):
            if block.get("type") != "tool_result":
                continue
            tool_use_id = block.get("tool_use_id")
            call = self._by_id.get(tool_use_id) if isinstance(tool_use_id, str) else None
            digest = digest_text(tool_result_text(block))
            if call is None or call.result_digest is not None:
                if self._past_the_calls("tool_result") or self._bounds.over_the_bound(
                        "tool_result", tool_use_id if isinstance(tool_use_id, str) else "",
                        self._lines):
                    continue  # an orphan past the bounds is not kept
                self._orphans.append(OrphanResult(
                    line_number=self._lines,
                    tool_use_id=tool_use_id if isinstance(tool_use_id, str) else None,
                    result_digest=digest,
                    repeated=call is not None,
                ))
                continue
            call.result_digest = digest
            call.result_is_error = block.get("is_error") is True

    def _result_line(self, obj: dict[str, Any]) -> None:
        self._result = read_result(
            obj, final_text=self._message.final_text() if self._message is not None else None,
            damaged_at=self._last_anomaly if self._last_anomaly > self._final_line else None)


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
