"""The 41 situations as Claude Code 2.1.332 printed them, through the recorder (RC-07, RC-12).

The streams are the census's replays under the product's own sandbox (tests/fixtures/
captures-2.1.332/, docs/census.md), the situations the 2.1.197 captures were made in. What
each session must come to is what the same situation came to on 2.1.197
(`test_captures.EXPECT`, derived there by hand from docs/batch.md's state table and the
scripts), except where the release itself behaves otherwise, each named in `CHANGED` with the
observation that makes it so. A release that is covered must read like the one before: no
anomaly, no undecided init key, the version it prints, and a refusal for the reasons the
2.1.197 capture was refused for, never for a field the sandbox does not grant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pytest

from recorder._initcheck import InitPolicy
from recorder._transform import Observation, StreamObserver

from .test_captures import EXPECT

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
STREAMS = FIXTURES / "captures-2.1.332"
SITUATIONS = FIXTURES / "census" / "situations"
WORKSPACE: Final = "/workspace"
"""Where the census's replays see their workspace (docs/census.md)."""
CONFIG_DIR: Final = "/run/headwater/config"
"""The session's config directory inside the product's sandbox (RC-02)."""
WIDENING: Final = ("additional_directories", "messaging_socket_path", "sandbox_enabled",
                   "capabilities", "original_cwd")
"""The init fields 2.1.332 adds that RC-07 polices: the sandbox grants none of them, so no
refusal may name one."""

CHANGED: Final = {
    "k2_direct_sigterm": "killed",
}
"""Situations whose session ends otherwise on 2.1.332, and how. k2_direct_sigterm: SIGTERM
during a running Bash call; 2.1.197 printed a last result line and exited 0 (recorded),
2.1.332 exits 143 with no result line (its meta.json), which docs/batch.md calls killed."""


def _observe(name: str) -> tuple[Observation, int]:
    meta = json.loads((STREAMS / f"{name}.meta.json").read_text(encoding="utf-8"))
    mcp = SITUATIONS / name / "workspace" / ".mcp.json"
    declared = (frozenset(json.loads(mcp.read_text(encoding="utf-8"))["mcpServers"])
                if mcp.exists() else frozenset())
    policy = InitPolicy("dontAsk", declared, frozenset(), CONFIG_DIR, cwd=WORKSPACE)
    observer = StreamObserver(policy=policy, workspace=Path(WORKSPACE))
    *lines, tail = (STREAMS / f"{name}.jsonl").read_bytes().split(b"\n")
    for line in lines:
        observer.feed(line)
    status = meta["exit_status"]
    return observer.finish(end="exited", exit_status=status, tail=tail or None), status


def test_every_situation_has_its_2_1_332_stream() -> None:
    assert sorted(p.name.removesuffix(".jsonl") for p in STREAMS.glob("*.jsonl")) == sorted(EXPECT)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_a_2_1_332_stream_ends_as_its_situation_did_on_2_1_197(name: str) -> None:
    obs, _ = _observe(name)
    want = EXPECT[name]
    assert obs.state == CHANGED.get(name, want.state), obs.reason
    if obs.state == want.state:
        for field_name, _value in want.refusals:
            assert f"{field_name} = " in obs.reason, obs.reason
    for field_name in WIDENING:
        assert field_name not in obs.reason, obs.reason
    assert obs.anomaly_count == 0
    assert obs.unknown_init_keys == ()
    # m_no_verbose: the CLI refuses its arguments before printing a line
    assert obs.claude_code_version == (None if name == "m_no_verbose" else "2.1.332")
