"""What is new and what is gone between two censuses, kind by kind (docs/census.md).

Compared: the kinds, and per kind present in both its top-level keys, its subtypes (result
lines), its ``message`` keys (assistant and user lines) and, for the init line, the members
of its list-valued keys and the keys of its object-valued ones. Counts and situations are
not compared: a key seen in fewer situations is no drift, a key never seen is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["KindDiff", "Presence", "diff_census"]

Presence = Literal["both", "new", "gone"]
"""A kind in both censuses, only in the new one, or only in the old one."""


@dataclass(frozen=True, slots=True)
class KindDiff:
    """One kind's drift; every list sorted. A new or gone kind lists no keys of its own."""

    kind: str
    presence: Presence
    new_keys: tuple[str, ...] = ()
    gone_keys: tuple[str, ...] = ()
    new_subtypes: tuple[str, ...] = ()
    gone_subtypes: tuple[str, ...] = ()
    new_message_keys: tuple[str, ...] = ()
    gone_message_keys: tuple[str, ...] = ()
    new_members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per list-valued init key, the members the new census has and the old one lacks."""
    gone_members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    new_object_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    gone_object_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def drifted(self) -> bool:
        """Anything new or gone in this kind."""
        return self.presence != "both" or any((
            self.new_keys, self.gone_keys, self.new_subtypes, self.gone_subtypes,
            self.new_message_keys, self.gone_message_keys, self.new_members,
            self.gone_members, self.new_object_keys, self.gone_object_keys))


def _names(entry: Mapping[str, Any], part: str) -> set[str]:
    value = entry.get(part)
    return set(value) if isinstance(value, Mapping) else set()


def _split(old: set[str], new: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(sorted(new - old)), tuple(sorted(old - new))


def _nested(old: Mapping[str, Any], new: Mapping[str, Any], part: str) -> tuple[
        dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    olds, news = old.get(part) or {}, new.get(part) or {}
    added: dict[str, tuple[str, ...]] = {}
    gone: dict[str, tuple[str, ...]] = {}
    for key in sorted(set(olds) | set(news)):
        plus, minus = _split(set(olds.get(key) or {}), set(news.get(key) or {}))
        if plus:
            added[key] = plus
        if minus:
            gone[key] = minus
    return added, gone


def diff_census(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[KindDiff]:
    """Each kind of either census, sorted by name, with what ``new`` adds to ``old`` and
    what it lacks (`KindDiff`). Both are censuses as `census.take_census` makes them."""
    old_kinds: Mapping[str, Any] = old.get("kinds", {})
    new_kinds: Mapping[str, Any] = new.get("kinds", {})
    out: list[KindDiff] = []
    for kind in sorted(set(old_kinds) | set(new_kinds)):
        if kind not in old_kinds:
            out.append(KindDiff(kind, "new"))
            continue
        if kind not in new_kinds:
            out.append(KindDiff(kind, "gone"))
            continue
        before, after = old_kinds[kind], new_kinds[kind]
        new_keys, gone_keys = _split(_names(before, "keys"), _names(after, "keys"))
        new_sub, gone_sub = _split(_names(before, "subtypes"), _names(after, "subtypes"))
        new_msg, gone_msg = _split(_names(before, "message_keys"),
                                   _names(after, "message_keys"))
        new_members, gone_members = _nested(before, after, "members")
        new_obj, gone_obj = _nested(before, after, "object_keys")
        out.append(KindDiff(kind, "both", new_keys, gone_keys, new_sub, gone_sub, new_msg,
                            gone_msg, new_members, gone_members, new_obj, gone_obj))
    return out
