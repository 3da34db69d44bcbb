"""The transcript contract: closed key sets, three states, RC-16 layout, atomic write.

Rule text the expectations come from (docs/glossary.md RC-12, RC-14..RC-16; spec 15):

* Four closed key sets. Identity: model, served_version, tree, lock,
  selection, read_set, seed, harness, tier, arm, at, cost_cents (all twelve
  required). Event: probe, session, calls, produced, answer. Call: tool,
  argument, result. Artifact: path, result, cites, findings. "A key outside
  a set refuses the whole file."
* Three states (RC-12): ``calls: []`` = watched, none seen; no ``calls`` key
  = nothing watched; the same for produced, answer (null vs absent) and
  findings. A declared answer is written "as a quoted YAML string" (RC-13).
* ``cost_cents`` "is a whole number of cents" (RC-14).
* Session names are distinct within a probe (RC-15).
* RC-16 layout: free prose; ``## Run identity`` + one yaml block (mapping of
  the twelve keys); ``## Events`` + one yaml block (top-level sequence, ``[]``
  when none); ``## Sessions`` + table ``| probe | session | state | outside
  paths |``. The prose holds ``Outside-workspace paths named: <total>``. The
  writer proves its output by reading it back.
"""

from __future__ import annotations

import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from recorder import COVERED_RELEASES, PINNED_RELEASE
from recorder._cost import CostFigure
from recorder.transcript import (
    Artifact,
    Call,
    Event,
    Identity,
    SessionRow,
    Transcript,
    TranscriptRefused,
    TranscriptUnproven,
    harness_versions_line,
    parse_transcript,
    prose_for,
    served_version_of,
)
from recorder.transcript._yaml import yaml_text
from tests.recorder import oracle
from tests.recorder.oracle import render_transcript, write_transcript

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64
IDENTITY_KEYS = [
    "model",
    "served_version",
    "tree",
    "lock",
    "selection",
    "read_set",
    "seed",
    "harness",
    "tier",
    "arm",
    "at",
    "cost_cents",
]


def identity(**over: Any) -> Identity:
    values: dict[str, Any] = {
        "model": "claude-opus-4-8",
        "served_version": "claude-served-9",
        "tree": D1,
        "lock": D2,
        "selection": D1,
        "read_set": D2,
        "seed": 0,
        "harness": "headwater-campaign 0.1.0",
        "tier": "campaign",
        "arm": "present",
        "at": "2026-11-30T12:00:00Z",
        "cost_cents": 7,
    }
    return Identity(**(values | over))


def transcript(
    events: list[Event] | None = None,
    rows: list[SessionRow] | None = None,
    prose: str | None = None,
) -> Transcript:
    if events is None:
        events = [
            Event(
                probe="p1",
                session="r1",
                calls=[Call(tool="Read", argument="docs/a.md", result=D1)],
                produced=[Artifact(path="out.md", result=D2, cites=["a", "b"], findings=[])],
                answer="current",
            ),
            Event(probe="p1", session="r2", calls=[], answer=None),
        ]
    if rows is None:
        rows = [
            SessionRow(probe=e.probe, session=e.session, state="recorded", outside_paths=1)
            for e in events
        ]
        rows.append(SessionRow(probe="p2", session="r1", state="timed-out", outside_paths=0))
    if prose is None:
        prose = (
            f"Free prose.\n\nOutside-workspace paths named: {sum(r.outside_paths for r in rows)}"
        )
    return Transcript(prose=prose, identity=identity(), events=events, sessions=rows)


def events_block(text: str) -> str:
    return text.split("## Events\n\n```yaml\n", 1)[1].split("```", 1)[0]


def refused(text: str) -> TranscriptRefused:
    with pytest.raises(TranscriptRefused) as info:
        parse_transcript(text)
    return info.value


# --- closed key sets: one extra key each refuses the whole file, naming the key


