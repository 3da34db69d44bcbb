"""What a session sent reaches the operator's terminal as text only, and its JSON as strict JSON.

One batch is made by two real ``record`` runs (real bwrap) of a stand-in harness whose
strings carry terminal attacks: ``ESC ] 0 ; title BEL`` (retitle), ``ESC [ 2 J`` (clear),
``ESC ] 52 ; c ; ... BEL`` (write the clipboard), CSI and OSC as C1 bytes (0x9b, 0x9d),
a carriage return, DEL, U+2028, rich markup (``[bold]``, ``[link=...]``), and a newline
followed by a ``FORGED-...`` line. They sit in its ``--version`` line, the init line's
``claude_code_version`` and a key of it no decision names, the served ``message.model``, a
tool name, a Write path (a file the stand-in creates under that name), the final text, the
result's subtype and text (a harness-error reason quotes them) and a permission denial's
tool name. The stand-in also creates ``\\xff\\xfe.txt``, a name that is not UTF-8, and
names it in a Write (``"\\udcff\\udcfe.txt"`` in its JSON); ``record --produced`` names
another such file.

Rule (docs/cli.md, "What a session wrote, on the terminal"): every command that prints
(``record``, ``run``'s progress and closing lines, ``show`` of each session and of a
session the batch lacks, ``status``, ``report``, ``report --side-by-side`` of two batches,
``retranscribe``, ``check-transcript``) writes,
off a terminal, no byte below 0x20 but ``\\n`` and ``\\t``, no DEL, no C1, no U+2028,
and no line that starts with what only the session wrote; rich markup a session sent
shows as written. With ``FORCE_COLOR`` the only escape sequences are SGR (``ESC [ ... m``)
ones (and, for ``record``'s live view, its cursor moves). Rule (docs/batch.md, "Names
that are not UTF-8"): the ledger, ``status --json`` and ``report --json`` are UTF-8 JSON
a strict reader takes (no lone surrogate escape), and the two names read ``\\xff\\xfe.txt``
and ``\\xfe\\xff-extra.txt``.

Seen red: `campaign._terminal_text.one_line` and `block` returning their input (control
bytes in ``show`` of each session, ``status``, ``report``, ``report --side-by-side``,
``record`` and ``run``; forged lines in ``show``, ``record`` and ``run``);
`campaign._terminal_text.cell` returning a ``str`` (``status``'s failures table drops the
``[bold]`` a session sent); `campaign._json_text.json_text` returning its input (the
ledger holds ``\\udcff``, which a strict encoder refuses).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration import kit
from tests.integration.test_record_standins import (
    PROBE,
    READ,
    STANDIN_WORKSPACE,
    WIDENING_CLEAN,
    init,
    line,
    make_corpus,
    tool_result,
    tool_use,
)

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

ATTACK = ("[bold]MK[/bold][link=evil.example]LK[/link]"
          "\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b]52;c;UFdORUQ=\x07\x9b31m\x9d0;T\x9c\r\x7f\u2028")
"""Markup first (a reason is cut at 100 characters in the failures table), then controls."""


def forged(where: str) -> str:
    """A hostile value for ``where``: the attack, then a newline and a line of its own."""
    return f"{where}{ATTACK}\nFORGED-{where}"


ODD_NAME = b"\xff\xfe.txt"
EXTRA_NAME = b"\xfe\xff-extra.txt"
HOSTILE_PATH = forged("path").replace("/", "-") + ".md"
"""A file name: the attack without its slashes."""

STANDIN = '''#!/usr/bin/python3
import os, sys
if sys.argv[1:] == ["--version"]:
    sys.stdout.write(VERSION)
    sys.exit(0)
for name in NAMES:
    with open(name, "wb") as fp:
        fp.write(b"x\\n")
os.write(1, STREAM)
'''


def write_attacker(path: Path, stream: bytes) -> Path:
    """A stand-in that creates the hostile and non-UTF-8 files, then prints ``stream``."""
    text = (STANDIN.replace("VERSION", repr(forged("version") + "\n"))
            .replace("NAMES", repr([HOSTILE_PATH.encode(), ODD_NAME, EXTRA_NAME]))
            .replace("STREAM", repr(stream)))
    return kit.write_harness(path, text)


def ascii_line(obj: dict[str, Any]) -> bytes:
    """One stream line as ASCII JSON: a lone surrogate as its ``\\udcff`` escape."""
    return json.dumps(obj).encode() + b"\n"


def answered_stream() -> bytes:
    """Recorded: a Read, the two Writes, the hostile served model and final text."""
    model = forged("model")
    final = ("Found it." + ATTACK + "\nFORGED-final\ttab\n" + "HW-DR-0052")
    widening = {k: v for k, v in WIDENING_CLEAN.items() if k != "claude_code_version"}
    return (init(claude_code_version=forged("ccv"), **widening, **{forged("initkey"): 1}) + READ
            + tool_use("w1", "Write", {"file_path": HOSTILE_PATH, "content": "x"}, msg="m3")
            + tool_result("w1", "ok")
            + ascii_line({"type": "assistant", "parent_tool_use_id": None, "message": {
                "id": "m4", "model": "claude-test-model", "content": [{
                    "type": "tool_use", "id": "w2", "name": "Write",
                    "input": {"file_path": os.fsdecode(ODD_NAME), "content": "x"}}]}})
            + tool_result("w2", "ok")
            + line({"type": "assistant", "parent_tool_use_id": None, "message": {
                "id": "m2", "model": model, "content": [{"type": "text", "text": final}]}})
            + line({"type": "result", "subtype": "success", "is_error": False,
                    "api_error_status": None, "num_turns": 2, "result": "done",
                    "total_cost_usd": 0.01}))


SUBTYPE = "[bold]MK[/bold]\x1b[2J\x9b1m\nFORGED-subtype"
"""Short: the failures table shows a reason's first 100 characters, so all of it shows."""


