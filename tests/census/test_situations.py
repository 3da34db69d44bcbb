"""Situation directories: format 1 read, refused in words when broken; the harness command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from census import (
    SituationError,
    build_parser,
    harness_argv,
    load_situation,
    load_situations,
    main,
    printed_versions,
)

SITUATIONS = Path(__file__).resolve().parent.parent / "fixtures" / "census" / "situations"


def _situation(root: Path, folder: str, **changes: object) -> Path:
    directory = root / folder
    (directory / "scripts").mkdir(parents=True)
    (directory / "workspace").mkdir()
    body: dict[str, object] = {"format": 1, "name": folder, "shows": "x", "prompt": "Hi",
                               "args": ["--permission-mode", "dontAsk"], "env": {},
                               "stop": None, "mounts": [], "timeout_s": 30,
                               "best_effort": False}
    body.update(changes)
    (directory / "situation.json").write_text(json.dumps(body))
    return directory


def test_every_committed_situation_reads() -> None:
    loaded = load_situations(SITUATIONS)
    assert {"a_read_answer", "b_write_edit", "c_bash"} <= {s.name for s in loaded}
    assert all(s.scripts.is_dir() for s in loaded)


def test_the_harness_command_is_the_stream_flags_then_the_situation_s_own(tmp_path: Path) -> None:
    loaded = load_situation(_situation(tmp_path, "s1"))
    assert harness_argv(loaded) == ["/opt/harness/claude", "-p", "Hi", "--output-format",
                                    "stream-json", "--verbose", "--permission-mode", "dontAsk"]
    quiet = load_situation(_situation(tmp_path, "s2", omit_verbose=True))
    assert "--verbose" not in harness_argv(quiet)


@pytest.mark.parametrize(("changes", "message"), [
    ({"name": "other"}, "not its directory's"),
    ({"format": 2}, "format"),
    ({"surprise": 1}, "surprise"),
    ({"stop": {"signal": "SIGHUP", "after_s": 1}}, "signal"),
    ({"mounts": [{"fixture": "../x", "at": "/opt/x"}]}, "path inside the situation"),
    ({"mounts": [{"fixture": "missing.py", "at": "/opt/x"}]}, "missing"),
])
def test_a_broken_situation_is_refused_naming_the_rule(tmp_path: Path, changes: dict[str, object],
                                                       message: str) -> None:
    with pytest.raises(SituationError, match=message):
        load_situation(_situation(tmp_path, "s1", **changes))


def test_an_unknown_name_and_an_empty_root_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SituationError, match="no situation there"):
        load_situations(tmp_path)
    _situation(tmp_path, "s1")
    with pytest.raises(SituationError, match="no situation named nope"):
        load_situations(tmp_path, ["nope"])


def test_the_command_exits_2_naming_situations_it_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["2.1.332", "--situations", str(tmp_path), "--no-write"]) == 2
    assert "no situation there" in capsys.readouterr().err


def test_help_teaches_what_it_prints_and_its_exit_statuses() -> None:
    text = build_parser().format_help()
    for phrase in ("NEW or GONE", ".harness-census/RELEASE/", "not decided", "exit status",
                   "make census CENSUS_VERSION=2.1.332", "--captures"):
        assert phrase in text


def test_the_release_a_replay_printed_is_read_from_its_init_lines() -> None:
    streams = [b'{"type":"system","subtype":"init","claude_code_version":"2.1.332"}\n'
               b'{"type":"result","subtype":"success"}\n',
               b'not json "init"\n{"type":"system","subtype":"init","claude_code_version":"2.1.9"}',
               b'{"type":"assistant","message":{"content":"init"}}\n']
    assert printed_versions(streams) == {"2.1.332", "2.1.9"}


def test_streams_of_another_release_are_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s1.jsonl").write_bytes(
        b'{"type":"system","subtype":"init","claude_code_version":"2.1.332"}\n')
    assert main(["2.1.197", "--streams", str(tmp_path), "--no-write"]) == 2
    assert "not of 2.1.197" in capsys.readouterr().err
    assert main(["2.1.332", "--streams", str(tmp_path), "--no-write"]) in (0, 1)


def test_a_release_whose_init_line_lists_an_unseen_capability_does_not_pass(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The recorder refuses every session whose init line lists a capability it does not know
    (RC-07), so the census of such a release must not say it passes: the committed 2.1.332
    stream passes, the same stream with one capability more does not, and names it."""
    import json

    stream = Path(__file__).resolve().parents[1] / "fixtures" / "captures-2.1.332" / "c_bash.jsonl"
    (tmp_path / "c_bash.jsonl").write_bytes(stream.read_bytes())
    assert main(["2.1.332", "--streams", str(tmp_path), "--no-write"]) == 0
    lines = []
    for raw in stream.read_text().splitlines():
        obj = json.loads(raw)
        if obj.get("type") == "system" and obj.get("subtype") == "init":
            obj["capabilities"] = [*obj["capabilities"], "brand_new_widening_v1"]
        lines.append(json.dumps(obj))
    (tmp_path / "c_bash.jsonl").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["2.1.332", "--streams", str(tmp_path), "--no-write"]) == 1
    said = capsys.readouterr().out
    assert "brand_new_widening_v1" in said and "does not pass" in said
