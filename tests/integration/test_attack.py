"""A session that tries to outlive itself: nothing of it survives ``record``.

The stand-in (tests/integration/attack_standin.py, its docstring says each
step) detaches a daemon with setsid and a double fork, SIGKILLs the lifeline
watcher, and tries to ptrace bwrap's pid 1 to clear its parent-death signal,
then prints a valid stream. Run through ``record`` with the real driver under
real bwrap, with a confined network and with the host's.

Rules (docs/session-reach.md; docs/session-reach.md): no ptrace inside
the sandbox (the seccomp filter answers the ``PTRACE_SEIZE`` with EPERM, and so
would the session's Landlock domain, which pid 1 is outside of), no signal to
the watcher (outside the domain too: EPERM), and the end of a session is the
kernel's business (its cgroup is killed and waited for until empty), so when
``record`` returns no process of the session runs: no bwrap, no daemon, no
bridge; nothing touches its workspace or connects to the host any more; its
cgroup is gone.

Seen red with ``HW_WEAKEN=no-seccomp,no-cgroup,no-landlock``: the watcher is
killed, the seize works, pid 1 and the daemon outlive ``record`` (the heartbeat
goes on; with ``--network host`` the daemon keeps connecting to host loopback).
``no-landlock`` alone fails only the watcher's assertion; any one of the three
defences keeps pid 1 from outliving ``record``: the filter or the domain leaves
pid 1 its parent-death signal; the cgroup kill ends pid 1 whatever its signals.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from sandbox._scratch import sweep_killed_runners
from sandbox.cgroup import find_cgroups
from tests.integration import kit
from tests.integration.attack_standin import HEARTBEAT, REPORT, write_attack_standin
from tests.integration.test_record_standins import PROBE, SESSION, finals, make_corpus, record

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

QUIET_S = 1.0
"""How long after ``record`` returned the heartbeat and the listener are watched."""


class Listener:
    """A TCP listener on host loopback that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    yield served
    served.close()


def _session_cgroups() -> set[str]:
    """The names of the sessions' cgroups on this host now."""
    host = find_cgroups()
    assert host.v2 is not None, "no cgroup v2 hierarchy"
    try:
        return {entry.name for entry in os.scandir(host.v2.base) if entry.is_dir()}
    except FileNotFoundError:
        return set()


@pytest.mark.parametrize("network", ["confined", "host"])
def test_a_session_that_detaches_kills_its_watcher_and_ptraces_pid_1_does_not_outlive_record(
    tmp_path: Path, listener: Listener, network: str, bwrap: str
) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = write_attack_standin(tmp_path / "claude", stdout=SESSION,
                                   port=listener.port if network == "host" else 0)  # fmt: skip
    batch = tmp_path / "b"
    before = _session_cgroups()
    try:
        run = record(corpus, batch, harness, "--network", network)
        cgroups_left = _session_cgroups() - before
        # At once: record returns only once the session's cgroup is empty.
        left = kit.processes_under(tmp_path)
        accepted = listener.accepted
        assert run.returncode == 0, run.stdout + run.stderr
        final = finals(batch)[-1]
        assert final["state"] == "recorded", final["reason"]
        workspace = batch / "sessions" / "present" / PROBE / final["session"] / "workspace"
        report = json.loads((workspace / REPORT).read_text())
        assert left == {}, f"alive when record returned: {left} (the attack: {report})"
        assert not [name for name in cgroups_left if PROBE in name], cgroups_left
        beat = (workspace / HEARTBEAT).stat().st_mtime_ns
        time.sleep(QUIET_S)
        assert (workspace / HEARTBEAT).stat().st_mtime_ns == beat, "the daemon lives on"
        assert listener.accepted == accepted, "something of the session still connects out"
        # the watcher is outside the session's Landlock domain: its signal is refused
        assert report["watchers_killed"] == ["EPERM"], report
        assert report["seize"] == errno.errorcode[errno.EPERM], report  # ptrace refused
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
        sweep_killed_runners()