@pytest.mark.parametrize(
    ("anchor", "insert", "where"),
    [
        ("cost_cents: 7\n", 'cost_cents: 7\nreasoning: "x"\n', "the run identity"),
        ('  answer: "current"\n', '  answer: "current"\n  reasoning: "x"\n', "an event"),
        ('    argument: "docs/a.md"\n', '    argument: "docs/a.md"\n    reasoning: "x"\n',
         "a call"),
        ('  - path: "out.md"\n', '  - path: "out.md"\n    reasoning: "x"\n',
         "a produced artifact"),
    ],
    ids=["identity", "event", "call", "artifact"],
)
def test_parse_refuses_key_outside_each_closed_set(anchor: str, insert: str, where: str) -> None:
    text = render_transcript(transcript())
    assert text.count(anchor) == 1
    exc = refused(text.replace(anchor, insert))
    assert exc.rule == "RC-16"
    assert "'reasoning'" in exc.detail and where in exc.detail


@pytest.mark.parametrize("model", [Identity, Event, Call, Artifact])
def test_models_forbid_extra_keys(model: type[Any]) -> None:
    with pytest.raises(ValidationError, match="reasoning"):
        model.model_validate({"reasoning": "x"})


def test_parse_refuses_identity_with_eleven_keys() -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace("seed: 0\n", ""))
    assert exc.rule == "RC-14"
    assert "seed" in exc.detail


def test_identity_writes_exactly_twelve_keys_in_table_order() -> None:
    text = render_transcript(transcript())
    block = text.split("## Run identity\n\n```yaml\n", 1)[1].split("```", 1)[0]
    assert [line.split(":", 1)[0] for line in block.splitlines()] == IDENTITY_KEYS


@pytest.mark.parametrize("bad", ["12.5", '"12"', "true", "-1", "12.0"])
def test_parse_refuses_cost_cents_not_whole_number(bad: str) -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace("cost_cents: 7\n", f"cost_cents: {bad}\n"))
    assert exc.rule == "RC-14"
    assert "cost_cents" in exc.detail


@pytest.mark.parametrize("bad", [12.5, "12", True, -1])
def test_identity_refuses_cost_cents_not_whole_number(bad: object) -> None:
    with pytest.raises(ValidationError, match="cost_cents"):
        identity(cost_cents=bad)


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("tree", "sha256:" + "A" * 64),
        ("lock", "sha256:abc"),
        ("at", "2026-11-30 12:00:00"),
        ("at", "2026-13-01T00:00:00Z"),
        ("at", "2026-11-30T12:00:00+01:00"),
        ("tier", "nightly"),
        ("arm", "both"),
        ("seed", True),
        ("seed", "0"),
    ],
)
def test_identity_refuses_bad_values(key: str, bad: object) -> None:
    with pytest.raises(ValidationError, match=key):
        identity(**{key: bad})


def test_parse_refuses_result_that_is_not_a_digest() -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace(f'    result: "{D1}"\n', '    result: "sha256:beef"\n'))
    assert exc.rule == "RC-10"
    assert "result" in exc.detail


# --- three states (RC-12): absent and empty are two facts in the written text


def _single(event: Event) -> str:
    rows = [SessionRow(probe=event.probe, session=event.session, state="recorded", outside_paths=0)]
    return events_block(render_transcript(transcript([event], rows)))


@pytest.mark.parametrize("key", ["calls", "produced"])
def test_list_key_observed_empty_writes_empty_list(key: str) -> None:
    block = _single(Event.model_validate({"probe": "p", "session": "r1", key: []}))
    assert f"\n  {key}: []\n" in block


@pytest.mark.parametrize("key", ["calls", "produced", "answer"])
def test_unobserved_key_writes_no_key(key: str) -> None:
    block = _single(Event(probe="p", session="r1"))
    assert f"{key}:" not in block
    assert block == '- probe: "p"\n  session: "r1"\n'


