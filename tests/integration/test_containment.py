"""Process containment (issue 5 item 6): no process of a session outlives it or its runner.

The harness runs under ``bwrap --unshare-pid --die-with-parent``, spawned from
the event loop's own thread: when the runner is SIGKILLed, bwrap dies with it,
and with bwrap (pid 1 of the session's pid namespace) every process of the
session. Driven through ``record`` with the real CLI and the scripted
provider; the session's Bash runs a ``sleep`` with a duration no other
process uses, so the test can find it by its command line.

Both flags are needed, also when a session ends by itself: bwrap's pid 1
reaps until the last process of its namespace is gone, while bwrap's outer
process exits with the harness; ``--die-with-parent`` then kills pid 1 (its
parent-death signal), and with it the namespace.

Seen red with ``HW_WEAKEN=no-pid`` (tests/integration/weaken/: the detached
sleep survives the session, and the Bash sleep survives the killed runner)
and ``HW_WEAKEN=no-die`` (bwrap and the harness survive the killed runner;
the detached sleep survives the session under a lingering bwrap pid 1).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign._provider import ScriptedProvider, load_scripts
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.timeout(300)]

GONE_WITHIN_S = 2.0
"""How long after the runner's death every process of the session must be gone (issue 5)."""
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
    corpus = _corpus(root, task, f"sleep {duration}; echo finished")
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
            for pid in kit.processes_mentioning(str(batch), f"sleep {duration}"):
                os.kill(pid, signal.SIGKILL)


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
        for pid in kit.processes_mentioning(f"sleep {duration}"):
            os.kill(pid, signal.SIGKILL)
