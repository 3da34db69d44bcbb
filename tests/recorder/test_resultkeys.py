"""Every result-line key decided (`recorder.RESULT_KEYS`), and docs/recorder.md's copy of it."""

from __future__ import annotations

import json
from pathlib import Path

from recorder import RESULT_KEYS, result_keys_markdown
from recorder._harness import OBSERVED_KEYS

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def committed_result_keys() -> dict[tuple[str, str], str]:
    """(release, key) -> a file that shows it, over every committed stream's result lines;
    the release is the stream's first init line's ``claude_code_version``."""
    seen: dict[tuple[str, str], str] = {}
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        release = "?"
        for raw in path.read_bytes().splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue  # an anomaly line of a bug input
            if not isinstance(obj, dict):
                continue
            if obj.get("subtype") == "init" and release == "?":
                release = str(obj.get("claude_code_version"))
            if obj.get("type") == "result":
                for key in obj:
                    seen.setdefault((release, key), path.relative_to(ROOT).as_posix())
    return seen


def test_every_key_of_a_committed_result_line_is_decided() -> None:
    decided = {k.key for k in RESULT_KEYS}
    undecided = {key: where for (_, key), where in committed_result_keys().items()
                 if key not in decided}
    assert not undecided, f"result keys no decision covers: {undecided}"


def test_seen_on_names_each_release_whose_streams_print_the_key() -> None:
    """For the releases the table speaks of, "seen on" is exactly what the streams show."""
    releases = {release for k in RESULT_KEYS for release in k.seen_on}
    seen = committed_result_keys()
    for k in RESULT_KEYS:
        shown = tuple(sorted(r for r in releases if (r, k.key) in seen))
        assert k.seen_on == shown, k.key
    assert releases == {"2.1.197", "2.1.332"}


def test_the_keys_read_are_the_keys_the_transform_takes() -> None:
    """A result key the transform decodes (`OBSERVED_KEYS`) is ``read``, and no other is:
    a key read without a decision, or decided read and never decoded, fails here."""
    for k in RESULT_KEYS:
        assert (k.decision == "read") == (k.key in OBSERVED_KEYS), k.key


def test_the_usage_keys_are_decided_and_none_twice() -> None:
    by_key = {k.key: k for k in RESULT_KEYS}
    assert len(by_key) == len(RESULT_KEYS)
    assert by_key["total_cost_usd"].decision == "read"
    for key in ("usage", "modelUsage", "model_usage_since_last_result", "subagent_stats",
                "safety_stops", "result_index", "queued_turn_count"):
        assert by_key[key].decision == "ignored" and by_key[key].reason, key


def test_docs_recorder_holds_the_same_table() -> None:
    doc = (ROOT / "docs" / "recorder.md").read_text(encoding="utf-8")
    section = doc.split("## Result keys\n", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    assert table == result_keys_markdown()
