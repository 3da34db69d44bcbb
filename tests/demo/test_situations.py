"""The census's situations: one per capture, each a spec, scripts and files the census can run.

Every capture of the pinned CLI (tests/fixtures/captures/<name>.script.json) has its
situation (tests/fixtures/census/situations/<name>/); its situation.json is a
`demo.SituationSpec`, its scripts load with `demo.load_scripts`, its mounts' fixtures exist,
and its scripts match what the session sends: the main conversation's a phrase of the
prompt, a subagent's a phrase of the prompt the main one gives its Agent call.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from demo import SITUATION_FILE, SituationSpec, load_scripts, read_situation
from demo._scripts import Branch, Turn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CAPTURES = FIXTURES / "captures"
SITUATIONS = FIXTURES / "census" / "situations"
NAMES = sorted(p.name.removesuffix(".script.json") for p in CAPTURES.glob("*.script.json"))
OUTSIDE_ON_PURPOSE = {"/etc/hostname"}
"""Absolute paths outside /workspace a situation reads on purpose (e_denied, e2_disallowed:
a read outside the workspace is allowed)."""


def test_every_capture_has_its_situation_and_no_other_is_there() -> None:
    assert len(NAMES) == 41
    assert sorted(p.parent.name for p in SITUATIONS.glob(f"*/{SITUATION_FILE}")) == NAMES


def _turns(steps: list[Any]) -> list[Turn]:
    out: list[Turn] = []
    for step in steps:
        if isinstance(step, Turn):
            out.append(step)
        elif isinstance(step, Branch):
            for alternative in step.branch:
                out.extend(_turns(alternative.turns))
            out.extend(_turns(step.otherwise))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_each_situation_loads_and_its_scripts_match_what_the_session_sends(name: str) -> None:
    directory = SITUATIONS / name
    spec = read_situation(directory)
    assert spec.name == name
    scripts = load_scripts(directory / "scripts", home="/home/census")
    for mount in spec.mounts:
        assert (directory / mount.fixture).exists(), mount.fixture
    # git keeps no empty directory: an absent workspace/ is an empty workspace (the runner
    # makes it so), anything else there must be a directory.
    workspace = directory / "workspace"
    assert workspace.is_dir() or not workspace.exists()
    agent_prompts = [str(block.input.get("prompt", "")) for script in scripts
                     for turn in _turns(list(script.turns)) for block in turn.blocks
                     if block.type == "tool_use" and block.name in ("Agent", "Task")]
    main = [s for s in scripts if s.match in spec.prompt]
    assert len(main) == 1, "one script answers the prompt"
    for script in scripts:
        assert script is main[0] or any(script.match in p for p in agent_prompts), (
            f"{script.name}: its match {script.match!r} is in neither the prompt nor an "
            "Agent prompt")
    for script in scripts:
        for turn in _turns(list(script.turns)):
            for block in turn.blocks:
                if block.type != "tool_use":
                    continue
                for key in ("file_path", "notebook_path", "path"):
                    path = block.input.get(key)
                    if isinstance(path, str) and path.startswith("/"):
                        assert path.startswith("/workspace") or path in OUTSIDE_ON_PURPOSE


def test_the_fault_situations_use_the_captures_fault_kinds() -> None:
    """What each f_* capture's provider did, said in our script format (docs/provider.md);
    its streams had no ``ping``, so its N first events are our N + 1."""
    def faults(name: str) -> list[dict[str, Any]]:
        (path,) = (SITUATIONS / name / "scripts").glob("*.json")
        return [s for s in json.loads(path.read_text())["turns"] if "fault" in s]

    assert faults("f_cut_stream_only") == [
        {"fault": "cut", "after_events": 4, "times": 99, "stream_only": True}]
    assert faults("f_sse_overloaded_always") == [
        {"fault": "sse_error", "error_type": "overloaded_error", "message": "Overloaded",
         "after_events": 3, "times": 99}]
    assert faults("f_429_then_ok") == [
        {"fault": "http", "status": 429, "times": 2, "message": "Rate limited",
         "headers": {"retry-after": "0"}}]
    assert [f["status"] for n in ("f_400_prompt_too_long", "f_401", "f_500_always")
            for f in faults(n)] == [400, 401, 500]


def test_the_signalled_situations_stop_the_harness() -> None:
    stops = {name: read_situation(SITUATIONS / name).stop for name in NAMES}
    signalled = {name: stop.signal for name, stop in stops.items() if stop is not None}
    assert signalled == {
        "k_sigkill": "SIGKILL", "k_sigterm": "SIGTERM", "k_sigterm_during_api": "SIGTERM",
        "k2_direct_sigint": "SIGINT", "k2_direct_sigterm": "SIGTERM",
        "k2_direct_sigterm_during_api": "SIGTERM"}


def test_a_best_effort_situation_says_why() -> None:
    for name in NAMES:
        spec = read_situation(SITUATIONS / name)
        if spec.best_effort:
            assert "best effort" in spec.shows, name
    assert read_situation(SITUATIONS / "h_bypass_root").best_effort


def _spec(**changes: Any) -> dict[str, Any]:
    return {"format": 1, "name": "x", "shows": "what it shows", "prompt": "Hi",
            "args": ["--permission-mode", "dontAsk"], "env": {}, "stop": None, "mounts": [],
            "timeout_s": 60.0, "best_effort": False, "omit_verbose": False, **changes}


def test_the_spec_takes_every_key_of_format_1() -> None:
    spec = SituationSpec.model_validate(_spec(
        env={"CLAUDE_CODE_MAX_RETRIES": "2"}, stop={"signal": "SIGINT", "after_s": 4},
        mounts=[{"fixture": "mounts/echo.py", "at": "/opt/mcp/echo.py"}]))
    assert spec.stop is not None and spec.stop.after_s == 4.0
    assert spec.mounts[0].at == "/opt/mcp/echo.py"


@pytest.mark.parametrize("changes", [
    {"args": ["--verbose"]},
    {"args": ["-p", "other"]},
    {"env": {"ANTHROPIC_API_KEY": "sk-real"}},
    {"env": {"ANTHROPIC_BASE_URL": "http://elsewhere"}},
    {"mounts": [{"fixture": "../../captures/x", "at": "/opt/x"}]},
    {"mounts": [{"fixture": "/etc/passwd", "at": "/opt/x"}]},
    {"mounts": [{"fixture": "m", "at": "/workspace/x"}]},
    {"mounts": [{"fixture": "m", "at": "/opt/../etc/x"}]},
    {"stop": {"signal": "SIGHUP", "after_s": 1}},
    {"shows": "two\nlines"},
    {"format": 2},
    {"timeout_s": 0},
    {"extra": True},
], ids=["verbose", "prompt", "key", "url", "mount-escapes", "mount-absolute", "mount-not-opt",
        "mount-dotdot", "signal", "shows-lines", "format", "timeout", "extra-key"])
def test_the_spec_refuses_what_the_runner_owns_or_format_1_lacks(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SituationSpec.model_validate(_spec(**changes))


def test_read_situation_names_a_file_of_another_situation(tmp_path: Path) -> None:
    shutil.copytree(SITUATIONS / "f_cut_once", tmp_path / "renamed")
    with pytest.raises(ValueError, match="is not its directory's"):
        read_situation(tmp_path / "renamed")