def test_answer_null_vs_absent() -> None:
    assert "\n  answer: null\n" in _single(Event(probe="p", session="r1", answer=None))
    assert "answer" not in _single(Event(probe="p", session="r1"))
    assert Event(probe="p", session="r1", answer=None) != Event(probe="p", session="r1")


def test_findings_checked_clean_vs_unchecked() -> None:
    checked = _single(Event(probe="p", session="r1", produced=[Artifact(path="a.md", findings=[])]))
    unchecked = _single(Event(probe="p", session="r1", produced=[Artifact(path="a.md")]))
    assert "\n    findings: []\n" in checked
    assert "findings" not in unchecked
    assert parse_transcript(
        render_transcript(
            transcript(
                [Event(probe="p", session="r1", produced=[Artifact(path="a.md")])],
                [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)],
            )
        )
    ).events[0].produced == [Artifact(path="a.md")]


@pytest.mark.parametrize(
    ("model", "key"),
    [
        (Event, "calls"),
        (Event, "produced"),
        (Artifact, "findings"),
        (Artifact, "cites"),
        (Artifact, "result"),
        (Call, "result"),
    ],
)
def test_explicit_none_is_not_a_state_of_list_or_result_keys(model: type[Any], key: str) -> None:
    base: dict[type[Any], dict[str, str]] = {
        Event: {"probe": "p", "session": "r1"},
        Artifact: {"path": "a"},
        Call: {"tool": "T", "argument": "x"},
    }
    with pytest.raises(ValidationError, match=key) as info:
        model.model_validate({**base[model], key: None})
    assert {e["type"] for e in info.value.errors()} == {"RC-12"}


def test_parse_refuses_calls_null() -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace("  calls: []\n", "  calls: null\n"))
    assert exc.rule == "RC-12"


def test_call_without_result_round_trips_absent() -> None:
    event = Event(probe="p", session="r1", calls=[Call(tool="Bash", argument="sleep 9")])
    block = _single(event)
    assert "result" not in block
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)]
    back = parse_transcript(render_transcript(transcript([event], rows)))
    assert back.events[0].calls is not None
    assert "result" not in back.events[0].calls[0].model_fields_set


# --- strings that look like other types stay strings


@pytest.mark.parametrize(
    "answer", ["0052", "yes", "null", "true", "1.5", "~", "2026-11-30T12:00:00Z", "- x"]
)
def test_answer_round_trips_as_quoted_string(answer: str) -> None:
    event = Event(probe="p", session="r1", answer=answer)
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)]
    text = render_transcript(transcript([event], rows))
    assert f'  answer: "{answer}"\n' in text
    assert parse_transcript(text).events[0].answer == answer


def test_parse_refuses_unquoted_answer_that_loads_as_int() -> None:
    event = Event(probe="p", session="r1", answer="0052")
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)]
    text = render_transcript(transcript([event], rows)).replace('answer: "0052"', "answer: 0052")
    assert refused(text).rule == "RC-13"


@pytest.mark.parametrize(
    "argument",
    [
        "a\n```\nb",
        "## Events",
        "line\u2028sep\x85",
        "nul\x00 tab\t",
        "lone \udc80 surrogate",
        "  padded  ",
        "",
        "'\"\\",
        "x" * 5000,
        "ünïcödé ✓",
    ],
)
def test_awkward_arguments_round_trip(argument: str) -> None:
    event = Event(probe="p", session="r1", calls=[Call(tool="Bash", argument=argument)])
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)]
    text = render_transcript(transcript([event], rows))
    back = parse_transcript(text)
    assert back.events[0].calls == [Call(tool="Bash", argument=argument)]
    text.encode("utf-8")  # writable as UTF-8 whatever the argument held



