"""The census printed: per line kind its keys and subtypes, the drift against the pinned
release's census, and what the recorder does with each key (a rich table per kind)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from ._census import ALL, INIT_KIND
from ._diff import KindDiff, diff_census
from ._reads import NOT_DECIDED, RecorderKeys

__all__ = ["print_census", "situations_of"]

_MARK = {"new": "[bold green]NEW[/]", "gone": "[bold red]GONE[/]", "both": ""}


def situations_of(entry: Mapping[str, Any], every: int) -> str:
    """A key's situations as ``n/N`` (``all`` is ``N/N``)."""
    seen = entry.get("situations", [])
    return f"{every}/{every}" if seen == ALL else f"{len(seen)}/{every}"


def _key_rows(kind: str, entry: Mapping[str, Any], old: Mapping[str, Any] | None,
              diff: KindDiff, reads: RecorderKeys, part: str) -> list[tuple[str, ...]]:
    every = len(entry.get("situations", []))
    keys: Mapping[str, Any] = entry.get(part, {})
    new = set(diff.new_keys if part == "keys" else diff.new_message_keys)
    gone = diff.gone_keys if part == "keys" else diff.gone_message_keys
    rows: list[tuple[str, ...]] = []
    for key, seen in keys.items():
        mark = _MARK["new"] if key in new or diff.presence == "new" else ""
        reading = reads.reading(kind, key) if part == "keys" else ""
        rows.append((key, ", ".join(seen.get("types", [])), situations_of(seen, every), mark,
                     f"[bold yellow]{reading}[/]" if reading == NOT_DECIDED else reading))
    old_keys: Mapping[str, Any] = (old or {}).get(part, {})
    for key in gone:
        types = ", ".join(old_keys.get(key, {}).get("types", []))
        rows.append((key, types, "-", _MARK["gone"],
                     reads.reading(kind, key) if part == "keys" else ""))
    return rows


def _table(kind: str, entry: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
           diff: KindDiff, reads: RecorderKeys) -> Table:
    shown = entry if entry is not None else old or {}
    lines, every = shown.get("lines", 0), len(shown.get("situations", []))
    title = f"{kind}  {_MARK[diff.presence]}  ({lines} lines, {every} situations)"
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in ("key", "types", "situations", "vs pin", "recorder"):
        table.add_column(column)
    if entry is not None:
        for row in _key_rows(kind, entry, old, diff, reads, "keys"):
            table.add_row(*row)
        if "message_keys" in entry:
            for row in _key_rows(kind, entry, old, diff, reads, "message_keys"):
                table.add_row(f"message.{row[0]}", *row[1:])
    return table


def _extras(kind: str, entry: Mapping[str, Any] | None, diff: KindDiff) -> list[str]:
    """The lines under a kind's table: subtypes, init members and object keys, new and gone."""
    out: list[str] = []
    if entry is not None and "subtypes" in entry:
        every = len(entry.get("situations", []))
        names = [f"{name} ({situations_of(seen, every)})"
                 + (" NEW" if name in diff.new_subtypes else "")
                 for name, seen in entry["subtypes"].items()]
        out.append("  subtypes: " + ", ".join(names)
                   + (f"; GONE: {', '.join(diff.gone_subtypes)}" if diff.gone_subtypes else ""))
    if kind == INIT_KIND and entry is not None:
        for key, members in entry.get("members", {}).items():
            plus, minus = diff.new_members.get(key, ()), diff.gone_members.get(key, ())
            line = f"  {key}: {len(members)} members"
            if plus:
                line += f"; NEW: {', '.join(plus)}"
            if minus:
                line += f"; GONE: {', '.join(minus)}"
            out.append(line)
        for key, subs in entry.get("object_keys", {}).items():
            plus, minus = diff.new_object_keys.get(key, ()), diff.gone_object_keys.get(key, ())
            line = f"  {key} keys: {', '.join(subs)}"
            if plus:
                line += f"; NEW: {', '.join(plus)}"
            if minus:
                line += f"; GONE: {', '.join(minus)}"
            out.append(line)
        for key, minus in diff.gone_members.items():
            if key not in entry.get("members", {}):
                out.append(f"  {key}: GONE members: {', '.join(minus)}")
    return out


def print_census(console: Console, census: Mapping[str, Any], baseline: Mapping[str, Any] | None,
                 reads: RecorderKeys, *, header: Sequence[str] = ()) -> list[KindDiff]:
    """Print ``census`` kind by kind against ``baseline`` (the pinned release's census, or
    None when there is none yet) and return the drift."""
    for line in header:
        console.print(line, highlight=False)
    diffs = diff_census(baseline or {"kinds": {}}, census) if baseline is not None else \
        [KindDiff(kind, "both") for kind in sorted(census.get("kinds", {}))]
    new_kinds = [d.kind for d in diffs if d.presence == "new"]
    gone_kinds = [d.kind for d in diffs if d.presence == "gone"]
    if baseline is not None:
        console.print(f"kinds NEW against {baseline.get('release')}: "
                      f"{', '.join(new_kinds) or 'none'}; GONE: {', '.join(gone_kinds) or 'none'}",
                      highlight=False)
    kinds: Mapping[str, Any] = census.get("kinds", {})
    old_kinds: Mapping[str, Any] = (baseline or {}).get("kinds", {})
    for diff in diffs:
        entry, old = kinds.get(diff.kind), old_kinds.get(diff.kind)
        console.print(_table(diff.kind, entry, old, diff, reads))
        for line in _extras(diff.kind, entry, diff):
            console.print(line, highlight=False, markup=False)
    return diffs
