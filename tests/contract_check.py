"""An independent contract check of a transcript file, written from RC-14..RC-16 alone.

It shares no code with ``recorder``: a defect in the writer and the same
defect in its own reader cannot hide each other here. Returns a list of
violations (empty = clean).
"""

from __future__ import annotations

import io
import re
from typing import Any

from ruamel.yaml import YAML

IDENTITY_KEYS = {
    "model", "served_version", "tree", "lock", "selection", "read_set", "seed", "harness",
    "tier", "arm", "at", "cost_cents",
}
EVENT_KEYS = {"probe", "session", "calls", "produced", "answer"}
CALL_KEYS = {"tool", "argument", "result"}
PRODUCED_KEYS = {"path", "result", "cites", "findings"}
DIGEST = re.compile(r"\Asha256:[0-9a-f]{64}\Z")
STATES = {
    "recorded", "refused-init", "refused-seal", "refused-confinement", "env-fault",
    "harness-error", "no-result", "truncated", "timed-out", "killed", "line-too-long", "damaged",
    "budget-stopped", "limit-exceeded", "uncontained",
}
FENCE = re.compile(r"^```yaml\n(.*?)^```$", re.S | re.M)


def _section(text: str, heading: str, following: str | None) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.index(f"\n{following}\n") if following else len(text)
    return text[start + len(heading) + 2 : end]


def parse(text: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[list[str]]]:
    """Split a transcript into identity, events and Sessions rows (raises on bad layout)."""
    for h in ("## Run identity", "## Events", "## Sessions"):
        assert text.count(f"\n{h}\n") == 1, f"heading {h!r} must appear exactly once"
    # Headings are lines: the text "## Events" inside a line (a quoted value) is not one.
    at = [text.index(f"\n{h}\n") for h in ("## Run identity", "## Events", "## Sessions")]
    assert at == sorted(at), "headings out of order"
    yaml = YAML(typ="safe", pure=True)
    blocks = []
    for heading, nxt in (("## Run identity", "## Events"), ("## Events", "## Sessions")):
        found = FENCE.findall(_section(text, heading, nxt))
        assert len(found) == 1, f"{heading}: exactly one yaml block, found {len(found)}"
        blocks.append(yaml.load(io.StringIO(found[0])))
    table = [ln for ln in _section(text, "## Sessions", None).splitlines() if ln.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header == ["probe", "session", "state", "outside paths"], header
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in table[2:]]
    return blocks[0], blocks[1], rows


def violations(text: str) -> list[str]:
    """Every way ``text`` breaks RC-14..RC-16; [] when clean."""
    out: list[str] = []
    try:
        identity, events, rows = parse(text)
    except (AssertionError, ValueError, IndexError) as exc:
        return [f"layout: {exc}"]
    if not isinstance(identity, dict) or set(identity) != IDENTITY_KEYS:
        out.append(f"identity keys: {sorted(identity) if isinstance(identity, dict) else identity}")
    else:
        if type(identity["cost_cents"]) is not int:
            out.append(f"cost_cents not a whole number: {identity['cost_cents']!r}")
        for k in ("tree", "lock", "selection", "read_set"):
            if not DIGEST.match(str(identity[k])):
                out.append(f"identity {k} not a digest")
    if not isinstance(events, list):
        return [*out, "events block is not a sequence"]
    seen: set[tuple[str, str]] = set()
    for ev in events:
        if set(ev) - EVENT_KEYS or not {"probe", "session"} <= set(ev):
            out.append(f"event keys {sorted(ev)}")
        key = (str(ev.get("probe")), str(ev.get("session")))
        if key in seen:
            out.append(f"duplicate session {key}")
        seen.add(key)
        for call in ev.get("calls") or []:
            if set(call) - CALL_KEYS or not {"tool", "argument"} <= set(call):
                out.append(f"call keys {sorted(call)}")
            if "result" in call and not DIGEST.match(str(call["result"])):
                out.append(f"call result not a digest: {call['result']!r}")
        for art in ev.get("produced") or []:
            if set(art) - PRODUCED_KEYS or "path" not in art:
                out.append(f"produced keys {sorted(art)}")
            if "result" in art and not DIGEST.match(str(art["result"])):
                out.append(f"produced result not a digest: {art['result']!r}")
    for row in rows:
        if len(row) != 4 or row[2] not in STATES or not row[3].isdigit():
            out.append(f"sessions row {row}")
    return out