@pytest.mark.parametrize(
    ("prose", "said"),
    [
        ("Free prose.\r\n", "carriage return (CRLF line ending) on line 1"),
        ("Free\n\nprose \udc80.", "line 3 holds '\\udc80', which UTF-8 cannot encode"),
    ],
    ids=["carriage-return", "lone-surrogate"],
)
def test_text_the_check_would_refuse_is_never_rendered(prose: str, said: str) -> None:
    """RC-16: the file is UTF-8 Markdown whose lines end with \\n only; the writer's proof
    holds its text to that, so it never writes a file that check-transcript refuses."""
    t = transcript(prose=f"{prose}\n\nOutside-workspace paths named: 2")
    with pytest.raises(TranscriptUnproven, match="RC-16") as info:
        render_transcript(t)
    assert said in str(info.value)
    text = render_transcript(transcript()).replace("Free prose.", prose)
    assert refused(text).rule == "RC-16" and said in refused(text).detail


# --- RC-15: session names distinct within a probe


def test_duplicate_session_names_refused_at_construction() -> None:
    events = [Event(probe="p", session="r1"), Event(probe="p", session="r1", calls=[])]
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)]
    with pytest.raises(ValidationError) as info:
        transcript(events, rows)
    assert info.value.errors()[0]["type"] == "RC-15"


def test_same_session_name_in_two_probes_is_fine() -> None:
    events = [Event(probe="p", session="r1"), Event(probe="q", session="r1")]
    rows = [
        SessionRow(probe=e.probe, session="r1", state="recorded", outside_paths=0) for e in events
    ]
    assert len(transcript(events, rows).events) == 2


def test_parse_refuses_duplicate_session_names() -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace('session: "r2"', 'session: "r1"'))
    assert exc.rule == "RC-15"
    assert "p1/r1" in exc.detail


def test_parse_refuses_duplicate_table_rows() -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace("| p2 | r1 | timed-out | 0 |", "| p1 | r1 | timed-out | 0 |"))
    assert exc.rule == "RC-15"


# --- sessions table against events


def test_parse_refuses_event_whose_row_is_not_recorded() -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace("| p1 | r2 | recorded | 1 |", "| p1 | r2 | killed | 1 |"))
    assert exc.rule == "RC-16" and "p1/r2" in exc.detail


def test_parse_refuses_recorded_row_without_event() -> None:
    text = render_transcript(transcript())
    exc = refused(text.replace("| p2 | r1 | timed-out | 0 |", "| p2 | r1 | recorded | 0 |"))
    assert exc.rule == "RC-16" and "p2/r1" in exc.detail


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("| probe | session | state | outside paths |", "| probe | session | state | outside |"),
        ("|---|---|---|---|", "|---|---|---|"),
        ("| p2 | r1 | timed-out | 0 |", "| p2 | r1 | timed-out |"),
        ("| p2 | r1 | timed-out | 0 |", "| p2 | r1 | timed-out | -1 |"),
        ("| p2 | r1 | timed-out | 0 |", "| p2 | r1 | sleeping | 0 |"),
        ("| p2 | r1 | timed-out | 0 |", "| p2 | r1 | timed-out | 0 |\n\nafterword"),
    ],
    ids=["header", "separator", "short-row", "negative", "unknown-state", "text-after"],
)
def test_parse_refuses_malformed_sessions_table(old: str, new: str) -> None:
    text = render_transcript(transcript())
    assert refused(text.replace(old, new)).rule == "RC-16"


def test_parse_refuses_outside_total_that_disagrees_with_table() -> None:
    text = render_transcript(transcript())
    exc = refused(
        text.replace("Outside-workspace paths named: 2", "Outside-workspace paths named: 3")
    )
    assert exc.rule == "RC-16" and "Outside-workspace" in exc.detail


# --- RC-16 layout exactness