def failed_stream() -> bytes:
    """harness-error: a hostile tool name, subtype, result text and denial."""
    return (init() + READ
            + tool_use("b1", forged("tool"), {"command": forged("command")}, msg="m5")
            + tool_result("b1", "ok")
            + line({"type": "result", "subtype": SUBTYPE, "is_error": True,
                    "api_error_status": None, "num_turns": 2, "result": forged("result"),
                    "total_cost_usd": 0.01,
                    "permission_denials": [{"tool_name": forged("denied")}]}))


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m campaign ARGS``, stdout and stderr as bytes."""
    full = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    full.update({"HW_STANDIN_KEY": "sk-standin-not-a-secret", **(env or {})})
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          env=full, timeout=180, check=False, cwd=kit.REPO)


def record(corpus: Path, batch: Path, harness: Path, *extra: str,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return run("record", "--corpus", str(corpus), "--probe", PROBE, "--arm", "present",
               "--batch-dir", str(batch), "--harness", str(harness),
               "--provider-url", "http://127.0.0.1:9", "--api-key-env", "HW_STANDIN_KEY",
               "--workspace-path", STANDIN_WORKSPACE, *extra, env=env)


_PLAIN_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_SGR = re.compile("\x1b\\[[0-9;]*m")
_LIVE = re.compile("\x1b\\[\\?25[lh]|\x1b\\[2K|\x1b\\[1A|\r")
"""What rich's live view writes on a terminal to redraw (record under FORCE_COLOR)."""


