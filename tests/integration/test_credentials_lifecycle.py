"""The config directory's lifecycle: private, never a credential in it, gone when the session ends.

A session's config directory (``/var/tmp/headwater-campaign/cfg/<pid>-<name>-<random>``
or the attempt's own store, 0700, owned by the session user when the runner is root)
receives no copy of the host's ``.credentials.json``: the provider gateway holds the
credential outside the sandbox (RC-03; docs/gateway.md), even when the host has a login
file. It is removed however the session ends: success, refusal, timeout, cancellation.
A runner killed with SIGKILL cannot remove it; the next start of any command (run, demo,
record, doctor) removes it and says so (a directory an older runner left may still hold
a copy). One test per way of ending.

The in-process tests drive `campaign.supervisor._session.run_attempt` (the real driver)
with the real CLI and the scripted provider; a watcher thread looks at the
config root from outside while the session runs. The SIGKILL test runs
``record`` with a stand-in harness (a real credentials *file* is copied, and
the real CLI would try to use it as an OAuth login).

Seen red by copying the login file into the directory again (every ``saw_private_dir``
assertion fails) and by a sweep that removes nothing (the killed runner's directory
survives the next start).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import anyio
import pytest

from campaign.batch._journal import Journal
from campaign.corpus._corpus import load_corpus
from campaign.plan._plan import compose_plan
from campaign.seal import resolve_sessions
from campaign.supervisor._session import BatchContext, run_attempt
from campaign.supervisor._spec import SessionSpec
from demo import ScriptedProvider, load_scripts
from sandbox import CONFIG_ROOT, Credentials, session_pool
from sandbox._errors import ContainmentUnavailable
from sandbox._layout import measure_host_layout
from sandbox._owner import runner_tag
from sandbox.gateway import Upstream, open_upstream
from sandbox.storage import STORE_ROOT
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.timeout(300)]

CREDS = b'{"claudeAiOauth": {"accessToken": "lifecycle-placeholder-token"}}'
KEY = "sk-lifecycle-placeholder"
POLL_S = 0.01
TASKS = {
    "LIFE-OK": "lifecycle: look at your own config directory",
    "LIFE-SLOW": "lifecycle: a command slower than the session's limit",
}
SLOW_SLEEP = "sleep 33.3171"
"""A duration no other process on the host uses, to find the slow session's command."""
STAT_CFG = (
    'mkdir -p attempts; stat -c "%a %u %g" "$CLAUDE_CONFIG_DIR" > attempts/cfg.txt; '
    'ls -A "$CLAUDE_CONFIG_DIR" >> attempts/cfg.txt'
)


def _owners() -> set[tuple[int, int]]:
    """Who may own a session's files: a user of the session pool for a root runner (the one
    its lease gave it), else the runner."""
    pool = session_pool()
    if pool is not None:
        return {(user.uid, user.gid) for user in pool.users}
    return {(os.geteuid(), os.getegid())}


