"""load_yaml: the C fast path means what ruamel's pure loader means (YAML 1.2), text for text.

The reference is ruamel.yaml's pure-Python safe loader (`pure_load`), the
loader the corpus used before the fast path. The differential tests generate
front matters (structured, from YAML's tricky scalars and indicators, and as
token soup) and require, for every text: `load_yaml` gives the reference's
value or the reference's error; and wherever the fast path decides alone
(admitted and accepted by the C parser), the reference accepts the text too
and gives the same value, type for type.
"""

from __future__ import annotations

import datetime
import math
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml.error import YAMLError

from campaign.corpus._yamlload import (
    c_load,
    describe_yaml_error,
    fast_path_admits,
    fast_path_available,
    load_yaml,
    pure_load,
)

EXAMPLES = 1500
"""Examples per differential test (a few seconds each); derandomized, so CI sees the same."""
DIFFERENTIAL = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                        suppress_health_check=[HealthCheck.too_slow])

SCALARS = [
    "yes", "No", "on", "OFF", "y", "n", "0052", "052", "0o17", "0x1F", "0b11", "1_000", "1e3",
    "1E-3", "+1", "-0", ".5", "-.5", "5.", ".inf", "-.Inf", ".NaN", "~", "null", "Null", "NULL",
    "true", "False", "TRUE", "2024-01-01", "2024-1-1", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5", "2001-12-15T02:59:43.1Z", "<<", "=", "12:30", "1:2:3",
    "190:20:30.15", "HW-DR-0052", "current HW-DR-0052", "a b", "a:b", "a #b", "a# b",
    "http://x.y/z?q=1#f", "é", "ünïcode", "\u00a0x", "@x", "`x`", "a,b", "[x", "x]", "{x}",
    "-x", "?x", "%x", "&x", "*x", "3.14.15", "0.", "00", "0", "-", "--", "x  y", "a\\b",
    "1_2_3", "0o8", "0x", "+.5e+3", "1,000", "12e", "Hi!", "a|b", "a>b", "x\ty", "\u2028",
    "\u2029", "\x85", "\ufeff", "It's", 'say "hi"',
]
"""Plain-scalar material: 1.1-versus-1.2 scalars, indicators, and the characters the gate
excludes (so the generator reaches the constructs the fast path must refuse)."""
ESCAPES = ["", "\\n", "\\t", "\\x41", "\\u00e9", "\\U0001F600", "\\/", "\\ ", '\\"', "\\\\",
           "\\0", "\\a", "\\e", "\\N", "\\_", "\\L", "\\P", "\\b", "\\r", "\\q"]
KEYS = ["id", "title", "answers", "examines", "tags", "date", "n", "yes", "0052", "a b", "<<",
        "~", "null", "1", "true", "x:y", "é", "? k"]
TOKENS = [*SCALARS, ":", ": ", " ", "  ", "\t", "\n", "\r\n", "\r", "- ", "? ", "[", "]", "{",
          "}", ",", "#", " #", "&a ", "*a", "!", "!!str ", "!!int ", "!foo ", "|", ">", "|-",
          ">+", "|#", "'", '"', "\\", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "---", "...",
          "--- ", "\n  ", "\n- ", "key: ", "\u2028", "\u2029", "\x85", "\ufeff"]


