"""Process containment: no process of a session outlives it or its runner.

The harness runs under ``bwrap --unshare-pid --die-with-parent``, spawned from
the event loop's own thread, inside the session's init shell, whose watcher
ends every process of the pid namespace once the runner's end of the
lifeline closes (sandbox/_init.py). Driven through ``record`` with the real
CLI and the scripted provider, network confined; the session's Bash runs a
``sleep`` with a duration no other process uses, so the test can find it by
its command line.

bwrap arms its parent-death signal some milliseconds after each of its
forks, so a runner killed in that window leaves the sandbox alive without
the lifeline (measured with 0.8.0). The instrument ``HW_KILL_AFTER_SPAWN_S``
of tests/integration/weaken/ kills the runner 0 ms to 0.5 s after it
spawned the sandbox; nothing of the session may remain, the egress bridge
(socat) included.

Seen red with ``HW_WEAKEN=no-lifeline`` (killed 0 and 1 ms after the spawn:
bwrap, the harness and socat survive) and ``HW_WEAKEN=no-lifeline,no-die``
(every test: the sleep survives the killed runner, the detached sleep the
session). With the lifeline, ``no-die`` alone stays green: either tie is
enough once armed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from demo import ScriptedProvider, load_scripts
from sandbox._config import sweep_config_root
from sandbox._scratch import sweep_killed_runners
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.timeout(300)]

GONE_WITHIN_S = 2.0
"""How long after the runner's death every process of the session must be gone."""
STARTED_WITHIN_S = 120.0
"""Bound on waiting for the session's sleep to start (a cold CLI takes a few seconds)."""


def _unique_sleep(base: int) -> str:
    """A sleep duration like ``61.48213`` that no other process on the host uses."""
    return f"{base}.{random.randrange(10_000, 99_999)}"


@pytest.fixture
def host(bwrap: str, harness: Path) -> Iterator[tuple[Path, list[str]]]:
    """A host dir and the `record` arguments every test shares (provider started per test)."""
    with kit.host_dir("hw-contain-") as root:
        yield root, ["--tier", "regression", "--arm", "present", "--batch-dir",
                     str(root / "batch"), "--api-key-env", "HW_KEY", "--harness", str(harness),
                     "--bwrap", bwrap]  # fmt: skip


def _corpus(root: Path, task: str, command: str) -> Path:
    corpus = kit.write_corpus(root / "corpus", {"CONT-1": task})
    kit.write_script(root / "scripts", "CONT-1", task, [kit.bash("t1", command)])
    return corpus


def test_a_runner_killed_mid_session_leaves_no_process_of_it(
    host: tuple[Path, list[str]],
) -> None:
    root, common = host
    duration = _unique_sleep(61)
    task = "containment: a long command that outlives nobody"
    corpus = _corpus(root, task, kit.not_a_bare_sleep(f"sleep {duration}; echo finished"))
    batch = root / "batch"
    with ScriptedProvider(load_scripts(root / "scripts")) as provider:
        runner = kit.start_cli("record", "--corpus", str(corpus), "--probe", "CONT-1",
                               "--provider-url", provider.url, *common,
                               env=kit.base_env(HW_KEY="sk-containment-placeholder"))  # fmt: skip
        try:
            kit.wait_for(lambda: kit.processes_mentioning(f"sleep {duration}"),
                         timeout_s=STARTED_WITHIN_S, what="the session's sleep")  # fmt: skip
            session = kit.processes_mentioning(str(batch), f"sleep {duration}")
            assert any("bwrap" in cmd for cmd in session.values()), session
            os.kill(runner.pid, signal.SIGKILL)  # the runner only, not its process group
            runner.communicate(timeout=30)
            time.sleep(GONE_WITHIN_S)
            left = kit.processes_mentioning(str(batch), f"sleep {duration}", task)
            assert left == {}, f"alive {GONE_WITHIN_S} s after the runner was killed: {left}"
        finally:
            if runner.poll() is None:
                kit.kill_group(runner)
            kit.kill_all(kit.processes_mentioning(str(batch), f"sleep {duration}"))


