"""A scripted Anthropic Messages API on loopback: a test and demo double, never a provider.

The real Claude Code CLI honours ``ANTHROPIC_BASE_URL``; pointed at a
`ScriptedProvider`, it plays scripted model turns while executing real tools
in a real workspace and printing real stream-json.

Why stdlib ``ThreadingHTTPServer`` in a daemon thread, not an anyio server:
it is a well-kept part of the standard library that speaks enough HTTP/1.1
for the CLI's client, it serves sync tests and the async supervisor alike
(nothing here touches an event loop), and a slow or stalled client holds
only its own handler thread. Every response closes its connection
(``Connection: close``), so no idle keep-alive thread outlives a request.

How a request is answered (stateless: no per-connection state):

* The script is the first one whose ``match`` occurs in the text of the
  request's first ``user`` message: its text blocks joined by ``\\n``, with
  ``<system-reminder>`` spans (CLAUDE.md, date, skills) removed, so a
  workspace's own files can never select a script. For a subagent's request
  that text is the Agent ``prompt``.
* The turn index is the number of ``assistant`` messages in the request.
* A script's branch (`demo._scripts.Branch`) is decided from the same request: the first
  alternative whose ``when_request_contains`` occurs in the text the request carries
  (`demo._wire.request_text`: system prompt and the messages' text, reminders included),
  else ``otherwise``. Only the arm's layers put different text there (a line of CLAUDE.md,
  a skill): nothing tells the provider the arm.
* ``"stream": true`` gets Server-Sent Events shaped like the Messages API;
  a request without it (the CLI's fallback after a broken stream) gets the
  same turn as one JSON message.
* No script matches, or the index is past the script's last turn: a final
  text turn ``no script for this request`` (stop reason ``end_turn``) and
  `ScriptedProvider.unmatched` counts it. A 500 would only make the CLI
  retry the same request three times and then print a synthetic error; a
  text turn ends the session at once, and the count lets a test fail loudly.

Fault steps in a script's ``turns`` (demo/_faults.py: ``{"fault": "http",
"status": 529}``, ``{"fault": "cut"}``, ``{"fault": "sse_error"}``, each with
``times``, default 1) do not take a turn index: they apply, in order, to the
requests for the next real turn, counted per CLI session (the
``X-Claude-Code-Session-Id`` header) so that concurrent sessions of one script
each see them. A ``cut`` resets the connection after the first events of the
stream (or before any answer to a non-streaming request); an ``sse_error``
sends an ``error`` event after them; a ``stream_only`` fault spares the
non-streaming fallback. A turn's ``delay_s`` holds its answer back; a
script's ``after_last: repeat_last`` plays its last turn again past the end.

A test instrument, off unless asked for: ``request_log=FILE`` appends each
request the provider receives to FILE, one JSON line per request (its path,
its ``X-Claude-Code-Session-Id``, its body as parsed JSON), so a test can see
what the sessions told the model. It is bounded (`REQUEST_LOG_BODY_BYTES` per
body kept, `REQUEST_LOG_BYTES` per log; demo/_reqlog.py), and only a `ScriptedProvider` has
it: nothing logs the requests of a run against a real provider.

Memory (docs/provider.md, "Bounds"): the provider runs in the runner's process for the
whole batch, so nothing a session sends is held past its request but bounded tables
(demo/_held.py): tool_result texts cut and bounded per session and in all, the misses'
kinds, the fault counters' keys. A body is read only when its ``Content-Length`` is at most
`MAX_REQUEST_BYTES` (else 413, unread) and it fits, with the bodies being handled at that
moment, in `BODIES_IN_FLIGHT_BYTES` (else 529 overloaded, unread: the CLI retries). What a
body decodes to is bounded too, before it is decoded: at most `MAX_REQUEST_VALUES` JSON
values (its ``{``, ``[`` and ``,`` counted; else 413, undecoded), and at most
`VALUES_IN_FLIGHT` over the bodies being handled (else 529, undecoded).
"""


