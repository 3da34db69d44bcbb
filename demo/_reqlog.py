"""The scripted provider's request log: what the sessions sent, one JSON line per request.

A test instrument (docs/provider.md): a test that must know what a session
told the model (its system prompt, its tools, its messages) turns it on with
``ScriptedProvider(..., request_log=FILE)``, or from the command line with
`REQUEST_LOG_ENV`. Only the scripted provider has one, so the requests of a
run against a real provider are never written anywhere.

Each line is ``{"path": ..., "session": ..., "body": {...}}``: the request's
path, its ``X-Claude-Code-Session-Id`` header (``""`` when absent) and its
body as parsed JSON. A line whose body was not kept has ``"body": null`` and
``"dropped"``, which says why in words. Bounded: nothing is held beyond the
line being written, a body's line over `REQUEST_LOG_BODY_BYTES` is dropped (a body
whose strings alone pass it is dropped before it is encoded, so a 32 MiB body of
control characters never becomes a 192 MiB line in memory: `json_floor`),
and the file never grows past `REQUEST_LOG_BYTES` but by the two short lines
that say the log is full and how many requests it then dropped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pathlib import Path

REQUEST_LOG_ENV: Final = "HEADWATER_SCRIPTED_REQUEST_LOG"
"""The variable that turns the request log on from the command line (a file path); read only
where the CLI starts the scripted provider, never for a real provider (docs/provider.md)."""
REQUEST_LOG_BODY_BYTES: Final = 4 * 1024 * 1024
"""The largest request line the log keeps, in bytes (the body as compact JSON, with its path
and session): a request of a short real session is tens to hundreds of KiB, so one past this
is a session's deliberate bulk, logged as a line that says it was dropped and how large."""
REQUEST_LOG_BYTES: Final = 64 * 1024 * 1024
"""The most the log's request lines take, in bytes, counted from the file's size when opened
(so an appended-to log is bounded as a whole): thousands of requests of short sessions."""


def json_floor(value: object, limit: int) -> int:
    """A lower bound on the characters of ``value`` as JSON, walked without encoding it and
    stopped once it passes ``limit`` (its strings' and keys' lengths, one per other item)."""
    total = 0
    stack: list[object] = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                total += len(key) + 3 if isinstance(key, str) else 1
                stack.append(inner)
        elif isinstance(item, list | tuple):
            total += 1 + len(item)
            stack.extend(item)
        else:
            total += 1
    return total


def _line(record: Mapping[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class RequestLog:
    """Appends requests to a file, bounded (module doc). Thread-safe.

    Args:
        path: The file; created when missing, appended to when present.
        max_body_bytes: Largest request line kept, in bytes (`REQUEST_LOG_BODY_BYTES`).
        max_bytes: Most the request lines may take, in bytes, the file's size when opened
            included (`REQUEST_LOG_BYTES`).

    Raises:
        OSError: ``path`` cannot be opened for appending.
    """

    def __init__(self, path: Path, *, max_body_bytes: int = REQUEST_LOG_BODY_BYTES,
                 max_bytes: int = REQUEST_LOG_BYTES) -> None:
        self._path = path
        self._max_body_bytes = max_body_bytes
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._file = path.open("ab")
        self._size = self._file.tell()
        self._dropped = 0

    @property
    def dropped(self) -> int:
        """Requests not logged because the log was full."""
        with self._lock:
            return self._dropped

    def append(self, path: str, session: str, body: Mapping[str, Any] | None, *,
               dropped: str | None = None) -> None:
        """Write one request's line (``body`` None: a line with ``dropped``, the reason).

        After `close` this does nothing: a request still in flight when the provider
        stopped is not logged.

        Raises:
            OSError: the write failed (the line may be partly written).
        """
        if body is not None and json_floor(body, self._max_body_bytes) > self._max_body_bytes:
            dropped = (f"request of more than {self._max_body_bytes} bytes as JSON, over the "
                       f"{self._max_body_bytes} kept per request")
            line = b""
        else:
            line = _line({"path": path, "session": session, "body": body})
        if body is not None and dropped is None and len(line) > self._max_body_bytes:
            dropped = (f"request of {len(line)} bytes as JSON, over the "
                       f"{self._max_body_bytes} kept per request")
        if body is None or dropped is not None:
            line = _line({"path": path, "session": session, "body": None,
                          "dropped": dropped or "no body"})
        with self._lock:
            if self._file.closed:
                return
            if self._size + len(line) > self._max_bytes:
                if not self._dropped:
                    self._file.write(_line({"dropped": (
                        f"the log reached its bound of {self._max_bytes} bytes: this request "
                        "and every later one are not logged (their count follows on stop)")}))
                    self._file.flush()
                self._dropped += 1
                return
            self._file.write(line)
            self._file.flush()
            self._size += len(line)

    def close(self) -> None:
        """Write the count of requests dropped for the bound, if any, and close. Idempotent."""
        with self._lock:
            if self._file.closed:
                return
            if self._dropped:
                self._file.write(_line({"dropped_requests": self._dropped}))
            self._file.close()

    def __repr__(self) -> str:
        return f"<RequestLog {self._path} bytes={self._size} dropped={self._dropped}>"