EXPECTED = """\
Prose line.

Outside-workspace paths named: 0

## Run identity

```yaml
model: "claude-opus-4-8"
served_version: "claude-served-9"
tree: "{D1}"
lock: "{D2}"
selection: "{D1}"
read_set: "{D2}"
seed: 0
harness: "headwater-campaign 0.1.0"
tier: "campaign"
arm: "present"
at: "2026-11-30T12:00:00Z"
cost_cents: 7
```

## Events

```yaml
- probe: "p"
  session: "r1"
  calls:
  - tool: "Read"
    argument: "docs/a.md"
    result: "{D1}"
  produced: []
  answer: null
```

## Sessions

| probe | session | state | outside paths |
|---|---|---|---|
| p | r1 | recorded | 0 |
""".replace("{D1}", D1).replace("{D2}", D2)


def test_render_layout_is_exact() -> None:
    event = Event(
        probe="p",
        session="r1",
        calls=[Call(tool="Read", argument="docs/a.md", result=D1)],
        produced=[],
        answer=None,
    )
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=0)]
    text = render_transcript(
        transcript([event], rows, "\nProse line.\n\nOutside-workspace paths named: 0\n\n")
    )
    assert text == EXPECTED
    assert parse_transcript(EXPECTED) == transcript(
        [event], rows, "Prose line.\n\nOutside-workspace paths named: 0"
    )


def test_render_headings_once_in_order_one_block_each() -> None:
    text = render_transcript(transcript())
    heads = [line for line in text.split("\n") if line.startswith("## ")]
    assert heads == ["## Run identity", "## Events", "## Sessions"]
    assert text.count("```yaml\n") == 2
    assert re.findall(r"^```$", text, re.M) == ["```", "```"]
    assert "\n| probe | session | state | outside paths |\n|---|---|---|---|\n" in text


def test_no_events_writes_empty_sequence() -> None:
    rows = [SessionRow(probe="p", session="r1", state="killed", outside_paths=0)]
    text = render_transcript(transcript([], rows))
    assert "## Events\n\n```yaml\n[]\n```\n" in text
    assert parse_transcript(text).events == []


def test_render_parse_round_trip() -> None:
    original = transcript()
    back = parse_transcript(render_transcript(original))
    assert back == original
    assert back.model_dump(exclude_unset=True) == original.model_dump(exclude_unset=True)


@pytest.mark.parametrize(
    ("mutate", "said"),
    [
        (lambda t: t.replace("## Events\n", "## Event\n"), "'## Events' is missing"),
        (
            lambda t: t.replace("## Sessions\n", "## Sessions\n\n## Sessions\n"),
            "'## Sessions' is repeated",
        ),
        (lambda t: t.replace("Free prose.", "## Run identity"), "'## Run identity' is repeated"),
        (
            lambda t: t.replace("## Run identity\n\n```yaml\n", "## Run identity\n\n```yml\n"),
            "exactly one ```yaml",
        ),
        (
            lambda t: t.replace("## Events\n\n```yaml\n", "## Events\n\nSome words.\n\n```yaml\n"),
            "exactly one ```yaml",
        ),
        (
            lambda t: t.replace("## Events\n\n", "## Events\n\n```yaml\n[]\n```\n\n"),
            "exactly one ```yaml",
        ),
        (lambda t: _swap(t, "## Events", "## Sessions"), "out of order"),
        (
            lambda t: t.replace("cost_cents: 7\n```", "cost_cents: 7\n```\n```yaml\nx: 1\n```"),
            "exactly one ```yaml",
        ),
    ],
    ids=[
        "missing",
        "duplicated",
        "prose-heading",
        "not-yaml-fence",
        "text-in-section",
        "two-blocks",
        "order",
        "second-identity-block",
    ],
)
def test_parse_refuses_layout_breaks(mutate: Any, said: str) -> None:
    exc = refused(mutate(render_transcript(transcript())))
    assert exc.rule == "RC-16"
    assert said in exc.detail


def _swap(text: str, a: str, b: str) -> str:
    head, rest = text.split(a + "\n", 1)
    middle, tail = rest.split(b + "\n", 1)
    return f"{head}{b}\n{tail}\n{a}\n{middle}"