def _norm(value: Any) -> Any:
    """A value with its types spelled out, so True, 1 and 1.0 are three answers (and NaN one)."""
    if isinstance(value, dict):
        return ("map", tuple((_norm(k), _norm(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_norm(v) for v in value))
    if isinstance(value, set | frozenset):
        return ("set", tuple(sorted(repr(v) for v in value)))
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    if isinstance(value, datetime.datetime):
        return ("datetime", value.isoformat(), repr(value.tzinfo))
    return (type(value).__name__, repr(value))


def _outcome(load: Any, text: str) -> tuple[str, Any, tuple[str, ...]]:
    """The value or the error (the reference also raises TypeError, for a list as a key), and
    the warnings given on the way (a meaning too: ruamel warns of 1.1 floats, reused anchors)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result: tuple[str, Any] = ("value", _norm(load(text)))
        except Exception as exc:
            result = ("error", (type(exc).__name__, str(exc)))
    return (*result, tuple(type(w.message).__name__ for w in seen))


@st.composite
def _quoted(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SCALARS))
    style = draw(st.sampled_from(["plain", "single", "double", "comment"]))
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    if style == "double":
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + escaped + draw(st.sampled_from(ESCAPES)) + '"'
    if style == "comment":
        return text + draw(st.sampled_from(["", " # note", "  #c", "#nc"]))
    return text


def _flow(depth: int) -> st.SearchStrategy[str]:
    if depth >= 2:
        return _quoted()
    inner = _flow(depth + 1)
    return st.one_of(
        _quoted(),
        st.builds(lambda items, comma: "[" + ", ".join(items) + comma + "]",
                  st.lists(inner, max_size=3), st.sampled_from(["", ","])),
        st.builds(lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}",
                  st.lists(st.tuples(st.sampled_from(KEYS), inner), max_size=3)),
    )


@st.composite
def _block(draw: st.DrawFn, indent: int = 0, depth: int = 0) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(KEYS))
        shape = draw(st.sampled_from(["scalar", "scalar", "flow", "list", "nested", "anchor"]))
        if shape == "nested" and depth < 2:
            lines.append(f"{pad}{key}:")
            lines += draw(_block(indent + draw(st.sampled_from([1, 2, 4])), depth + 1))
        elif shape == "list":
            lines.append(f"{pad}{key}:")
            sub = " " * (indent + draw(st.sampled_from([0, 2, 4])))
            lines += [f"{sub}- {item}" for item in draw(st.lists(_flow(1), min_size=1,
                                                                 max_size=3))]
        elif shape == "anchor":
            lines += [f"{pad}{key}: &a {draw(_quoted())}", f"{pad}other: *a"]
        else:
            value = draw(_flow(0) if shape == "flow" else _quoted())
            lines.append(f"{pad}{key}: {value}")
            if draw(st.booleans()) and shape == "scalar":  # a continuation line
                lines.append(pad + " " * draw(st.integers(1, 3)) + draw(st.sampled_from(SCALARS)))
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "# comment", pad + "#c", "   "])))
    return lines


@st.composite
def front_matters(draw: st.DrawFn) -> str:
    """A front matter text: block mappings, flow collections, lists, anchors, comments."""
    eol = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return eol.join(draw(_block())) + draw(st.sampled_from([eol, ""]))


token_soup = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=16).map("".join)
"""Texts that are mostly not YAML: the C path and the reference must agree on refusing too."""
CHARACTERS = "-:?[]{},#&*!|>'\"%@`~=<. \t\n\r\u2028\u2029\x85\ufeff\x00\x7fab01yé"
"""Every indicator and every kind of line break or space YAML 1.1 and 1.2 tell apart."""
character_soup = st.text(alphabet=CHARACTERS, min_size=1, max_size=12)
LINES = ["- a", "- b", "k: v", "j: w", "  c", "    d", "#c", "? k", ": v", "- - x", "k:", "",
         "  - e", "'s", '"q', "x # y", "k: |", "  t"]
BREAKS = ["\n", "\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", " ", "\t"]
line_soup = st.lists(st.tuples(st.sampled_from(LINES), st.sampled_from(BREAKS)), min_size=1,
                     max_size=6).map(lambda pairs: "".join(a + b for a, b in pairs))
"""Short YAML lines joined by every line break either version knows (1.1 adds NEL, LS, PS)."""


def _check_same_meaning(text: str) -> None:
    reference = _outcome(pure_load, text)
    assert _outcome(load_yaml, text) == reference
    if fast_path_admits(text):
        fast = _outcome(c_load, text)
        if fast[0] == "error":  # the C path refused: load_yaml fell back, checked above
            return
        assert fast == reference, "the C path alone gave another meaning"


@DIFFERENTIAL
@given(front_matters())
def test_fast_path_means_what_the_pure_loader_means_on_front_matters(text: str) -> None:
    _check_same_meaning(text)


@DIFFERENTIAL
@given(token_soup)
def test_fast_path_means_what_the_pure_loader_means_on_token_soup(text: str) -> None:
    _check_same_meaning(text)


@DIFFERENTIAL
@given(line_soup)
def test_fast_path_means_what_the_pure_loader_means_line_by_line(text: str) -> None:
    _check_same_meaning(text)


@DIFFERENTIAL
@given(character_soup)
def test_fast_path_means_what_the_pure_loader_means_character_by_character(text: str) -> None:
    _check_same_meaning(text)


def test_the_c_parser_is_installed() -> None:
    """ruamel.yaml.clib is a dependency; without it every text would take the slow path."""
    assert fast_path_available()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("title: yes", {"title": "yes"}),  # 1.2: only true/false are booleans
        ("a: on\nb: No", {"a": "on", "b": "No"}),
        ("n: 0052", {"n": 52}),  # 1.2 core int [-+]?[0-9]+, decimal (1.1 read octal 42)
        ("n: '0052'", {"n": "0052"}),
        ("n: 0o17", {"n": 15}),
        ("n: 1e3", {"n": 1000.0}),
        ("t: 12:30", {"t": "12:30"}),  # no 1.1 sexagesimals
        ("d: 2024-01-01", {"d": datetime.date(2024, 1, 1)}),
        ("answers: [current HW-DR-0052]", {"answers": ["current HW-DR-0052"]}),
        ("x: ~", {"x": None}),
        ("%YAML 1.1\n---\ntitle: yes\n", {"title": True}),  # the directive: the reference decides
        ("k: !!str 1", {"k": "1"}),
        ("k: |\n  a\n  b\n", {"k": "a\nb\n"}),
    ],
)
def test_yaml_1_2_meanings(text: str, value: object) -> None:
    assert _outcome(load_yaml, text) == ("value", _norm(value), ())


@pytest.mark.parametrize(
    "text",
    ["a:\tb", "k: !", "k: !!str x", "k: |#", "k: >\n  x", "%YAML 1.2\n---\nk: v", "--- k",
     "...", "k: v\x85w", "- a\u2028- b", "- a\u2029- b", "\ufeffk: v", "k: \x7f"],
    ids=["tab", "empty-tag", "tag", "block-header-comment", "folded", "directive",
         "document-start", "document-end", "nel", "line-separator", "paragraph-separator", "bom",
         "del"],
)
def test_the_gate_sends_what_libyaml_may_read_otherwise_to_the_reference(text: str) -> None:
    assert not fast_path_admits(text)
    assert _outcome(load_yaml, text) == _outcome(pure_load, text)


@pytest.mark.parametrize(
    "text", ["id: HW-DOC-00001\ntitle: Document 1\nstatus: current\n", "title: Hi! a|b a>b",
             "tags: [a, b]\nlist:\n  - x\n  - 'y'\n", "k: \"\\t\"\r\nj: é\r\n"],
)
def test_the_gate_admits_ordinary_front_matter(text: str) -> None:
    assert fast_path_admits(text)


def test_errors_are_the_reference_errors_with_line_and_column() -> None:
    text = 'id: X\ntitle: "unclosed\n'
    with pytest.raises(YAMLError) as caught:
        load_yaml(text)
    described = describe_yaml_error(caught.value, text, first_line=2)
    lines = described.split("\n")
    # the stream ends on the third line of the text (file line 4); the scalar opened on the
    # second (file line 3), column 8 (1-based)
    assert lines[0] == "line 4, column 1: found unexpected end of stream"
    assert lines[1] == "  while scanning a quoted scalar (from line 3, column 8)"
    assert lines[2:] == ['    title: "unclosed', "           ^"]


def test_a_forbidden_character_is_named_with_its_place() -> None:
    text = "a: b\nc: \x01\n"
    with pytest.raises(YAMLError) as caught:
        load_yaml(text)
    assert describe_yaml_error(caught.value, text).startswith(
        "line 2, column 4: character U+0001 is not allowed in YAML")
