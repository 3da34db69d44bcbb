"""The census of one release: per line kind, what its lines carry, over every replayed stream.

A line's *kind* is its ``type``, and ``system/<subtype>`` for a ``system`` line (the init
line is ``system/init``). Per kind the census counts lines and lists the situations the
kind appeared in, and lists every top-level key with its JSON types, the lines that had it
and the situations it appeared in (``"all"`` when it appeared in every situation of its
kind). ``result`` lines list their subtypes too; ``assistant`` and ``user`` lines the keys of
their ``message`` object; the init line the string members of its list-valued keys (tools,
agents, skills, slash commands, capabilities: so tool churn is visible) and the keys of its
object-valued keys and of the objects in its lists (``memory_paths``, ``mcp_servers``).

Nothing of a value is kept but those members and keys: no session id, no timestamp, no
text. The JSON is written with sorted keys and lists, so the census of one release
replayed twice is byte for byte the same (`dump_census`), and a drift between releases is a
diff.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["ALL", "CENSUS_FORMAT", "INIT_KIND", "NOT_AN_OBJECT", "dump_census", "json_type",
           "line_kind", "take_census"]

CENSUS_FORMAT: Final = 1
INIT_KIND: Final = "system/init"
ALL: Final = "all"
"""A key's ``situations`` when it appeared in every situation its kind appeared in."""
NOT_AN_OBJECT: Final = "(not a JSON object)"
"""The kind of a stdout line that is not a JSON object (the recorder's anomaly, RC-07)."""
NO_TYPE: Final = "(no type)"
"""The kind of a JSON object without a string ``type``."""
MESSAGE_KINDS: Final = frozenset({"assistant", "user"})


def json_type(value: Any) -> str:
    """The JSON type of a decoded value: null, boolean, number, string, array or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def line_kind(obj: Mapping[str, Any]) -> str:
    """``type``, or ``system/<subtype>`` for a system line (``system/?`` without a string
    subtype); `NO_TYPE` for an object without a string ``type``."""
    kind = obj.get("type")
    if not isinstance(kind, str):
        return NO_TYPE
    if kind == "system":
        subtype = obj.get("subtype")
        return f"system/{subtype}" if isinstance(subtype, str) else "system/?"
    return kind


@dataclass
class _Keys:
    """Keys seen: per key its types, lines and situations."""

    types: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    lines: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    situations: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add(self, obj: Mapping[str, Any], situation: str) -> None:
        for key, value in obj.items():
            self.types[key].add(json_type(value))
            self.lines[key] += 1
            self.situations[key].add(situation)

    def out(self, every: set[str]) -> dict[str, Any]:
        return {key: {"types": sorted(self.types[key]), "lines": self.lines[key],
                      "situations": _situations(self.situations[key], every)}
                for key in sorted(self.types)}


@dataclass
class _Kind:
    lines: int = 0
    situations: set[str] = field(default_factory=set)
    keys: _Keys = field(default_factory=_Keys)
    message_keys: _Keys = field(default_factory=_Keys)
    subtypes: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    subtype_lines: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    members: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set)))
    object_keys: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set)))

    def add(self, kind: str, obj: Mapping[str, Any], situation: str) -> None:
        self.lines += 1
        self.situations.add(situation)
        self.keys.add(obj, situation)
        if kind == "result":
            subtype = obj.get("subtype")
            name = subtype if isinstance(subtype, str) else f"({json_type(subtype)})"
            self.subtypes[name].add(situation)
            self.subtype_lines[name] += 1
        if kind in MESSAGE_KINDS and isinstance(message := obj.get("message"), dict):
            self.message_keys.add(message, situation)
        if kind == INIT_KIND:
            for key, value in obj.items():
                self._init_value(key, value, situation)

    def _init_value(self, key: str, value: Any, situation: str) -> None:
        if isinstance(value, dict):
            for sub in value:
                self.object_keys[key][sub].add(situation)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str):
                    self.members[key][item].add(situation)
                elif isinstance(item, dict):
                    for sub in item:
                        self.object_keys[key][sub].add(situation)

    def out(self, kind: str) -> dict[str, Any]:
        every = self.situations
        entry: dict[str, Any] = {"lines": self.lines, "situations": sorted(every),
                                 "keys": self.keys.out(every)}
        if kind == "result":
            entry["subtypes"] = {name: {"lines": self.subtype_lines[name],
                                        "situations": _situations(seen, every)}
                                 for name, seen in sorted(self.subtypes.items())}
        if kind in MESSAGE_KINDS:
            entry["message_keys"] = self.message_keys.out(every)
        if kind == INIT_KIND:
            entry["members"] = _nested(self.members, every)
            entry["object_keys"] = _nested(self.object_keys, every)
        return entry


def _situations(seen: set[str], every: set[str]) -> str | list[str]:
    return ALL if seen == every else sorted(seen)


def _nested(table: Mapping[str, Mapping[str, set[str]]], every: set[str]) -> dict[str, Any]:
    return {key: {member: _situations(seen, every) for member, seen in sorted(values.items())}
            for key, values in sorted(table.items())}


def take_census(release: str, streams: Iterable[tuple[str, bytes]]) -> dict[str, Any]:
    """The census of ``release`` over ``streams``: (situation name, its stdout bytes) each.

    A stdout line is one ``\\n``-terminated piece (a last piece without its newline counts
    too); an empty line is skipped; a line that is not a JSON object is counted under
    `NOT_AN_OBJECT`. Returns the census as plain JSON values (module docstring).
    """
    kinds: dict[str, _Kind] = defaultdict(_Kind)
    names: list[str] = []
    odd: dict[str, set[str]] = defaultdict(set)
    odd_lines = 0
    for name, stdout in streams:
        names.append(name)
        for raw in stdout.split(b"\n"):
            if not raw.strip():
                continue
            obj = _parse(raw)
            if obj is None:
                odd[NOT_AN_OBJECT].add(name)
                odd_lines += 1
                continue
            kind = line_kind(obj)
            kinds[kind].add(kind, obj, name)
    census: dict[str, Any] = {"format": CENSUS_FORMAT, "release": release,
                              "situations": sorted(names),
                              "kinds": {kind: entry.out(kind)
                                        for kind, entry in sorted(kinds.items())}}
    if odd_lines:
        census["kinds"][NOT_AN_OBJECT] = {"lines": odd_lines,
                                          "situations": sorted(odd[NOT_AN_OBJECT]), "keys": {}}
    return census


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def dump_census(census: Mapping[str, Any]) -> str:
    """The census as the committed file holds it: sorted keys, one-space indent, a newline."""
    return json.dumps(census, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