@pytest.mark.parametrize(
    ("section", "body"),
    [
        ("## Run identity", "- 1\n"),
        ("## Run identity", ""),
        ("## Events", "probe: p\n"),
        ("## Events", "- [1]\n"),
        ("## Events", "- a: 1\n  a: 2\n"),
        ("## Events", "- !!python/object:os.system x\n"),
        ("## Events", "{unclosed\n"),
    ],
)
def test_parse_refuses_blocks_of_the_wrong_shape(section: str, body: str) -> None:
    text = render_transcript(transcript())
    head, rest = text.split(f"{section}\n\n```yaml\n", 1)
    _, tail = rest.split("```\n", 1)
    exc = refused(f"{head}{section}\n\n```yaml\n{body}```\n{tail}")
    assert exc.rule == "RC-16"


def test_prose_may_not_hold_a_heading_line() -> None:
    with pytest.raises(ValidationError, match="heading"):
        transcript(prose="x\n## Events\nOutside-workspace paths named: 2")


def test_render_raises_unproven_when_read_back_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # The oracle's own proof (the product writer's: tests/recorder/test_streamed.py).
    monkeypatch.setattr(oracle, "row_line", lambda row: "| x |")
    with pytest.raises(TranscriptUnproven, match="RC-16"):
        render_transcript(transcript())


def test_render_raises_unproven_when_read_back_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    # The read-back parses (valid contract) but is not what was rendered: in the identity ...
    real = yaml_text
    monkeypatch.setattr(
        "tests.recorder.oracle.yaml_text",
        lambda data: real(data).replace("claude-served-9", "claude-other"),
    )
    with pytest.raises(TranscriptUnproven, match="differs"):
        render_transcript(transcript())


def test_render_raises_unproven_when_an_event_reads_back_as_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ... and in an event, which is proved on its own when it joins the block.
    real = yaml_text
    monkeypatch.setattr(
        "recorder.transcript._events.yaml_text",
        lambda data: real(data).replace('"current"', '"other"'),
    )
    with pytest.raises(TranscriptUnproven, match="p1/r1 reads back as another event"):
        render_transcript(transcript())


@pytest.mark.parametrize("key", IDENTITY_KEYS)
def test_identity_requires_each_of_the_twelve_keys(key: str) -> None:
    values = identity().model_dump()
    del values[key]
    with pytest.raises(ValidationError, match=key):
        Identity.model_validate(values)


# --- atomic write


def test_write_transcript_replaces_atomically_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "present.md"
    path.write_text("old", encoding="utf-8")
    write_transcript(path, transcript())
    assert os.listdir(tmp_path) == ["present.md"]
    assert parse_transcript(path.read_text(encoding="utf-8")) == transcript()


def test_write_transcript_failure_keeps_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "present.md"
    path.write_text("old", encoding="utf-8")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space"):
        write_transcript(path, transcript())
    assert os.listdir(tmp_path) == ["present.md"]
    assert path.read_text(encoding="utf-8") == "old"


# --- served version and prose


def test_served_version_most_frequent_then_lexicographic() -> None:
    assert served_version_of(["b", "a", "b"]) == "b"
    assert served_version_of(["b", "a", "c", "c", "a"]) == "a"  # a and c tie at 2: "a" < "c"
    assert served_version_of([], fallback="claude-opus-4-8") == "claude-opus-4-8"
    with pytest.raises(ValueError, match="no served version"):
        served_version_of([])


def _prose(**over: Any) -> str:
    args: dict[str, Any] = {
        "arm": "present",
        "tier": "campaign",
        "allowed_tools": ["Read", "Grep", "Bash"],
        "network": "host",
        "claude_code_versions": ["2.1.197", "2.1.197"],
        "served_versions": {"claude-served-9": 4},
        "cost": CostFigure(cents=12, unknown=0, lower_bound=False),
        "unknown_cost_sessions": [],
        "outside_paths_total": 5,
    }
    return prose_for(**(args | over))