from __future__ import annotations

import ssl
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import anyio

from ._budget import InFlight
from ._credential import carries
from ._held import BoundedCounts, BoundedMap, ToolResults, cut_key, tool_results_of
from ._reply import Reply
from ._reqlog import RequestLog
from ._scripts import Playbook, Route, Script, TextBlock, Turn, matching, repeated
from ._wire import first_user_text, request_text, task_begins, turn_index

if TYPE_CHECKING:
    from pathlib import Path

    from ._http import _Server

NO_SCRIPT_TEXT: Final = "no script for this request"
"""The final text served to a request that no script covers."""
FALLBACK_MODEL: Final = "claude-scripted"
"""Served model when neither the turn, the script nor the request names one."""
SESSION_HEADER: Final = "X-Claude-Code-Session-Id"
"""The CLI's per-session header (STREAM_JSON_FACTS 10); keys fault counters."""
HANDLER_TIMEOUT_S: Final = 60.0
"""Socket timeout per connection: a stalled client frees its thread after this long."""
MAX_REQUEST_BYTES: Final = 32 * 1024 * 1024
"""The largest request body read (its Content-Length): a larger one is answered 413
``request_too_large`` unread, as the real Messages API answers a request over its 32 MB.
The server runs in the runner's process and a session reaches it through the egress proxy:
it read a body of any length whole (a session's 900 MB POST held the runner 977 MB)."""
BODIES_IN_FLIGHT_BYTES: Final = 128 * 1024 * 1024
"""Most bytes of request bodies being read and handled at once, every session together: a
body that would pass it is answered 529 ``overloaded_error`` unread (the CLI retries). A
session may hold 64 connections at once, and 64 bodies of `MAX_REQUEST_BYTES` are 2 GiB."""
MAX_REQUEST_VALUES: Final = 500_000
"""The most JSON values one body may decode to, counted before it is decoded as its bytes
``{``, ``[`` and ``,`` (`recorder._harness.json_values`, an over-count): a body past it is
answered 413 ``request_too_large`` undecoded. A body's bytes are bounded; what they decode
to was not: four 32 MiB bodies of ``{},{},...`` (11 million empty objects each) held the
runner 3.2 GB. A value costs at most about 150 bytes decoded (a dict and a float for two of
the bytes counted), so one body's objects stay near 75 MB. A scripted session's requests are
a conversation: the pinned CLI's requests in `headwater-campaign demo` (system prompt, tools'
schemas, a few turns) count 1,305 to 1,396 (80 to 85 KB); a tool result as large as the CLI
sends (a Read's 25,000 tokens, about 100 KB) adds at most that many, even one of commas."""
VALUES_IN_FLIGHT: Final = 1_000_000
"""Most JSON values of the bodies being decoded and handled at once, every session together
(counted as `MAX_REQUEST_VALUES` counts them): a body that would pass it is answered 529
``overloaded_error`` undecoded (the CLI retries). `BODIES_IN_FLIGHT_BYTES` lets 64 bodies of
2 MiB in at once, each under `MAX_REQUEST_VALUES`; this keeps their objects near 150 MB."""
FAULT_KEYS: Final = 4096
"""Most ``(session, script, turn)`` fault counters kept; past it the oldest is dropped (its
session would see that turn's faults again: only a session that sent thousands of ids)."""
MISS_KINDS: Final = 64
"""Most distinct reasons `ScriptedProvider.misses` counts; later ones count under one."""
MISS_OVERFLOW: Final = f"other reasons (more than {MISS_KINDS} kinds)"
"""The reason a miss is counted under once `MISS_KINDS` reasons are counted."""
POLL_INTERVAL_S: Final = 0.05
"""How often the serving loop checks for `ScriptedProvider.stop`; stopping waits about this long."""
STOP_JOIN_S: Final = 5.0
"""Bound on joining the server thread in `ScriptedProvider.stop`."""