def terminal_faults(what: str, data: bytes, *, live: bool = False) -> list[str]:
    """What in ``data`` (a command's stdout or stderr) the session, not the product, wrote."""
    text = data.decode("utf-8")  # strict: a lone surrogate or a bare byte fails here
    text = _SGR.sub("", text)
    if live:
        text = _LIVE.sub("", text)
    faults = [f"{what}: control {m.group()!r} at {m.start()}: "
              f"{text[max(0, m.start() - 40):m.start() + 20]!r}"
              for m in _PLAIN_CONTROLS.finditer(text)]
    faults += [f"{what}: forged line {ln!r}" for ln in text.split("\n")
               if ln.lstrip().startswith("FORGED")]
    if text.count("MK") != text.count("[bold]MK"):
        faults.append(f"{what}: rich markup a session sent was interpreted")
    if "LK" in text and "[link=evil.example]" not in text:
        faults.append(f"{what}: a link a session sent was interpreted")
    return faults


def strict_json_faults(what: str, data: bytes) -> list[str]:
    """A strict reader's complaints about ``data`` (one JSON document, or JSON lines)."""
    faults = []
    for n, raw in enumerate(data.splitlines() if what.endswith("ledger") else [data], 1):
        try:
            value = json.loads(raw.decode("utf-8"))
            json.dumps(value, ensure_ascii=False).encode("utf-8")  # no lone surrogate
        except (UnicodeError, ValueError) as exc:
            faults.append(f"{what}:{n}: {exc}")
        if re.search(rb"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}", raw):
            faults.append(f"{what}:{n}: a surrogate escape a strict reader refuses")
    return faults


