"""What the gateway reads of a request body as it streams past: its system prompt and model.

The body is forwarded to the provider chunk by chunk as it arrives, never held whole; each
chunk is also fed to a `BodyScan`, an incremental JSON parser (ijson over yajl) that keeps
only the top-level ``system`` value (for `sandbox.gateway._digest.system_digest`) and the
top-level ``model`` string. Everything else in the body (the messages, the tools) is parsed
and dropped as it goes.

Bounds, so that what a session sends can never grow the runner past them:

* the ``system`` value is kept while its texts stay under `MAX_SYSTEM_CHARS` (the pinned
  CLI's is about 7,000 characters); a larger one is dropped and the request has no digest;
* the parser holds at most `MAX_PENDING_BYTES` of a value it has not finished reading (one
  long string): past that, the scan stops, the rest of the body is forwarded unread and the
  request has no digest (a ``model`` read before stays);
* a body that is not one JSON object ends the scan the same way, with no model either (the
  provider answers it).

A top-level key that appears twice counts as its last value, as Python's ``json`` reads it.
"""

from __future__ import annotations

from typing import Any, Final

import ijson
from ijson.common import ObjectBuilder

from ._digest import system_digest
from ._sse import bounded

__all__ = ["MAX_PENDING_BYTES", "MAX_SYSTEM_CHARS", "BodyScan"]

MAX_SYSTEM_CHARS: Final = 1024 * 1024
"""Characters of text the kept ``system`` value may hold; past it the request has no digest."""
MAX_PENDING_BYTES: Final = 1024 * 1024
"""Bytes fed without the parser finishing one event (a string that long), after which the
scan stops: the parser would otherwise hold the whole string, up to the body's bound. The
pinned CLI's longest strings are a tool's result or a file it writes, each capped far below
(a Read returns at most about 256 KiB, a reply at most its output tokens)."""


class BodyScan:
    """Reads a request body's top-level ``system`` and ``model`` as its chunks pass.

    Feed every chunk in order (`feed`), then call `end` once the body is whole. A body
    that breaks off needs no `end`: nothing is kept beyond the object.
    """

    def __init__(self) -> None:
        self._events = ijson.sendable_list()
        self._parser: Any = ijson.basic_parse_coro(self._events)
        self._depth = 0
        self._key: str | None = None
        self._builder: ObjectBuilder | None = None
        self._builder_depth = 0
        self._system_chars = 0
        self._system: object = None
        self._has_system = False
        self._model: str | None = None
        self._pending = 0
        self._stopped = False
        self.whole = False
        """Whether `end` was called: the body arrived whole (its reading may have stopped)."""

    def feed(self, chunk: bytes) -> None:
        """Read ``chunk``, the body's next bytes (never raises: a bad body stops the scan)."""
        if self._stopped:
            return
        try:
            self._parser.send(chunk)
        except ijson.JSONError:
            self._stop()
            self._model = None  # not JSON: nothing it said is read
            return
        if not self._events:
            self._pending += len(chunk)
            if self._pending > MAX_PENDING_BYTES:
                self._stop()
            return
        self._pending = 0
        for event, value in self._events:
            self._event(event, value)
        del self._events[:]

    def end(self) -> None:
        """The body is whole: finish reading it (a truncated or trailing-garbage body stops
        the scan, leaving no digest)."""
        self.whole = True
        if self._stopped:
            return
        try:
            self._parser.close()
        except ijson.JSONError:
            self._stop()
            self._model = None  # not JSON: nothing it said is read
            return
        for event, value in self._events:
            self._event(event, value)
        del self._events[:]
        self._stopped = True

    @property
    def digest(self) -> str | None:
        """``sha256:<hex>`` of the system prompt (`system_digest`), None when the body had
        none, was not one JSON object, did not arrive whole, or passed a bound of the module
        docstring's."""
        if not self.whole or not self._has_system or self._system is None:
            return None
        return system_digest({"system": self._system})

    @property
    def model(self) -> str | None:
        """The top-level ``model``, cut to the row's bound (`bounded`); None when absent, not
        a string, or the body did not arrive whole."""
        return self._model if self.whole else None

    def _stop(self) -> None:
        self._stopped = True
        self._has_system = False
        self._system = None
        self._builder = None
        self._parser = None
        del self._events[:]

    def _event(self, event: str, value: Any) -> None:
        if self._depth == 0 and event != "start_map":
            self._stop()  # not one JSON object: nothing to read
            self._model = None
            return
        if self._builder is not None:
            self._build(event, value)
            return
        if self._depth == 1 and event != "map_key" and event != "end_map":
            key, self._key = self._key, None  # the first event of a top-level value
            if key == "system":
                self._has_system = True
                self._system = None
                self._system_chars = 0
                self._builder = ObjectBuilder()
                self._build(event, value)
                return
            if key == "model":
                self._model = bounded(value) if event == "string" else None
        self._track(event)
        if self._depth == 1 and event == "map_key":
            self._key = value

    def _track(self, event: str) -> None:
        if event in ("start_map", "start_array"):
            self._depth += 1
        elif event in ("end_map", "end_array"):
            self._depth -= 1

    def _build(self, event: str, value: Any) -> None:
        """One event of the top-level ``system`` value; the value is kept once whole."""
        builder = self._builder
        assert builder is not None
        if isinstance(value, str):
            self._system_chars += len(value)
        builder.event(event, value)
        self._track(event)
        if self._system_chars > MAX_SYSTEM_CHARS:
            self._builder = None
            self._has_system = False  # too large: the request has no digest
        elif self._depth == 1:
            self._system = builder.value
            self._builder = None