_NO_SCRIPT_TURN: Final = Turn(blocks=[TextBlock(type="text", text=NO_SCRIPT_TEXT)])


class ScriptedProvider:
    """A loopback Anthropic Messages API that plays scripted turns (see the module doc).

    Use it as a context manager from sync code (``with``) or async code
    (``async with``; stopping runs in a worker thread, shielded from
    cancellation), or call `start` and `stop`. Nothing is logged to stdout
    or stderr; handler errors are counted in `errors`.

    Args:
        scripts: The scripts, tried in this order; names must be unique
            (an unnamed script is called ``script<N>``, its position).
        host: Address to bind; loopback unless a sandbox must reach it elsewhere.
        port: TCP port; 0 picks a free one (read it from `url`).
        overloaded_first: The first this many requests, of any session, are answered
            529 overloaded: a provider that is overloaded for a while (the batch's
            retries must ride it out), as opposed to a script's per-session faults.
        request_log: A file to append every request to (`RequestLog`), a test
            instrument; None (the default) logs nothing.
        max_request_bytes: The largest body read (`MAX_REQUEST_BYTES`).
        bodies_in_flight_bytes: Most body bytes handled at once (`BODIES_IN_FLIGHT_BYTES`).
        max_request_values: The most JSON values one body may decode to
            (`MAX_REQUEST_VALUES`).
        values_in_flight: Most JSON values of the bodies handled at once (`VALUES_IN_FLIGHT`).
        tool_results: The table of tool_results kept (`ToolResults`, its default bounds).
        tls: A server-side TLS context (its certificate chain loaded) to serve HTTPS with,
            as a real provider does: `url` is then ``https://``, and each connection's
            handshake runs in its own handler thread, within `HANDLER_TIMEOUT_S` (a client
            that never finishes it holds only that thread). None (the default): plain HTTP.
        credential: The one credential the provider takes, as a real provider does
            (`demo._credential.carries`: as ``x-api-key``, or as a bearer token with the
            OAuth beta); any other request is answered 401 ``authentication_error`` and
            counted in `refused_credentials`. None (the default) takes any key: the
            harness's own placeholder is enough.

    Raises:
        ValueError: two scripts share a name.
    """

    def __init__(
        self, scripts: Sequence[Script], *, host: str = "127.0.0.1", port: int = 0,
        overloaded_first: int = 0, request_log: Path | None = None,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        bodies_in_flight_bytes: int = BODIES_IN_FLIGHT_BYTES,
        max_request_values: int = MAX_REQUEST_VALUES,
        values_in_flight: int = VALUES_IN_FLIGHT,
        tool_results: ToolResults | None = None, tls: ssl.SSLContext | None = None,
        credential: str | None = None,
    ) -> None:
        named = [
            s if s.name else s.model_copy(update={"name": f"script{i}"})
            for i, s in enumerate(scripts)
        ]
        names = [s.name for s in named]
        if len(set(names)) != len(names):
            raise ValueError(f"script names are not unique: {sorted(names)}")
        self._scripts = tuple(named)
        self._playbooks: dict[tuple[str, Route], Playbook] = {
            (s.name, route): s.playbook(route) for s in named for route in s.routes()}
        self._host = host
        self._port = port
        self.tls = tls
        """The server-side TLS context, or None for plain HTTP."""
        self.credential = credential
        """The one credential taken, or None for any (a secret: never in a repr)."""
        self._refused_credentials = 0
        self._lock = threading.Lock()
        self._requests: dict[str, int] = dict.fromkeys(names, 0)
        self._unmatched = 0
        self._misses: BoundedCounts[str] = BoundedCounts(MISS_KINDS, MISS_OVERFLOW)
        self._errors = 0
        self._tool_results = tool_results if tool_results is not None else ToolResults()
        self._fault_hits: BoundedMap[tuple[str, str, Route, int], int] = BoundedMap(FAULT_KEYS)
        self.max_request_bytes = max_request_bytes
        self.bodies = InFlight(bodies_in_flight_bytes)
        """The bytes of the bodies being read, over every request (`BODIES_IN_FLIGHT_BYTES`)."""
        self.max_request_values = max_request_values
        self.values = InFlight(values_in_flight)
        """The values of the bodies being decoded, over every request (`VALUES_IN_FLIGHT`)."""
        self._overloaded_left = overloaded_first
        self._request_log_path = request_log
        self._request_log: RequestLog | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def _overloaded(self) -> bool:
        """Whether this request is one of the first ``overloaded_first`` (counts it)."""
        with self._lock:
            if self._overloaded_left > 0:
                self._overloaded_left -= 1
                return True
            return False

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server (``https://`` with `tls`), for
        ``ANTHROPIC_BASE_URL`` or a provider URL.

        Raises:
            RuntimeError: the provider is not running.
        """
        if self._server is None:
            raise RuntimeError("the provider is not running")
        host, port = self._server.server_address[:2]
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{host if isinstance(host, str) else host.decode()}:{port}"

    @property
    def requests(self) -> dict[str, int]:
        """Requests seen per script name, faults and past-the-end requests included (a copy)."""
        with self._lock:
            return dict(self._requests)

    @property
    def unmatched(self) -> int:
        """Requests answered with ``no script for this request``."""
        with self._lock:
            return self._unmatched

    @property
    def misses(self) -> dict[str, int]:
        """Why requests got ``no script for this request``, in words, counted (a copy; at most
        `MISS_KINDS` reasons, later ones under `MISS_OVERFLOW`)."""
        with self._lock:
            return self._misses.snapshot()

    def script_for(self, task: str) -> str | None:
        """The name of the script a session of ``task`` would get (its ``match`` is a phrase of
        the task), or None: its requests would be answered ``no script for this request``."""
        return next((s.name for s in matching(self._scripts, task)), None)

    def scripts_for(self, task: str) -> tuple[str, ...]:
        """The names of every script whose ``match`` is a phrase of ``task``, the one played
        (`script_for`) first (`demo._scripts.matching`)."""
        return tuple(s.name for s in matching(self._scripts, task))

    @property
    def refused_credentials(self) -> int:
        """Requests answered 401 because they lacked `credential` (none without one)."""
        with self._lock:
            return self._refused_credentials

    def authorized(self, headers: Mapping[str, str]) -> bool:
        """Whether a request with ``headers`` carries `credential` (`demo._credential.carries`);
        counts a refusal. Always True without a `credential`."""
        if self.credential is None or carries(headers, self.credential):
            return True
        with self._lock:
            self._refused_credentials += 1
        return False

    @property
    def errors(self) -> int:
        """Requests whose handling raised (bad body, client gone mid-answer)."""
        with self._lock:
            return self._errors

    def start(self) -> str:
        """Bind, serve from a daemon thread, and return `url`. Idempotent.

        Raises:
            OSError: the address cannot be bound, or the request log cannot be opened.
        """
        if self._server is None:
            self._stopping.clear()
            if self._request_log_path is not None and self._request_log is None:
                self._request_log = RequestLog(self._request_log_path)
            try:
                from ._http import _Handler, _Server  # the HTTP side imports this module

                server = _Server((self._host, self._port), _Handler)
            except OSError:
                self._close_log()
                raise
            server.provider = self
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                args=(POLL_INTERVAL_S,),
                name=f"scripted-provider:{self.url}",
                daemon=True,
            )
            self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop accepting requests and join the server thread (at most `STOP_JOIN_S`).

        Responses already in flight finish in their own daemon threads, each
        bounded by `HANDLER_TIMEOUT_S` (a turn's ``delay_s`` ends at once); the
        request log, if any, is closed (what they still receive is not logged).
        Idempotent.
        """
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None or thread is None:
            return
        self._stopping.set()  # a turn's delay_s ends now
        server.shutdown()
        server.server_close()
        thread.join(STOP_JOIN_S)
        self._close_log()

    def _close_log(self) -> None:
        log, self._request_log = self._request_log, None
        if log is not None:
            log.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.stop)

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"<ScriptedProvider {where} scripts={len(self._scripts)} unmatched={self.unmatched}>"

    def _count_error(self) -> None:
        with self._lock:
            self._errors += 1

    def _log(self, path: str, session: str, body: Mapping[str, Any] | None,
             dropped: str | None) -> None:
        """Append one request to the request log, if there is one; a failed write is an error."""
        if self._request_log is None:
            return
        try:
            self._request_log.append(path, session, body, dropped=dropped)
        except OSError:
            self._count_error()

    @property
    def tool_results(self) -> dict[str, tuple[bool, str]]:
        """What the client sent back per tool_use id: ``(is_error, text)`` (a copy).

        The text is the tool_result's string content, or its text blocks
        joined by ``\n``, cut to its first `demo._held.TOOL_RESULT_TEXT_CHARS`
        characters; the least recently sent go once a session's, or all, pass
        their bound (`demo._held.ToolResults`). Tests use it to see, from the
        provider's side, what a tool call returned inside the sandbox (e.g. that
        a host read failed).
        """
        with self._lock:
            return self._tool_results.snapshot()

    @property
    def held_bytes(self) -> int:
        """Bytes the tool_results kept hold, as `demo._held.ToolResults` counts them."""
        with self._lock:
            return self._tool_results.held_bytes

    def _note_tool_results(self, body: Mapping[str, Any], session: str) -> None:
        for tool_use_id, text, is_error in tool_results_of(body):
            with self._lock:
                self._tool_results.note(tool_use_id, text=text, session=session,
                                        is_error=is_error)

    def wait_or_stop(self, seconds: float) -> None:
        """Wait ``seconds`` (a turn's ``delay_s``), or less once `stop` is called."""
        if seconds > 0:
            self._stopping.wait(seconds)

    def _decide(self, body: Mapping[str, Any], *, session: str,
                streaming: bool = True) -> Reply:
        """Pick the reply to one request; counts it. Thread-safe.

        ``streaming``: whether the request asked for a stream; a ``stream_only`` fault
        lets a request without it (the CLI's fallback) have the turn.
        """
        self._note_tool_results(body, session)
        text = first_user_text(body)
        index = turn_index(body)
        requested = body.get("model")
        fallback = requested if isinstance(requested, str) and requested else FALLBACK_MODEL
        script = next(matching(self._scripts, text), None)
        route = script.route(request_text(body)) if script is not None and script.branches else ()
        with self._lock:
            if script is not None:
                self._requests[script.name] += 1
            playbook = self._playbooks[(script.name, route)] if script is not None else []
            if script is not None and index >= len(playbook) and script.after_last:
                turn = repeated(playbook[-1][1], index)
                return Reply(turn, turn.model or script.model or fallback)
            if script is None or index >= len(playbook):
                self._unmatched += 1
                what = (f"the script {script.name!r}{script.describe(route)} has no turn "
                        f"{index + 1}" if script
                        else f"no script matches a task that begins {task_begins(text)!r}")
                self._misses.add(what)
                return Reply(_NO_SCRIPT_TURN, fallback)
            faults, turn = playbook[index]
            key = (cut_key(session), script.name, route, index)
            hits = self._fault_hits.get(key, 0)
            self._fault_hits[key] = hits + 1
        model = turn.model or script.model or fallback
        for fault in faults:
            if hits < fault.times:
                spared = fault.stream_only and not streaming
                return Reply(turn, model, None if spared else fault)
            hits -= fault.times
        return Reply(turn, model)