@dataclass
class Watch:
    """Polls the config root from outside for one session's directory while it runs."""

    prefix: str
    seen: list[tuple[Path, int, int, int, bool]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _poll(self) -> None:
        while not self._stop.is_set():
            for path in self.dirs():
                try:
                    d = path.stat()
                except OSError:
                    continue
                copied = (path / ".credentials.json").exists()
                self.seen.append((path, stat.S_IMODE(d.st_mode), d.st_uid, d.st_gid, copied))
            time.sleep(POLL_S)

    def dirs(self) -> list[Path]:
        """The session's config directory: in the attempt's own store for a root runner (its
        mounts then show no host path), else under the shared config root."""
        return _config_dirs(self.prefix, os.getpid())

    def __enter__(self) -> Watch:
        assert self.dirs() == []
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def saw_private_dir(self) -> bool:
        """The directory was seen, always 0700 and the session's, never with a credentials
        file in it."""
        owners = {(du, dg) for _, _, du, dg, _ in self.seen}
        return bool(self.seen) and len(owners) == 1 and owners <= _owners() and all(
            dm == 0o700 and not copied for _, dm, _, _, copied in self.seen)


@dataclass(frozen=True)
class Setup:
    root: Path
    ctx: BatchContext
    """Its ``upstream`` is opened per run (`_run`), over ``provider_url`` and ``credentials``."""
    provider_url: str
    credentials: Credentials


@pytest.fixture
def setup(bwrap: str, harness: Path) -> Iterator[Setup]:
    with kit.host_dir("hw-life-") as root:
        (root / "home").mkdir()
        creds = root / "home" / ".credentials.json"
        creds.write_bytes(CREDS)
        corpus = load_corpus(kit.write_corpus(root / "corpus", TASKS))
        kit.write_script(root / "scripts", "LIFE-OK", TASKS["LIFE-OK"], [kit.bash("t1", STAT_CFG)])
        kit.write_script(root / "scripts", "LIFE-SLOW", TASKS["LIFE-SLOW"],
                         [kit.bash("t1", kit.not_a_bare_sleep(SLOW_SLEEP))])  # fmt: skip
        (root / "batch").mkdir()
        plan = compose_plan(corpus, tier="regression")
        sessions = resolve_sessions(corpus, plan.probes, plan.arm_specs)
        with ScriptedProvider(load_scripts(root / "scripts")) as provider:
            ctx = BatchContext(
                batch=root / "batch", corpus=corpus, plan=plan, sessions=sessions,
                harness_path=harness, bwrap=bwrap,
                upstream=cast(Upstream, None),  # opened per run: _run
                layout=measure_host_layout(),
                session_timeout_s=120.0, watchdog_s=60.0, post_result_grace_s=30.0, invocation=1,
                workspace_path="/workspace/corpus",
            )  # fmt: skip
            yield Setup(root, ctx, provider.url,
                        Credentials(credentials_file=creds, api_key_env=None, api_key=None))


def _spec(setup: Setup, probe: str, session: str = "s1") -> SessionSpec:
    plan = setup.ctx.plan
    return SessionSpec(probe=next(p for p in plan.probes if p.id == probe),
                       arm=plan.arm_spec("present"), repetition=1, session=session)


def _config_dirs(prefix: str, pid: int) -> list[Path]:
    """Config directories of runner ``pid``: ``<store>/fs/config`` of its stores (tagged
    ``<pid>.<start>-``), and ``<prefix>*`` under the shared config root."""
    found = sorted(STORE_ROOT.glob(f"{pid}.*/fs/config")) if STORE_ROOT.is_dir() else []
    return found + (sorted(CONFIG_ROOT.glob(prefix + "*")) if CONFIG_ROOT.is_dir() else [])


def _prefix(probe: str, session: str = "s1") -> str:
    """This runner's config directories: every session's is named alike, ``<runner
    tag>-session-`` (blind sessions: its name carries no arm, probe or session), and these
    tests run one session at a time."""
    return f"{runner_tag()}-session-"


async def _run(setup: Setup, spec: SessionSpec, ctx: BatchContext | None = None) -> str:
    context = ctx or setup.ctx
    async with open_upstream(setup.provider_url, setup.credentials) as upstream:
        context = dataclasses.replace(context, upstream=upstream)
        with Journal(setup.root / "batch", context.plan, planned=(), network="host",
                     provider_note="Provider: scripted.") as journal:
            record = await run_attempt(spec, 1, context, journal)
    return record.state


@pytest.mark.anyio
async def test_success_removes_the_config_directory(setup: Setup) -> None:
    with Watch(_prefix("LIFE-OK")) as watch:
        state = await _run(setup, _spec(setup, "LIFE-OK"))
    assert state == "recorded"
    assert watch.saw_private_dir(), watch.seen[:3]
    assert watch.dirs() == []
    inside = (setup.root / "batch/sessions/present/LIFE-OK/s1/workspace/attempts/cfg.txt")
    directory, *entries = inside.read_text().splitlines()
    mode, uid, gid = directory.split()
    assert mode == "700" and (int(uid), int(gid)) in _owners()
    assert ".credentials.json" not in entries, entries


@pytest.mark.anyio
async def test_refusal_removes_the_config_directory(setup: Setup, tmp_path: Path) -> None:
    """a host skill directory named like a skill the harness lists refuses the session."""
    (tmp_path / "skills" / "simplify").mkdir(parents=True)
    ctx = dataclasses.replace(setup.ctx, host_skill_dirs=(tmp_path / "skills",))
    with Watch(_prefix("LIFE-OK")) as watch:
        state = await _run(setup, _spec(setup, "LIFE-OK"), ctx)
    assert state == "refused-init"
    assert watch.saw_private_dir()
    assert watch.dirs() == []


@pytest.mark.anyio
async def test_a_sandbox_the_host_cannot_contain_is_refused_and_removes_the_config_directory(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No cgroup for the sandbox (here: its creation refused): refused-confinement before the
    harness starts (nothing spent), and the directory made for it is gone."""

    def no_cgroup(host: object, label: str, limits: object = None) -> None:
        raise ContainmentUnavailable("no cgroup here (test)", "none")

    monkeypatch.setattr("sandbox.confined._open.open_session_cgroup", no_cgroup)
    async with open_upstream(setup.provider_url, setup.credentials) as upstream:
        ctx = dataclasses.replace(setup.ctx, upstream=upstream)
        with Watch(_prefix("LIFE-OK")) as watch, Journal(
                setup.root / "batch", setup.ctx.plan, planned=(), network="host",
                provider_note="Provider: scripted.") as journal:
            record = await run_attempt(_spec(setup, "LIFE-OK"), 1, ctx, journal)
    assert (record.state, record.cost_usd) == ("refused-confinement", None)
    assert "no cgroup here" in record.reason and record.cost_known is True
    assert watch.dirs() == []


@pytest.mark.anyio
async def test_timeout_removes_the_config_directory(setup: Setup) -> None:
    ctx = dataclasses.replace(setup.ctx, session_timeout_s=8.0)
    with Watch(_prefix("LIFE-SLOW")) as watch:
        state = await _run(setup, _spec(setup, "LIFE-SLOW"), ctx)
    assert state == "timed-out"
    assert watch.saw_private_dir()
    assert watch.dirs() == []
    assert kit.processes_mentioning(SLOW_SLEEP) == {}


@pytest.mark.anyio
async def test_cancellation_removes_the_config_directory(setup: Setup) -> None:
    with Watch(_prefix("LIFE-SLOW", "s2")) as watch:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, setup, _spec(setup, "LIFE-SLOW", "s2"))
            await anyio.to_thread.run_sync(lambda: kit.wait_for(
                lambda: kit.processes_mentioning(SLOW_SLEEP), timeout_s=120,
                what="the slow session's sleep"))  # fmt: skip
            tg.cancel_scope.cancel()
    assert watch.saw_private_dir()
    assert watch.dirs() == []
    assert kit.processes_mentioning(SLOW_SLEEP) == {}
    final = kit.finals(setup.root / "batch")[("LIFE-SLOW", "s2")]
    assert final["state"] == "killed"
    assert "the runner stopped" in final["reason"]
    assert final["counts"] is False  # an attempt the runner ended is not held against --retries


STANDIN = """#!/usr/bin/python3
# Stand-in harness (tests/integration/test_credentials_lifecycle.py): prints an init line, waits.
import json, os, sys, time
if "--version" in sys.argv:
    print("2.1.197 (Claude Code)")
    sys.exit(0)
print(json.dumps({"type": "system", "subtype": "init", "cwd": os.getcwd(),
                  "session_id": "stand-in", "tools": [], "mcp_servers": [], "model": "m",
                  "permissionMode": "dontAsk", "skills": [], "plugins": [], "memory_paths": {},
                  "claude_code_version": "2.1.197"}), flush=True)
time.sleep(60)
"""


ATTEMPTS = 3
"""Other runners on this host sweep the same config root: when one of them removes our
left-over first, our command cannot say so, and the scenario is tried again."""


def _said(stderr: str, left: Path) -> bool:
    """The start named the left-over: its config directory, or the store that held it."""
    named = re.findall(r"(?:removed a session config directory|ended and removed what) "
                       r"(?:left by )?a killed runner(?: left)?: (\S+)", stderr)
    return any(str(left) == n or str(left).startswith(n + "/") for n in named)


def _left_over(pid: int) -> list[Path]:
    return _config_dirs(f"{pid}-session-", pid)


def test_a_runner_killed_by_sigkill_leaves_a_directory_the_next_start_removes_and_names(
    setup: Setup,
) -> None:
    root = setup.root
    standin = root / "stand-in"
    standin.write_text(STANDIN)
    standin.chmod(0o755)
    env = kit.base_env(HOME=str(root / "home"), CLAUDE_CONFIG_DIR=str(root / "home"))
    for _ in range(ATTEMPTS):
        left, stderr = _kill_a_runner_then_start_doctor(root, standin, env)
        if _said(stderr, left) or left.exists():
            break
    assert _said(stderr, left), stderr
    assert not left.exists()


def _kill_a_runner_then_start_doctor(
    root: Path, standin: Path, env: dict[str, str]
) -> tuple[Path, str]:
    runner = kit.start_cli(
        "record", "--corpus", str(root / "corpus"), "--tier", "regression", "--probe", "LIFE-OK",
        "--arm", "present", "--batch-dir", str(root / "batch"), "--harness", str(standin),
        "--provider-url", "http://127.0.0.1:9", env=env,
    )  # fmt: skip
    try:
        (left,) = kit.wait_for(lambda: _left_over(runner.pid),
                               timeout_s=120, what="the session's config directory")  # fmt: skip
        os.kill(runner.pid, signal.SIGKILL)
        runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            kit.kill_group(runner)
    if left.exists():  # else another runner on this host swept it already
        assert stat.S_IMODE(left.stat().st_mode) == 0o700  # left behind, as expected
        assert not (left / ".credentials.json").exists()
    return left, kit.cli("doctor", env=env).stderr


def _dead_pid() -> int:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True, timeout=30)  # fmt: skip
    return int(child.stdout)


@pytest.mark.parametrize("command", ["run", "demo", "record", "doctor"])
def test_every_command_start_removes_left_overs_and_says_so(setup: Setup, command: str) -> None:
    """Before anything else (here: before a preflight that fails on a missing bwrap); the
    left-over is one an older runner left, a credentials copy in it."""
    root = setup.root
    batch = ["--batch-dir", str(root / f"batch-{command}")]
    corpus = str(root / "corpus")
    args = {
        "run": [corpus, "--tier", "regression", *batch, "--api-key-env", "HW_KEY"],
        "demo": batch,
        "record": ["--corpus", corpus, "--tier", "regression", "--probe", "LIFE-OK",
                   "--arm", "present", *batch, "--api-key-env", "HW_KEY"],
        "doctor": [],
    }[command]
    for _ in range(ATTEMPTS):
        left = CONFIG_ROOT / f"{_dead_pid()}-present-LIFE-OK-s1-left"
        left.mkdir(parents=True, mode=0o700)
        (left / ".credentials.json").write_bytes(CREDS)
        done = kit.cli(command, *args, "--bwrap", "/nonexistent/bwrap",
                       env=kit.base_env(HW_KEY=KEY))  # fmt: skip
        if _said(done.stderr, left) or left.exists():
            break
    assert done.returncode == 12, done.stdout + done.stderr
    assert _said(done.stderr, left), done.stderr
    assert not left.exists()
    assert not (root / f"batch-{command}" / "ledger.jsonl").exists()


def test_the_host_login_never_reaches_the_batch(setup: Setup) -> None:
    """The token of the host's credentials file never lands in a batch artifact (the tests
    above ran sessions of this batch against a host whose credential is a login file)."""
    token = json.loads(CREDS)["claudeAiOauth"]["accessToken"]
    assert kit.files_containing(setup.root / "batch", token) == []
