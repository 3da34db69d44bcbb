"""The bundled example corpus and demo scripts: shape, seal hygiene, and the installed wheel."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from demo import Script, load_scripts
from demo._scripts import ToolUseBlock, Turn

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "demo" / "example"
CORPUS = EXAMPLE / "corpus"
SCRIPTS = EXAMPLE / "scripts"
SHELF = CORPUS / "docs" / "probes"
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)


def _front(path: Path) -> dict[str, Any]:
    found = _FRONT.match(path.read_text(encoding="utf-8"))
    assert found, f"{path} has no front matter"
    data = YAML(typ="safe").load(found.group(1))
    assert isinstance(data, dict)
    return data


def _section(path: Path, heading: str) -> str:
    """The body of ``## heading`` up to the next heading of level 1 or 2, stripped."""
    text = path.read_text(encoding="utf-8")
    found = re.search(rf"^## {heading}\n(.*?)(?=^#{{1,2}} |\Z)", text, re.DOTALL | re.MULTILINE)
    assert found, f"{path} has no ## {heading}"
    return found.group(1).strip()


def _probe_yml() -> dict[str, Any]:
    data = YAML(typ="safe").load((CORPUS / ".headwater" / "probe.yml").read_text())
    assert isinstance(data, dict)
    return data


def _probes() -> dict[str, Path]:
    return {path.stem: path for path in sorted(SHELF.glob("*.md"))}


def _files() -> Iterator[Path]:
    return (path for path in sorted(CORPUS.rglob("*")) if path.is_file())