@pytest.mark.parametrize("after_s", [0.0, 0.001, 0.003, 0.01, 0.05, 0.5])
def test_a_runner_killed_while_bwrap_starts_leaves_no_process_of_the_session(
    host: tuple[Path, list[str]], after_s: float
) -> None:
    """Killed ``after_s`` seconds after the spawn: bwrap may not have armed its own tie yet."""
    root, common = host
    duration = _unique_sleep(63)
    task = f"containment: the runner dies {after_s} s into the spawn"
    corpus = _corpus(root, task, kit.not_a_bare_sleep(f"sleep {duration}; echo finished"))
    batch = root / "batch"
    left = _killed_by_the_instrument(root, common, corpus, after_s, of="session",
                                     needles=(str(batch), f"sleep {duration}", task))  # fmt: skip
    assert left == {}, f"alive {GONE_WITHIN_S} s after the runner was killed: {left}"


@pytest.mark.parametrize("after_s", [0.0, 0.003, 0.5])
def test_a_runner_killed_while_the_checker_runs_leaves_no_process_of_it(
    host: tuple[Path, list[str]], after_s: float
) -> None:
    """The findings checker (RC-11) is the corpus's own command: it has the lifeline too."""
    root, common = host
    duration = _unique_sleep(64)
    task = "containment: a quick session, then a slow checker"
    corpus = kit.write_corpus(root / "corpus", {"CONT-1": task})
    kit.write_script(root / "scripts", "CONT-1", task, [kit.bash("t1", "echo quick")])
    config = json.loads((corpus / ".headwater/probe.yml").read_text())
    (corpus / ".headwater/probe.yml").write_text(json.dumps({**config, "checker": "checks/slow"}))
    slow = corpus / "checks" / "slow"
    slow.parent.mkdir()
    slow.write_text(f"#!/bin/sh\nsleep {duration}\n")
    slow.chmod(0o755)
    batch = root / "batch"
    left = _killed_by_the_instrument(root, common, corpus, after_s, of="checker",
                                     needles=(str(batch), f"sleep {duration}"))  # fmt: skip
    assert left == {}, f"alive {GONE_WITHIN_S} s after the runner was killed: {left}"


def _killed_by_the_instrument(
    root: Path, common: list[str], corpus: Path, after_s: float, *, of: str,
    needles: tuple[str, ...],
) -> dict[int, str]:
    """Run ``record`` of CONT-1 that SIGKILLs itself ``after_s`` after spawning the ``of``
    sandbox (tests/integration/weaken/); the processes still mentioning ``needles`` after
    `GONE_WITHIN_S` (killed afterwards, and the dead runner's credentials copy swept)."""
    env = kit.base_env(HW_KEY="sk-containment-placeholder", HW_KILL_AFTER_SPAWN_S=str(after_s),
                       HW_KILL_AFTER_SPAWN_OF=of,
                       PYTHONPATH=os.pathsep.join([str(kit.WEAKEN_DIR),
                                                   os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    with ScriptedProvider(load_scripts(root / "scripts")) as provider:
        runner = kit.start_cli("record", "--corpus", str(corpus), "--probe", "CONT-1",
                               "--provider-url", provider.url, *common, env=env)  # fmt: skip
        try:
            _, stderr = runner.communicate(timeout=STARTED_WITHIN_S)
            assert runner.returncode == -signal.SIGKILL, stderr  # killed by the instrument
            time.sleep(GONE_WITHIN_S)
            # The egress bridge names nothing of the batch: it is found by its working
            # directory, the session's workspace (other sessions on the host are not).
            return {**kit.processes_mentioning(*needles), **kit.processes_under(root)}
        finally:
            if runner.poll() is None:
                kit.kill_group(runner)
            kit.kill_all({**kit.processes_mentioning(*needles), **kit.processes_under(root)})
            sweep_config_root()  # the dead runner's credentials copy (see the lifecycle tests)
            sweep_killed_runners()  # and its sessions' cgroups and scratch directories


def test_a_process_the_session_detached_ends_with_the_session(
    host: tuple[Path, list[str]],
) -> None:
    """``setsid -f`` leaves the harness's process tree; the pid namespace still ends it."""
    root, common = host
    duration = _unique_sleep(62)
    task = "containment: leave a detached process behind"
    corpus = _corpus(root, task, f"setsid -f sleep {duration} > /dev/null 2>&1; echo left it")
    with ScriptedProvider(load_scripts(root / "scripts")) as provider:
        done = kit.cli("record", "--corpus", str(corpus), "--probe", "CONT-1",
                       "--provider-url", provider.url, *common,
                       env=kit.base_env(HW_KEY="sk-containment-placeholder"))  # fmt: skip
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        left = kit.processes_mentioning(f"sleep {duration}")
        assert left == {}, f"a process of the session outlived it: {left}"
    finally:
        kit.kill_all(kit.processes_mentioning(f"sleep {duration}"))