def test_prose_states_the_contract() -> None:
    prose = _prose()
    for fact in [
        "dontAsk",
        "Read, Grep, Bash",
        "WebSearch and WebFetch denied",
        "bwrap",
        "the session shared the host network, so a Bash call could reach the public internet",
        "Rates from bypassPermissions batches do not compare",
        # a session's value: a JSON literal, then where it stands against the census
        'Claude Code version: "2.1.197" (covered by the harness census).',
        "the harness's own computed cost, total_cost_usd of the last result line of each attempt; "
        "not the provider's invoice",
        'Served version: "claude-served-9" (4 recorded sessions).',
    ]:
        assert fact in prose
    assert prose.endswith("\nOutside-workspace paths named: 5")
    assert "lower bound" not in prose


def test_prose_names_unknown_cost_attempts_and_all_served_versions() -> None:
    prose = _prose(
        cost=CostFigure(cents=3, unknown=2, lower_bound=True),
        unknown_cost_sessions=["p1/r2 attempt 1", "p2/r1 attempt 2"],
        served_versions={"v-b": 1, "v-a": 3},
        claude_code_versions=["2.1.197", "2.1.200"],
        arm_identity="present: the corpus as sealed",
        anomalies_total=2,
    )
    assert "lower bound" in prose and "p1/r2 attempt 1, p2/r1 attempt 2" in prose
    assert '"v-a" (3 sessions), "v-b" (1 session)' in prose
    assert ('Claude Code versions: "2.1.197" (covered by the harness census), "2.1.200" (not '
            'covered by the harness census). The census covers ') in prose
    assert "Arm identity: present: the corpus as sealed" in prose
    with pytest.raises(ValueError, match="lower-bound"):
        _prose(cost=CostFigure(cents=3, unknown=1, lower_bound=True))


def test_prose_says_which_releases_the_census_does_not_cover_and_what_it_means() -> None:
    """Item by item: each version with its coverage (`recorder.coverage`); an uncovered or
    unreadable one makes the sentence name the covered releases and what that means."""
    covered = ", ".join(COVERED_RELEASES)
    assert harness_versions_line([PINNED_RELEASE]) == (
        f'Claude Code version: "{PINNED_RELEASE}" (covered by the harness census).')
    line = harness_versions_line(["2.1.999", PINNED_RELEASE, "2.1.999"])
    assert line == (
        f'Claude Code versions: "{PINNED_RELEASE}" (covered by the harness census), '
        f'"2.1.999" (not covered by the harness census). The census covers {covered}: '
        "the recorder was not checked against what this release prints, so a line or key it "
        'changed may have been read wrong without a refusal ("make census '
        'CENSUS_VERSION=RELEASE" checks a release).')
    odd = harness_versions_line(["2.1.x<!--"])
    assert odd.startswith('Claude Code version: "2.1.x\\u003c!--" (not a release number, so '
                          "not covered by the harness census). The census covers ")
    assert harness_versions_line([]) == "Claude Code version: not observed."
    assert line in _prose(claude_code_versions=["2.1.999", PINNED_RELEASE])


def test_prose_for_output_is_accepted_by_transcript() -> None:
    rows = [SessionRow(probe="p", session="r1", state="recorded", outside_paths=5)]
    t = transcript([Event(probe="p", session="r1")], rows, _prose())
    assert parse_transcript(render_transcript(t)) == t
    assert Decimal(t.identity.cost_cents) == 7


def test_docs_example_is_clean_and_byte_exact() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "transcript.md").read_text(
        encoding="utf-8"
    )
    example = doc.split("````markdown\n", 1)[1].split("````", 1)[0]
    parsed = parse_transcript(example)
    assert render_transcript(parsed) == example
    assert parsed.identity.cost_cents == 8
