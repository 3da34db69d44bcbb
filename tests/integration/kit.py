"""Helpers of the confinement suites: a synthetic corpus, scripts, the CLI, and leak scans.

A corpus here is written by `write_corpus`: one tier ``regression`` (arm
present, one repetition), a document, and one probe per
attempt, each with a ``## Task`` holding a phrase its script matches
(docs/provider.md). Tool inputs in the scripts are absolute host paths the
test knows; the session runs them for real, under real bwrap, with the real CLI.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

REPO = Path(__file__).resolve().parents[2]
WEAKEN_DIR = REPO / "tests" / "integration" / "weaken"
"""On ``PYTHONPATH``, its sitecustomize weakens the runner (``HW_WEAKEN``) or instruments it."""
MODEL = "claude-opus-4-8"
SERVED_MODEL = "claude-opus-4-8-20261101"
TOOLS = ["Bash", "Read", "Edit", "Write", "Glob", "Grep"]
CLI_TIMEOUT_S = 600.0
"""Bound on one CLI call of these suites (a batch of a few real sessions takes ~20 s)."""


HOST_ROOT = Path("/var/tmp")
"""Where the suites put their host-side files: outside /tmp, whose paths RC-08 exempts from the
outside-paths count (the sandbox's /tmp is private), and outside $HOME (RC-06)."""


@contextlib.contextmanager
def host_dir(prefix: str) -> Iterator[Path]:
    """A fresh directory under `HOST_ROOT`, removed afterwards (whoever owns what is in it)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=HOST_ROOT))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_corpus(root: Path, tasks: Mapping[str, str], *, tools: Sequence[str] = TOOLS) -> Path:
    """A corpus whose probes are ``tasks`` (probe id -> task text), tier ``regression``."""
    config = {
        "tiers": {"regression": {"arms": ["present"], "repetitions": 1}},
        "tools": list(tools),
        "model": MODEL,
    }
    files = {
        ".headwater/probe.yml": json.dumps(config, indent=2) + "\n",
        "docs/guide.md": "---\nid: ESC-DOC-0001\n---\n\n# Guide\n\nNothing to see.\n",
    }
    for probe_id, task in tasks.items():
        front = json.dumps({"id": probe_id, "title": f"Attempt {probe_id}", "answers": [],
                            "examines": ["docs/guide.md"]})  # fmt: skip
        files[f"docs/probes/{probe_id}.md"] = (
            f"---\n{front}\n---\n\n# Attempt {probe_id}\n\n## Task\n\n{task}\n"
        )
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def bash(tool_id: str, command: str) -> dict[str, Any]:
    """A Bash tool_use block."""
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}


def not_a_bare_sleep(command: str) -> str:
    """``command`` (one that starts with a long ``sleep``) as the pinned CLI runs it.

    Claude Code 2.1.332 refuses a Bash command that starts with a long ``sleep`` before
    running it (``Blocked: standalone sleep 33.3171``, ``Blocked: sleep 61 followed by:
    echo finished``; ``sleep 10; echo x`` runs); 2.1.197 ran it. A harmless ``echo`` first
    makes it run, and the ``sleep N`` a test looks for is still in its command line."""
    return f"echo waiting; {command}"


def read(tool_id: str, path: str) -> dict[str, Any]:
    """A Read tool_use block."""
    return {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": path}}


def edit(tool_id: str, path: str) -> dict[str, Any]:
    """An Edit tool_use block (replacing text that is not there: it fails, and is produced)."""
    return {"type": "tool_use", "id": tool_id, "name": "Edit",
            "input": {"file_path": path, "old_string": "HW", "new_string": "hw"}}  # fmt: skip


def write_script(directory: Path, name: str, match: str, *turns: list[dict[str, Any]]) -> None:
    """One provider script: each of ``turns`` is a list of blocks; a final text turn is added."""
    body = {
        "match": match,
        "model": SERVED_MODEL,
        "turns": [*({"blocks": blocks} for blocks in turns),
                  {"blocks": [{"type": "text", "text": "done\nnothing"}]}],
    }  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(body, indent=1), encoding="utf-8")


def evidence(command: str, out: str) -> str:
    """``command``, its output and exit status appended to ``attempts/<out>`` in the workspace."""
    target = f"attempts/{out}"
    return f'mkdir -p attempts; {{ {command} ; }} >> {target} 2>&1; echo "rc=$?" >> {target}'


def cli(
    *args: str, env: Mapping[str, str], timeout: float = CLI_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """``python -m campaign ARGS`` with exactly ``env``; never raises for a status."""
    return subprocess.run(
        [sys.executable, "-m", "campaign", *args], capture_output=True, text=True,
        env=dict(env), timeout=timeout, check=False, cwd=REPO,
    )  # fmt: skip


def start_cli(*args: str, env: Mapping[str, str]) -> subprocess.Popen[str]:
    """``python -m campaign ARGS`` started in the background (own process group)."""
    return subprocess.Popen([sys.executable, "-m", "campaign", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(env), cwd=REPO,
                            start_new_session=True)  # fmt: skip


def base_env(**extra: str) -> dict[str, str]:
    """The runner's environment for these suites: ours minus the host's Claude settings."""
    dropped = ("CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(extra)
    return env


def final_list(batch: Path) -> list[dict[str, Any]]:
    """Every final ledger record of ``batch`` in ledger order: each field that is not None."""
    from campaign.batch._ledger import read_ledger
    from campaign.batch._records import FinalRecord

    return [r.model_dump(mode="json", exclude_none=True)
            for r in read_ledger(batch / "ledger.jsonl") if isinstance(r, FinalRecord)]


def finals(batch: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The last final ledger record of each (probe, session) of ``batch`` (as `final_list`)."""
    return {(r["probe"], r["session"]): r for r in final_list(batch)}


def regular_files(root: Path) -> Iterator[Path]:
    """Every regular file under ``root``, never through a symlink (a planted link is not read)."""
    for directory, _, names in os.walk(root, followlinks=False):
        for name in names:
            path = Path(directory) / name
            if path.is_file() and not path.is_symlink():
                yield path


def files_containing(root: Path, needle: str) -> list[Path]:
    """The regular files under ``root`` whose bytes contain ``needle``."""
    return [p for p in regular_files(root) if needle.encode() in p.read_bytes()]


def process_cmdlines() -> dict[int, str]:
    """pid -> cmdline (NULs as spaces) of every process we can see."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            found[int(entry.name)] = raw.replace(b"\0", b" ").decode("utf-8", "replace")
    return found


def processes_mentioning(*needles: str) -> dict[int, str]:
    """The processes whose cmdline contains any of ``needles`` (this process excluded)."""
    me = os.getpid()
    return {pid: cmd for pid, cmd in process_cmdlines().items()
            if pid != me and any(n in cmd for n in needles)}  # fmt: skip


def processes_under(root: Path) -> dict[int, str]:
    """The processes whose cmdline names ``root`` or whose working directory is under it.

    A session's bwrap names its batch directory on its command line; the harness,
    the egress bridge (socat) and whatever they start work in its workspace. Other
    sessions on the host (other batches, other test runs) match neither.
    """
    me = os.getpid()
    found: dict[int, str] = {}
    for pid, cmd in process_cmdlines().items():
        if pid == me:
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            cwd = ""
        if str(root) in cmd or cwd == str(root) or cwd.startswith(str(root) + "/"):
            found[pid] = cmd
    return found


def wait_for(predicate: Any, *, timeout_s: float, what: str) -> Any:
    """Poll ``predicate()`` every 50 ms until truthy; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILL each of ``pids`` (test cleanup); one that has gone meanwhile is not an error."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL a background CLI's whole group (test cleanup); reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)


def ledger_dicts(batch: Path) -> list[dict[str, Any]]:
    """Every ledger record of ``batch`` in order, as dicts of its fields that are not None."""
    from campaign.batch._ledger import read_ledger

    return [r.model_dump(mode="json", exclude_none=True)
            for r in read_ledger(batch / "ledger.jsonl")]


STANDIN_WRITERS: Final = r"""
def out(obj):
    data = memoryview(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    while data:
        data = data[os.write(1, data):]


def call(n, name, tool_input):
    out({"type": "assistant", "parent_tool_use_id": None, "message": {
        "id": "m%d" % n, "model": "claude-test-model", "content": [
            {"type": "tool_use", "id": "t%d" % n, "name": name, "input": tool_input}]}})
    out({"type": "user", "parent_tool_use_id": None, "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t%d" % n, "content": "ok"}]}})
"""
"""Python for a stand-in harness (it imports json and os): ``out(obj)`` prints one stdout
line whole however large, ``call(n, name, input)`` a tool_use and its tool_result."""


def write_harness(path: Path, text: str) -> Path:
    """Write the stand-in harness ``text`` (a whole script) at ``path``, executable."""
    path.write_text(text)
    path.chmod(0o755)
    return path


def run_scripted(root: Path, corpus: Path, harness: Path, *args: str) -> \
        subprocess.CompletedProcess[str]:
    """``run`` of ``corpus``'s regression tier into ``root/batch`` with the stand-in
    ``harness``, one session at a time and no retries, against a scripted provider no
    stand-in calls (its one script matches no task)."""
    write_script(root / "scripts", "unused", "no task says this")
    return cli("run", str(corpus), "--tier", "regression", "--batch-dir", str(root / "batch"),
               "--harness", str(harness), "--provider", "scripted", "--scripts",
               str(root / "scripts"), "--concurrency", "1", "--retries", "0", *args,
               env=base_env())
