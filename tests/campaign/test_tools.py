"""Allowed tools (campaign.corpus._tools): the pinned harness's list, and the plan-time refusal.

The list is checked against its source, the init lines of the real captures
of the pinned CLI (tests/fixtures/captures/), and the pin against the
Makefile. The acceptance rules are docs/plan.md's "Allowed tools": a known
name or alias, a permission rule over one (``Bash(git log:*)``), or an
``mcp__`` name of a server the corpus's .mcp.json declares.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from campaign._errors import CampaignError, UnknownTool
from campaign.corpus._corpus import load_corpus
from campaign.corpus._tools import (
    KNOWN_TOOLS,
    PINNED_HARNESS_VERSION,
    check_allowed_tools,
    known_tools,
)
from campaign.plan._plan import compose_plan, dump_plan, load_plan_file
from tests.campaign.corpora import minimal_corpus, probe_yml, write_files

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def _init_lines() -> list[dict[str, object]]:
    """Every init line of the committed streams (captures/ is 2.1.197's; later releases'
    streams sit in other fixture directories)."""
    found = []
    for capture in sorted(FIXTURES.rglob("*.jsonl")):
        for raw in capture.read_bytes().split(b"\n"):
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("type") == "system" \
                    and line.get("subtype") == "init":
                found.append(line)
    return found


@pytest.mark.parametrize("version", sorted(KNOWN_TOOLS))
def test_each_list_is_the_union_of_its_versions_init_lines(version: str) -> None:
    inits = [i for i in _init_lines() if i.get("claude_code_version") == version]
    assert inits, f"no committed stream of {version}"
    union = {t for i in inits for t in i["tools"]  # type: ignore[attr-defined]
             if not t.startswith("mcp__")}  # the captures' own MCP server, not the harness's
    assert KNOWN_TOOLS[version] == union


def test_the_pin_is_the_makefile_version() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    pinned = re.search(r"^HARNESS_VERSION := (\S+)$", makefile, re.MULTILINE)
    assert pinned is not None and pinned.group(1) == PINNED_HARNESS_VERSION
    assert PINNED_HARNESS_VERSION in KNOWN_TOOLS  # a bumped pin needs its list


SERVERS = ["docs", "my_tickets"]


@pytest.mark.parametrize(
    "entry",
    ["Read", "Grep", "Glob", "Bash", "Task", "Agent", "Bash(git log:*)", "Read(./docs/**)",
     "Edit(/src/**/*.ts)", "mcp__docs", "mcp__docs__search", "mcp__docs__*", "mcp__my_tickets",
     "mcp__my_tickets__open-one"],
)
def test_accepted_entries(entry: str) -> None:
    check_allowed_tools([entry], mcp_servers=SERVERS, source="probe.yml")


@pytest.mark.parametrize(
    ("entry", "said"),
    [("Reed", "'Reed' is not a tool (did you mean 'Read'?)"),
     ("MultiEdit", "'MultiEdit' is not a tool"),  # not in 2.1.197's init line
     ("TodoWrite", "'TodoWrite' is not a tool"),
     ("read", "'read' is not a tool (did you mean 'Read'?)"),
     ("", "'' is not a tool"),
     ("Reed(x)", "'Reed(x)' is a permission rule over 'Reed', which is not a tool"),
     ("Bash()", "'Bash()' is not a tool"),
     ("mcp__other", "'mcp__other' names an MCP server the corpus's .mcp.json does not declare"),
     ("mcp__docs__", "'mcp__docs__' names an MCP server"),
     ("mcp__", "'mcp__' names an MCP server")],
)
def test_refused_entries_say_why_and_list_the_known_names(entry: str, said: str) -> None:
    with pytest.raises(UnknownTool) as caught:
        check_allowed_tools(["Read", entry], mcp_servers=SERVERS, source="probe.yml `tools`")
    err = caught.value
    assert isinstance(err, CampaignError) and err.exit_status == 2 and err.tool == entry
    assert str(err).startswith(f"probe.yml `tools`: allowed tools: {said}")
    assert f"Claude Code {PINNED_HARNESS_VERSION} knows Bash, CronCreate," in str(err)
    assert err.known == tuple(sorted(KNOWN_TOOLS[PINNED_HARNESS_VERSION]))


def test_known_tools_adds_the_aliases() -> None:
    assert known_tools() == KNOWN_TOOLS[PINNED_HARNESS_VERSION] | {"Agent"}
    with pytest.raises(KeyError):
        known_tools("0.0.1")


def test_compose_plan_refuses_an_unknown_tool(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    write_files(root, {".headwater/probe.yml": probe_yml(tools=["Read", "Reed"])})
    with pytest.raises(UnknownTool) as caught:
        compose_plan(load_corpus(root), tier="campaign")
    assert str(caught.value).startswith(
        f"corpus {root}: .headwater/probe.yml `tools`: allowed tools: 'Reed' is not a tool")


def test_mcp_tools_follow_the_corpus_mcp_json(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    write_files(root, {".headwater/probe.yml": probe_yml(tools=["Read", "mcp__docs__search"])})
    with pytest.raises(UnknownTool, match="declared servers: none"):
        compose_plan(load_corpus(root), tier="campaign")
    write_files(root, {".mcp.json": json.dumps({"mcpServers": {"docs": {"command": "x"}}})})
    plan = compose_plan(load_corpus(root), tier="campaign")
    assert plan.tools == ("Read", "mcp__docs__search")


def test_a_plan_file_with_an_unknown_tool_is_refused(tmp_path: Path) -> None:
    root = minimal_corpus(tmp_path / "c")
    corpus = load_corpus(root)
    data = json.loads(dump_plan(compose_plan(corpus, tier="campaign"), "json"))
    data["tools"] = ["Reed"]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UnknownTool) as caught:
        load_plan_file(path, corpus)
    assert str(caught.value).startswith(f"{path} `tools`: allowed tools: 'Reed'")
