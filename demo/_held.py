"""What the scripted provider keeps between requests, each table bounded (docs/provider.md).

The provider runs inside the runner's process for the whole batch, and every
key and value it keeps comes from what a session sent: a tool_result's text,
a tool_use id, the ``X-Claude-Code-Session-Id`` header, the first words of a
task. Kept without bound, 24 requests of 60 MiB took the root runner from
58 MB to 1.57 GB, held until the batch ended. So:

* `ToolResults`: per tool_use id, ``(is_error, text)`` with the text cut to its
  first `TOOL_RESULT_TEXT_CHARS` characters (what a test reads of it: its error
  flag and a phrase near its start), the bytes held counted with
  ``sys.getsizeof`` plus `ENTRY_OVERHEAD_BYTES` per entry, at most
  `TOOL_RESULTS_SESSION_BYTES` per session and `TOOL_RESULTS_BYTES` in all; past
  either, the least recently sent entries go first.
* `BoundedCounts`: counts per key, at most ``max_keys`` keys; a later key is
  counted under one ``overflow`` key (the misses: why a request got no script).
* `BoundedMap`: a mapping of at most ``max_keys`` entries, the oldest dropped
  first (the fault counters per session, script and turn).

`cut_key` cuts a key a session chose (an id, a session header) to `KEY_CHARS`.
Thread-safety is the caller's (the provider holds its lock around each call).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any, Final, Generic, TypeVar

__all__ = [
    "ENTRY_OVERHEAD_BYTES",
    "KEY_CHARS",
    "TOOL_RESULTS_BYTES",
    "TOOL_RESULTS_SESSION_BYTES",
    "TOOL_RESULT_TEXT_CHARS",
    "BoundedCounts",
    "BoundedMap",
    "ToolResults",
    "cut_key",
    "tool_result_text",
]

TOOL_RESULT_TEXT_CHARS: Final = 4096
"""Characters of a tool_result's text kept: the tests read its error flag and whether a
phrase occurs near its start (``does not exist``), or does not occur (a host file's lines)."""
TOOL_RESULTS_SESSION_BYTES: Final = 2 * 1024 * 1024
"""Most bytes the tool_results of one session (one ``X-Claude-Code-Session-Id``) hold:
hundreds of cut texts, far more calls than a scripted session makes."""
TOOL_RESULTS_BYTES: Final = 16 * 1024 * 1024
"""Most bytes all tool_results hold together, whatever the number of sessions."""
ENTRY_OVERHEAD_BYTES: Final = 256
"""Bytes counted per kept tool_result besides its id and text strings: its tuple, its slots
in the table and in its session's index (measured with tracemalloc: 236 on CPython 3.11)."""
KEY_CHARS: Final = 128
"""Characters kept of a key a session chose (a tool_use id is about 30, a session id 36)."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def cut_key(value: str) -> str:
    """``value`` cut to its first `KEY_CHARS` characters (a key the provider keeps)."""
    return value[:KEY_CHARS]


def tool_result_text(content: object) -> str:
    """A tool_result's text: its string content, or its text blocks joined by ``\\n``, cut to
    `TOOL_RESULT_TEXT_CHARS` without joining more than that (a 60 MiB text is not copied)."""
    if isinstance(content, str):
        return content[:TOOL_RESULT_TEXT_CHARS]
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    size = 0
    for block in content:
        if not isinstance(block, Mapping):
            continue
        text = block.get("text", "")
        piece = text[: TOOL_RESULT_TEXT_CHARS - size] if isinstance(text, str) else ""
        if parts:
            parts.append("\n")
            size += 1
        parts.append(piece)
        size += len(piece)
        if size >= TOOL_RESULT_TEXT_CHARS:
            break
    return "".join(parts)[:TOOL_RESULT_TEXT_CHARS]


class ToolResults:
    """Per tool_use id, what the client sent back, bounded in bytes (module doc).

    Args:
        session_bytes: Most bytes one session's entries hold (`TOOL_RESULTS_SESSION_BYTES`).
        total_bytes: Most bytes all entries hold (`TOOL_RESULTS_BYTES`).

    Raises:
        ValueError: a bound below one entry's overhead.
    """

    def __init__(self, *, session_bytes: int = TOOL_RESULTS_SESSION_BYTES,
                 total_bytes: int = TOOL_RESULTS_BYTES) -> None:
        if min(session_bytes, total_bytes) < ENTRY_OVERHEAD_BYTES:
            raise ValueError(f"bounds must be at least {ENTRY_OVERHEAD_BYTES} bytes")
        self._session_bytes = session_bytes
        self._total_bytes = total_bytes
        self._entries: OrderedDict[str, tuple[bool, str, str, int]] = OrderedDict()
        self._sessions: dict[str, OrderedDict[str, None]] = {}
        self._held_by: dict[str, int] = {}
        self.held_bytes = 0
        """Bytes the entries hold now, as counted (ids, texts, `ENTRY_OVERHEAD_BYTES` each)."""

    def note(self, tool_use_id: str, *, is_error: bool, text: str, session: str) -> None:
        """Keep one tool_result (id and session cut by `cut_key`, text by `tool_result_text`
        already), replacing the id's earlier one; then drop the least recently sent entries
        of the session, and of all, while either is past its bound."""
        key, owner = cut_key(tool_use_id), cut_key(session)
        text = text[:TOOL_RESULT_TEXT_CHARS]
        self._drop(key)
        cost = sys.getsizeof(key) + sys.getsizeof(text) + ENTRY_OVERHEAD_BYTES
        self._entries[key] = (is_error, text, owner, cost)
        self._sessions.setdefault(owner, OrderedDict())[key] = None
        self._held_by[owner] = self._held_by.get(owner, 0) + cost
        self.held_bytes += cost
        while self._held_by.get(owner, 0) > self._session_bytes:
            self._drop(next(iter(self._sessions[owner])))
        while self.held_bytes > self._total_bytes:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        owner, cost = entry[2], entry[3]
        index = self._sessions[owner]
        del index[key]
        self._held_by[owner] -= cost
        self.held_bytes -= cost
        if not index:
            del self._sessions[owner], self._held_by[owner]

    def snapshot(self) -> dict[str, tuple[bool, str]]:
        """Every kept entry: ``{id: (is_error, text)}`` (a copy)."""
        return {key: (entry[0], entry[1]) for key, entry in self._entries.items()}

    def __len__(self) -> int:
        return len(self._entries)


class BoundedCounts(Generic[K]):
    """Counts per key, at most ``max_keys`` keys; any later key counts under ``overflow``.

    Raises:
        ValueError: ``max_keys`` below 1.
    """

    def __init__(self, max_keys: int, overflow: K) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self._max_keys = max_keys
        self._overflow = overflow
        self._counts: dict[K, int] = {}

    def add(self, key: K) -> None:
        """Count ``key`` once (under ``overflow`` when it is new and the keys are full)."""
        if key not in self._counts and len(self._counts) >= self._max_keys:
            key = self._overflow
        self._counts[key] = self._counts.get(key, 0) + 1

    def snapshot(self) -> dict[K, int]:
        """The counts (a copy)."""
        return dict(self._counts)


class BoundedMap(Generic[K, V]):
    """A mapping of at most ``max_keys`` entries; setting a new key past it drops the oldest.

    Raises:
        ValueError: ``max_keys`` below 1.
    """

    def __init__(self, max_keys: int, items: Iterable[tuple[K, V]] = ()) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self._max_keys = max_keys
        self._items: OrderedDict[K, V] = OrderedDict()
        for key, value in items:
            self[key] = value

    def get(self, key: K, default: V) -> V:
        """The value of ``key``, or ``default``."""
        return self._items.get(key, default)

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value
        while len(self._items) > self._max_keys:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def tool_results_of(body: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """Each tool_result of a request body's user messages: ``(tool_use_id, text, is_error)``,
    its text as `tool_result_text` gives it. An id that is not a string (the CLI never sends
    one) is its ``str`` when a number or null, else ``""``."""
    for message in body.get("messages") or ():
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                tool_use_id = block.get("tool_use_id")
                if not isinstance(tool_use_id, str):
                    tool_use_id = str(tool_use_id) if tool_use_id is None or isinstance(
                        tool_use_id, int | float) else ""
                yield (tool_use_id, tool_result_text(block.get("content")),
                       bool(block.get("is_error", False)))