def _rel(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def _words(line: str) -> list[str]:
    """RC-13's normalisation, restated here: trim, one trailing period, casefold, split."""
    line = line.strip()
    return line.removesuffix(".").casefold().split()


def _scripts() -> dict[str, Script]:
    return {script.name: script for script in load_scripts(SCRIPTS, home="/home/runner")}


def _finals(script: Script) -> list[Turn]:
    """The last turn of each route through the script (one without branches has one)."""
    return [script.playbook(route)[-1][1] for route in script.routes()]


def _turns(script: Script) -> list[Turn]:
    """Every turn of the script, each once, over all its routes (every branch's alternative)."""
    seen: dict[int, Turn] = {}
    for route in script.routes():
        seen.update((id(turn), turn) for _, turn in script.playbook(route))
    return list(seen.values())


def _tool_uses(script: Script) -> list[ToolUseBlock]:
    return [b for t in _turns(script) for b in t.blocks if isinstance(b, ToolUseBlock)]


def test_probes_have_a_task_that_states_the_output_form() -> None:
    probes = _probes()
    assert len(probes) >= 4
    for probe_id, path in probes.items():
        front = _front(path)
        assert front["id"] == probe_id
        assert isinstance(front["title"], str) and front["title"]
        assert front["answers"] and all(isinstance(a, str) for a in front["answers"])
        for examined in front["examines"]:
            assert (CORPUS / examined).is_file(), f"{probe_id} examines missing {examined}"
        task = _section(path, "Task")
        assert "alone on the last line" in task
        assert not task.startswith("-")
        why = _section(path, "Why")
        assert why and why not in task


def test_probe_tasks_do_not_contain_each_other() -> None:
    tasks = {pid: _section(path, "Task") for pid, path in _probes().items()}
    for pid, task in tasks.items():
        for other, other_task in tasks.items():
            assert other == pid or other_task not in task


def test_probe_yml_declares_the_three_tiers_tools_and_model() -> None:
    config = _probe_yml()
    assert config["tiers"] == {
        "regression": {"arms": ["present"], "repetitions": 1},
        "campaign": {"arms": ["present", "absent"], "repetitions": 2},
        "documentation": {"arms": ["present"], "repetitions": 1},
    }
    assert (CORPUS / config["lock"]).is_file()
    assert config["lock"] == ".headwater/taxonomy.lock"
    assert config["tools"] == ["Read", "Grep", "Glob", "Write", "Edit", "Bash", "Skill"]
    assert config["model"] == "claude-opus-4-8"


def test_the_fold_names_its_probe_outside_docs_and_states_no_answer() -> None:
    folds = _probe_yml()["folds"]
    assert len(folds) == 1
    ((probe_id, paths),) = folds.items()
    front = _front(_probes()[probe_id])
    for rel in paths:
        assert not rel.startswith("docs/")
        text = (CORPUS / rel).read_text()
        assert f"docs/probes/{probe_id}.md" in text or front["title"] in text
        for answer in front["answers"]:
            assert answer.casefold() not in text.casefold()


def test_the_answer_key_exists_and_exactly_one_line_elsewhere_names_it() -> None:
    keys = _probe_yml()["answer_keys"]
    assert len(keys) == 1
    ((probe_id, paths),) = keys.items()
    assert probe_id in _probes()
    for rel in paths:
        assert rel.startswith("docs/") and not rel.startswith("docs/probes/")
        key = CORPUS / rel
        names = {rel, key.name, key.stem, _front(key)["id"]}
        lines = [
            (_rel(path), line)
            for path in _files()
            # The seal removes the shelf and .headwater/ from every workspace.
            if path != key and not _rel(path).startswith(".headwater/")
            for line in path.read_text().splitlines()
            if any(name in line for name in names)
        ]
        assert len(lines) == 1, lines
        assert lines[0][0].startswith("docs/notes/")


def test_the_workspace_layer_is_in_place() -> None:
    assert (CORPUS / "CLAUDE.md").is_file()
    settings = json.loads((CORPUS / ".claude" / "settings.json").read_text())
    (entry,) = settings["hooks"]["PreToolUse"]
    assert entry["matcher"] == "*"
    assert "log-tool-call.sh" in entry["hooks"][0]["command"]
    assert (CORPUS / ".claude" / "hooks" / "log-tool-call.sh").is_file()
    (skill,) = (CORPUS / ".claude" / "skills").glob("*/SKILL.md")
    front = _front(skill)
    assert front["name"] == skill.parent.name
    assert front["description"]


@pytest.mark.parametrize("log_dir", [True, False], ids=["log-dir", "no-log-dir"])
def test_the_hook_appends_one_line_per_call_with_sh_only(tmp_path: Path, log_dir: bool) -> None:
    settings = json.loads((CORPUS / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    env = {"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(CORPUS)}
    if log_dir:
        env["HEADWATER_LOG_DIR"] = str(tmp_path)
    event = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Read"}
    for tool in ("Read", "Grep"):
        payload = json.dumps({**event, "tool_name": tool, "tool_input": {"tool_name": "x"}})
        done = subprocess.run(
            ["/bin/sh", "-c", command], input=payload, env=env, capture_output=True, text=True
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    log = tmp_path / "hook.log"
    assert (log.read_text() if log_dir else log.exists()) == (
        "tool-call Read\ntool-call Grep\n" if log_dir else False
    )


def test_every_document_under_docs_has_a_unique_id_and_records_a_status() -> None:
    ids = [_front(path)["id"] for path in sorted((CORPUS / "docs").rglob("*.md"))]
    assert len(ids) == len(set(ids))
    records = sorted((CORPUS / "docs" / "decisions").glob("*.md"))
    assert 4 <= len(records) <= 6
    for record in records:
        assert re.search(r"^status: \w+", record.read_text(), re.MULTILINE), record
    assert len(list((CORPUS / "docs" / "specs").glob("*.md"))) in (1, 2)


def test_nothing_off_the_shelf_names_a_probe_except_its_fold() -> None:
    folds = _probe_yml()["folds"]
    for probe_id, path in _probes().items():
        title = _front(path)["title"].casefold()
        for other in _files():
            rel = _rel(other)
            if rel.startswith(("docs/probes/", ".headwater/")) or rel in folds.get(probe_id, []):
                continue
            text = other.read_text().casefold()
            assert probe_id.casefold() not in text and title not in text, (probe_id, rel)


def test_every_script_matches_exactly_one_probe_task() -> None:
    tasks = {pid: _section(path, "Task") for pid, path in _probes().items()}
    scripts = _scripts()
    assert set(scripts) == set(tasks)
    for name, script in scripts.items():
        assert [pid for pid, task in tasks.items() if script.match in task] == [name]


def test_scripts_stay_off_the_shelf_the_seal_and_the_answer_key() -> None:
    key = next(iter(_probe_yml()["answer_keys"].values()))[0]
    banned = ("docs/probes", ".headwater", "HW-PRB-", key, Path(key).name)
    for script in _scripts().values():
        for use in _tool_uses(script):
            text = json.dumps(use.input)
            assert not any(word in text for word in banned), (script.name, text)


def test_scripts_exercise_what_the_demo_shows() -> None:
    scripts = _scripts()
    uses = [use for script in scripts.values() for use in _tool_uses(script)]
    assert {"Read", "Grep", "Glob", "Write"} <= {use.name for use in uses}
    paths = [str(use.input["file_path"]) for use in uses if "file_path" in use.input]
    outside = [p for p in paths if p.startswith("/")]
    assert outside == ["/home/runner/.bashrc"]  # the one host read; fails under bwrap
    assert any(use.name == "Write" and use.input["file_path"] == "notes/summary.md" for use in uses)
    for script in scripts.values():
        assert script.model
        assert all(turn.usage.input_tokens and turn.usage.output_tokens for turn in _turns(script))


def test_final_lines_cover_the_answer_rule_cases() -> None:
    outcomes = {}
    for name, script in _scripts().items():
        for n, final in enumerate(_finals(script)):
            assert not any(isinstance(b, ToolUseBlock) for b in final.blocks)
            text = final.blocks[-1].model_dump()["text"]
            last = [line for line in text.split("\n") if line.strip()]
            answers = _front(SHELF / f"{name}.md")["answers"]
            matching = [a for a in answers if sorted(_words(a)) == sorted(_words(last[-1]))]
            exact = [a for a in answers if _words(a) == _words(last[-1])]
            outcomes[name, n] = ("reordered" if matching and not exact else "exact" if exact
                                 else "none")
    # HW-PRB-0001 has two routes (its branch), each ending in a reordered declared answer.
    assert sorted(outcomes.values()) == ["exact", "exact", "none", "reordered", "reordered"], (
        outcomes)


def _copy_sources(target: Path) -> Path:
    target.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, target / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for package in ("campaign", "recorder", "sandbox", "demo"):
        shutil.copytree(REPO / package, target / package, ignore=ignore)
    return target


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_carries_the_whole_example(tmp_path: Path) -> None:
    """Dot-directories are skipped by plain package-data globs unless named: check the wheel."""
    source = _copy_sources(tmp_path / "src")
    out = tmp_path / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), "."],
        cwd=source,
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_NO_INDEX": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = {
        f"demo/example/{path.relative_to(EXAMPLE).as_posix()}"
        for path in EXAMPLE.rglob("*")
        if path.is_file()
    }
    assert "demo/example/corpus/.headwater/probe.yml" in expected
    assert "demo/example/corpus/.claude/settings.json" in expected
    assert len([n for n in expected if n.endswith("SKILL.md")]) == 1
    assert len([n for n in expected if "/docs/probes/" in n]) >= 4
    assert len([n for n in expected if "/scripts/" in n]) >= 4
    assert expected - names == set()