def strings_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return [value] if isinstance(value, str) else []


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The batch of the two hostile sessions, and the output of each ``record``."""
    root = tmp_path_factory.mktemp("terminal")
    corpus = make_corpus(root / "corpus")
    batch = root / "b"
    outputs: dict[str, subprocess.CompletedProcess[bytes]] = {}
    try:
        harness = write_attacker(root / "claude", answered_stream())
        outputs["record answered"] = record(corpus, batch, harness,
                                            "--produced", os.fsdecode(EXTRA_NAME))
        harness = write_attacker(root / "claude", failed_stream())
        outputs["record failed"] = record(corpus, batch, harness)
        outputs["record failed, colour"] = record(corpus, batch, harness,
                                                  env={"FORCE_COLOR": "1"})
        # run: its progress lines, its closing table and notices (one session, no retry)
        run_root = root / "run"
        run_corpus = kit.write_corpus(run_root / "corpus", {"HW-RUN-0001": "do it."},
                                      tools=["Read", "Bash", "Write"])
        kit.write_script(run_root / "scripts", "unused", "no task says this")
        outputs["run"] = run(
            "run", str(run_corpus), "--tier", "regression", "--batch-dir",
            str(run_root / "batch"), "--harness", str(harness), "--provider", "scripted",
            "--scripts", str(run_root / "scripts"), "--concurrency", "1", "--retries", "0",
            "--workspace-path", STANDIN_WORKSPACE, env={"NO_COLOR": "1"})
    finally:
        kit.kill_all(kit.processes_under(root))
    shutil.copytree(batch, root / "b2", symlinks=True)  # a second batch, for side by side
    return {"root": root, "corpus": corpus, "batch": batch, "records": outputs}


def sessions(batch: Path) -> dict[str, dict[str, Any]]:
    return {r["session"]: r for r in kit.ledger_dicts(batch) if r["kind"] == "final"}


def test_the_hostile_sessions_are_recorded_as_sent(hostile: dict[str, Any]) -> None:
    """The premise: the attack reached the ledger (else the rest proves nothing)."""
    runs = hostile["records"]
    assert runs["record answered"].returncode == 0, runs["record answered"].stderr[-2000:]
    assert runs["record failed"].returncode == 1, runs["record failed"].stderr[-2000:]
    assert b"FORGED-result" in runs["run"].stderr, runs["run"].stderr[-2000:]
    finals = sessions(hostile["batch"])
    assert [f["state"] for f in finals.values()] == ["recorded", "harness-error",
                                                     "harness-error"]
    first = next(iter(finals.values()))
    assert first["served_model"] == forged("model")
    paths = [a["path"] for a in first["event"]["produced"]]
    assert HOSTILE_PATH in paths


def commands(hostile: dict[str, Any]) -> dict[str, list[str]]:
    batch = str(hostile["batch"])
    shown = {f"show {name}": ["show", batch, "present", PROBE, name]
             for name in sessions(hostile["batch"])}
    return {**shown,
            "show missing": ["show", batch, "present", PROBE, "r99"],
            "status": ["status", batch],
            "report": ["report", batch],
            "report side by side": ["report", "--side-by-side", batch,
                                    str(hostile["root"] / "b2")],
            "check-transcript": ["check-transcript",
                                 str(hostile["batch"] / "transcripts" / "present.md")],
            "retranscribe": ["retranscribe", batch, "--corpus", str(hostile["corpus"])]}


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "force-colour"])
def test_no_command_prints_what_the_session_wrote_as_a_control(
        hostile: dict[str, Any], colour: bool) -> None:
    faults = []
    env = {"FORCE_COLOR": "1"} if colour else {"NO_COLOR": "1"}
    for name, proc in hostile["records"].items():
        if ("colour" in name) == colour:
            for stream, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                faults += terminal_faults(f"{name} {stream}", data, live=colour)
    for name, argv in commands(hostile).items():
        proc = run(*argv, env=env)
        assert proc.returncode == (2 if name == "show missing" else 0), (name, proc.stderr)
        if name.startswith("show r"):
            assert b"FORGED-" in proc.stdout, name  # the values are there, escaped
        for stream, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            faults += terminal_faults(f"{name} {stream}", data)
    assert faults == []


def test_show_writes_each_value_escaped_on_its_own_line(hostile: dict[str, Any]) -> None:
    """The escape is the documented one: ``\\x1b``, ``\\n``, ``\\u2028``; the final text keeps
    its lines, each behind ``    | ``, and its tab."""
    finals = sessions(hostile["batch"])
    name = next(iter(finals))
    out = run("show", str(hostile["batch"]), "present", PROBE, name).stdout.decode()
    attack = ("[bold]MK[/bold][link=evil.example]LK[/link]\\x1b]0;PWNED-TITLE\\x07"
              "\\x1b[2J\\x1b]52;c;UFdORUQ=\\x07\\x9b31m\\x9d0;T\\x9c\\r\\x7f\\u2028")
    assert f"served model model{attack}\\nFORGED-model;" in out
    assert f"  produced: path{attack.replace('/', '-')}\\nFORGED-path.md cites" in out
    assert "    | FORGED-final\ttab\n" in out
    # an init key no decision names: cut at 64 characters, marked with its length
    assert ("  init keys not decided (1): initkey[bold]MK[/bold][link=evil.example]LK[/link]"
            f"\\x1b]0;PWNED-TITL... ({len(forged('initkey'))} characters): ") in out
    assert f"    | Found it.{attack}\n" in out


def test_names_that_are_not_utf8_reach_json_as_strict_json(hostile: dict[str, Any]) -> None:
    batch = hostile["batch"]
    faults = strict_json_faults("ledger", (batch / "ledger.jsonl").read_bytes())
    outputs = {}
    for name, argv in {"status --json": ["status", str(batch), "--json"],
                       "report --json": ["report", str(batch), "--json"]}.items():
        proc = run(*argv)
        assert proc.returncode == 0, proc.stderr[-2000:]
        faults += strict_json_faults(name, proc.stdout)
        outputs[name] = json.loads(proc.stdout)
    assert faults == []
    first = next(iter(sessions(batch).values()))
    produced = [a["path"] for a in first["event"]["produced"]]
    assert "\\xff\\xfe.txt" in produced and "\\xfe\\xff-extra.txt" in produced
    assert all("\\udc" not in s for s in strings_in(outputs["report --json"]))
