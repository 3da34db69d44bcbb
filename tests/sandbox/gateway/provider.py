"""A tiny provider on host loopback for the gateway's tests: real HTTP/1.1, plain or TLS.

A threaded `http.server` (so it serves the trio and the asyncio tests alike), recording each
request it received whole (method, target, headers, body) and answering as its ``mode``
says: a Messages stream with usage, a JSON message, a 529, a 401, an echo of the request's
headers, the key it got as the row's fields or as a status line that is not HTTP,
a stream that waits for the test's word before its last events, or one that sends pings
until nobody reads them.
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

REQUEST_ID: Final = "req_gateway_test_1"
MESSAGE_ID: Final = "msg_gateway_test_1"
SERVED_MODEL: Final = "claude-served-test-7"
START_USAGE: Final[dict[str, Any]] = {
    "input_tokens": 11, "output_tokens": 1, "cache_creation_input_tokens": 5,
    "cache_read_input_tokens": 7,
    "cache_creation": {"ephemeral_5m_input_tokens": 2, "ephemeral_1h_input_tokens": 3}}
FINAL_OUTPUT_TOKENS: Final = 42
OVERLOADED: Final = {"type": "error", "error": {"type": "overloaded_error",
                                                "message": "Overloaded (test)"}}
WAIT_S: Final = 10.0
"""How long a ``wait`` stream waits for the test's word before it gives up waiting."""


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


FIRST_EVENTS: Final = _event("message_start", {"type": "message_start", "message": {
    "id": MESSAGE_ID, "type": "message", "role": "assistant", "model": SERVED_MODEL,
    "content": [], "stop_reason": None, "usage": START_USAGE}})
LAST_EVENTS: Final = (
    _event("content_block_start", {"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}})
    + _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": "Hello."}})
    + _event("content_block_stop", {"type": "content_block_stop", "index": 0})
    + _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                               "usage": {"output_tokens": FINAL_OUTPUT_TOKENS}})
    + _event("message_stop", {"type": "message_stop"}))


@dataclass(frozen=True)
class Seen:
    """One request as the provider received it (header names lower-cased)."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]


class LoopbackProvider:
    """Serves on ``127.0.0.1`` until closed; ``mode`` may change between requests.

    Args:
        tls: A server context (trustme's certificate), or None for plain HTTP.
    """

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.mode = "stream"
        self.requests: list[Seen] = []
        self.release = threading.Event()
        self.body_begun = threading.Event()
        """Set once the provider has read the first bytes of a request's body."""
        self.waited_out = False
        self._tls = tls
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.provider = self  # type: ignore[attr-defined]
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = int(self._server.server_address[1])
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://{'localhost' if tls else '127.0.0.1'}:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (OSError, ssl.SSLError):
            self.close_connection = True

    def do_GET(self) -> None:
        self.do_POST()

    def do_POST(self) -> None:
        provider: LoopbackProvider = self.server.provider
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            body = self._chunked_body()
            if body is None:  # it broke off: no request was made
                self.close_connection = True
                return
        else:
            body = self._sized_body(provider, int(self.headers.get("content-length", "0")))
        provider.requests.append(Seen(self.command, self.path,
                                      [(k.lower(), v) for k, v in self.headers.items()], body))
        mode = provider.mode
        if mode == "overloaded":
            self._whole(529, json.dumps(OVERLOADED).encode(), "application/json",
                        [("retry-after", "7"), ("x-should-retry", "true")])
        elif mode == "unauthorized":
            self._whole(401, json.dumps({"type": "error", "error": {
                "type": "authentication_error", "message": "invalid token"}}).encode(),
                "application/json")
        elif mode == "echo":
            echoed = json.dumps(dict(self.headers.items())).encode()
            self._whole(200, echoed, "application/json",
                        [("x-echo", " ".join(self.headers.values()))])
        elif mode == "key-in-metadata":  # the key it got, back as every field a row keeps
            key = self.headers.get("x-api-key", "")
            message = {"id": key, "type": "message", "model": key, "stop_reason": key,
                       "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}
            self._whole(200, json.dumps(message).encode(), "application/json",
                        request_id=key)
        elif mode == "garbage-key":  # not HTTP: the key it got, as its status line
            self.wfile.write(b"BROKEN " + self.headers.get("x-api-key", "").encode()
                             + b"\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif mode == "json":
            message = {"id": MESSAGE_ID, "type": "message", "model": SERVED_MODEL,
                       "stop_reason": "max_tokens", "content": [],
                       "usage": {**START_USAGE, "output_tokens": FINAL_OUTPUT_TOKENS}}
            self._whole(200, json.dumps(message).encode(), "application/json")
        elif mode == "endless":  # pings until the reader stops taking them (or the word)
            self._endless(provider)
        else:
            self._stream(provider, wait=mode == "wait")

    def _sized_body(self, provider: LoopbackProvider, length: int) -> bytes:
        """A body of ``length`` bytes, read as it comes; `LoopbackProvider.body_begun` is set
        once its first bytes are in."""
        pieces: list[bytes] = []
        left = length
        while left > 0:
            piece = self.rfile.read1(min(left, 65536))
            if not piece:
                break
            pieces.append(piece)
            left -= len(piece)
            provider.body_begun.set()
        return b"".join(pieces)

    def _chunked_body(self) -> bytes | None:
        """A chunked body read whole, or None when the connection ended before its last
        chunk (as a provider, which acts on a whole request only)."""
        body = b""
        while True:
            line = self.rfile.readline(1024)
            if not line.endswith(b"\r\n"):
                return None
            size = int(line.split(b";")[0], 16)
            data = self.rfile.read(size + 2)
            if len(data) != size + 2:
                return None
            if size == 0:
                return body
            body += data[:size]

    def _whole(self, status: int, body: bytes, kind: str,
               extra: Sequence[tuple[str, str]] = (), request_id: str = REQUEST_ID) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("request-id", request_id)
        for name, value in extra:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, provider: LoopbackProvider, *, wait: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("request-id", REQUEST_ID)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._chunk(FIRST_EVENTS)
        if wait and not provider.release.wait(WAIT_S):
            provider.waited_out = True
        self._chunk(LAST_EVENTS)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _endless(self, provider: LoopbackProvider) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._chunk(FIRST_EVENTS)
        ping = _event("ping", {"type": "ping"}) * 256
        while not provider.release.is_set():
            self._chunk(ping)  # blocks once nobody reads; raises once the reader has gone
        self._chunk(LAST_EVENTS)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
