"""The scripted provider's HTTP side: one thread per connection, one POST per request.

`_Server` serves `demo._server.ScriptedProvider` on loopback; `_Handler` reads a request's
body within the provider's byte and value bounds (413 past one body's, 529 past what is
in flight: docs/provider.md), decides its reply through the provider, and writes it as
JSON or as server-sent events, with the scripted faults (demo/_faults.py: an HTTP error, a
cut stream, an SSE error event) and a turn's delay.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import urlsplit

from recorder import json_values

from ._faults import ERROR_TYPES, STATUS_OF, CutFault, HttpFault, SseErrorFault
from ._reply import Reply
from ._server import (
    HANDLER_TIMEOUT_S,
    SESSION_HEADER,
    ScriptedProvider,
)
from ._wire import error_body, stream_events, whole_message

CUT_PAUSE_S: Final = 0.2
"""How long a ``cut`` waits between its last event and the reset: a reset makes the client's
kernel drop what it received and its reader had not read yet, so a reset at once lost the
events and the CLI saw a failed connection (a retry) where the captures show a broken stream
(the non-streaming fallback)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Handlers are bounded by their socket timeout; stop() must not wait on them.
    block_on_close = False
    # socketserver's default backlog is 5: sixteen connections at once (a batch's sessions,
    # or a test's threads) on a loaded host overflowed it, and a connection was reset.
    request_queue_size = 128
    provider: ScriptedProvider

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Serve one connection in its handler thread: over TLS when the provider has a
        context (the handshake bounded by the handler's timeout; a failed one is counted
        as an error, quietly, like a client gone away)."""
        tls = self.provider.tls
        if tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(HANDLER_TIMEOUT_S)
        wrapped = tls.wrap_socket(request, server_side=True)  # takes over the descriptor
        try:
            super().finish_request(wrapped, client_address)
        finally:
            wrapped.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Count a client gone away quietly; anything else is a bug and keeps its traceback."""
        self.provider._count_error()
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = HANDLER_TIMEOUT_S
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the base class's per-request stderr line."""

    def do_GET(self) -> None:
        self._send_json(404, error_body("not_found_error", f"no route {self.path}"))

    def do_POST(self) -> None:
        provider = self.server.provider
        if urlsplit(self.path).path != "/v1/messages":
            self._send_json(404, error_body("not_found_error", f"no route {self.path}"))
            return
        session = self.headers.get(SESSION_HEADER, "")
        if not provider.authorized(dict(self.headers.items())):
            self._discard_body(provider.max_request_bytes)
            self._send_json(401, error_body("authentication_error", "invalid x-api-key"))
            return
        try:
            length = max(int(self.headers.get("Content-Length", "0")), 0)
        except ValueError:
            length = 0
        bound = provider.max_request_bytes
        if length > bound:  # never read: the runner would hold it
            provider._count_error()
            provider._log(self.path, session, None, f"body of {length} bytes unread: over "
                          f"the provider's {bound} bytes (MAX_REQUEST_BYTES)")
            self._send_json(413, error_body("request_too_large", f"body over {bound} bytes"))
            return
        if not provider.bodies.take(length):  # never read: with the bodies in flight, too much
            provider._count_error()
            provider._log(self.path, session, None, f"body of {length} bytes unread: the "
                          "bodies being handled hold the provider's bound")
            self._send_json(529, error_body(ERROR_TYPES[529], "too many request bytes at "
                                                               "once"))
            return
        try:
            self._post(provider, session, length)
        finally:
            provider.bodies.give(length)

    def _discard_body(self, bound: int) -> None:
        """Read the body and drop it, in pieces, when its Content-Length is within ``bound``
        (an answer sent over an unread body is lost: closing then resets the connection)."""
        try:
            left = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return
        if left > bound:
            return
        try:
            while left > 0 and (piece := self.rfile.read(min(left, 64 * 1024))):
                left -= len(piece)
        except OSError:
            return

    def _post(self, provider: ScriptedProvider, session: str, length: int) -> None:
        """Read one body of ``length`` bytes (its budget taken); decode and answer it when what
        it may decode to is within `MAX_REQUEST_VALUES` and fits in `VALUES_IN_FLIGHT`."""
        try:
            data = self.rfile.read(length) if length > 0 else b""
        except OSError:
            data = b""
        values = json_values(data)
        bound = provider.max_request_values
        if values > bound:  # never decoded: what it builds is not bounded by its bytes
            provider._count_error()
            provider._log(self.path, session, None, f"body of {length} bytes undecoded: it "
                          f"may hold {values} JSON values, over the provider's {bound} "
                          "(MAX_REQUEST_VALUES)")
            self._send_json(413, error_body("request_too_large", f"body may hold {values} "
                                            f"JSON values, over the {bound} one body may hold"))
            return
        if not provider.values.take(values):  # never decoded: too much at once
            provider._count_error()
            provider._log(self.path, session, None, f"body of {length} bytes undecoded: the "
                          "bodies being handled hold the provider's bound of JSON values")
            self._send_json(529, error_body(ERROR_TYPES[529], "too many request values at "
                                                               "once"))
            return
        try:
            decided = self._decode(provider, session, data)
        finally:  # the decoded body is let go before its answer is sent, however slowly
            provider.values.give(values)
        del data
        if decided is not None:
            self._answer(*decided)

    def _decode(self, provider: ScriptedProvider, session: str,
                data: bytes) -> tuple[Reply, bool] | None:
        """Decode one body (its budgets taken): its reply and whether it asked for a stream,
        or None when it was answered already (not a JSON object, or an overloaded spell)."""
        try:
            body = json.loads(data) if data else None
        except (ValueError, RecursionError):
            body = None
        provider._log(self.path, session, body if isinstance(body, dict) else None,
                      None if isinstance(body, dict) else "body is not a JSON object")
        if not isinstance(body, dict):
            provider._count_error()
            self._send_json(400, error_body("invalid_request_error", "body is not a JSON object"))
            return None
        if provider._overloaded():
            self._send_json(529, error_body(ERROR_TYPES[529], "overloaded for a while"))
            return None
        streaming = body.get("stream") is True
        return provider._decide(body, session=session, streaming=streaming), streaming

    def _answer(self, reply: Reply, streaming: bool) -> None:
        """Send ``reply``: its fault, or its turn as a stream or one message."""
        provider = self.server.provider
        message_id = f"msg_{uuid.uuid4().hex[:24]}"
        provider.wait_or_stop(reply.delay_s)
        fault = reply.fault
        try:
            if isinstance(fault, HttpFault):
                self._send_json(fault.status, error_body(fault.kind(), fault.text()),
                                {str(k): v for k, v in fault.headers.items()})
            elif isinstance(fault, CutFault):
                self._cut(reply, message_id, fault.after_events) if streaming else self._reset()
            elif isinstance(fault, SseErrorFault):
                error = error_body(fault.error_type, fault.message)
                if streaming:
                    events = stream_events(reply.turn, model=reply.model, message_id=message_id)
                    self._send_stream([*events[:fault.after_events], error])
                else:
                    self._send_json(STATUS_OF[fault.error_type], error)
            elif streaming:
                self._send_stream(
                    stream_events(reply.turn, model=reply.model, message_id=message_id)
                )
            else:
                self._send_json(
                    200, whole_message(reply.turn, model=reply.model, message_id=message_id)
                )
        except OSError:  # the CLI went away mid-answer (it was killed, or it timed out)
            provider._count_error()
            self.close_connection = True

    def _head(self, status: int, content_type: str, extra: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.send_header("Connection", "close")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True

    def _send_json(self, status: int, payload: Mapping[str, Any],
                   extra: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._head(status, "application/json", {**(extra or {}),
                                                "Content-Length": str(len(data))})
        self.wfile.write(data)

    def _send_stream(
        self, events: Sequence[Mapping[str, Any]], *, cut_after: int | None = None
    ) -> None:
        self._head(
            200, "text/event-stream", {"Cache-Control": "no-cache", "Transfer-Encoding": "chunked"}
        )
        for n, event in enumerate(events):
            if n == cut_after:
                self.wfile.flush()
                time.sleep(CUT_PAUSE_S)  # the client reads the events sent before the reset
                self._reset()
                return
            frame = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self, reply: Reply, message_id: str, after_events: int) -> None:
        events = stream_events(reply.turn, model=reply.model, message_id=message_id)
        self._send_stream(events, cut_after=after_events)

    def _reset(self) -> None:
        """Close the connection with a TCP reset (the client sees ECONNRESET, not an end)."""
        # SO_LINGER on with a zero timeout makes close() send RST (socket(7)).
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # close() waits for the makefile() objects to go; detach() frees the fd now,
        # and later writes by the base class fail as OSError on the detached socket.
        os.close(self.connection.detach())
        self.close_connection = True
