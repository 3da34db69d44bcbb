"""A stand-in harness that attacks its own confinement, then prints a valid stream.

Written as one self-contained file run by Debian's /usr/bin/python3, its
stream embedded (docs/glossary.md RC-02). What it does, in order (x86-64):

1. forks, and the child ``setsid``s and forks again: the grandchild is a
   daemon in a session of its own, reparented to bwrap's pid 1;
2. the daemon SIGKILLs the lifeline watcher (every process whose command line
   names ``headwater-init``: the init shell's background reader), noting each pid
   killed or the errno's name of each refusal;
3. the daemon ``PTRACE_SEIZE``s bwrap's pid 1 (same uid, dumpable), and if that
   works: ``PTRACE_INTERRUPT``, waits for the stop, points pid 1 at the
   ``syscall`` instruction it is blocked in with ``prctl(PR_SET_PDEATHSIG, 0)``
   in its registers, single-steps it, restores its registers (its ``wait4``
   restarts) and detaches: pid 1 then outlives bwrap's outer process;
4. the daemon writes what it saw to ``attack.json`` in the workspace, lets
   the harness go on, closes its stdio and lives on: every 0.2 s it touches
   ``heartbeat`` in the workspace, given a port, connects to it on host
   loopback (``--network host``), and, given a file, rewrites that file of the
   workspace through a descriptor it opened at the start (no later change of
   the file's owner or mode can stop a write through it);
5. the harness prints the stream and exits 0.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Final

from tests.standin import STANDIN_PYTHON

if TYPE_CHECKING:
    from pathlib import Path

REPORT: Final = "attack.json"
"""Written into the workspace by the daemon."""
HEARTBEAT: Final = "heartbeat"
"""Touched in the workspace every 0.2 s by the daemon while it lives."""

_TEMPLATE: Final = r'''#!{python}
"""Attack stand-in written by tests/integration/attack_standin.py (its docstring says what)."""
import base64, ctypes, errno, json, os, signal, socket, sys, time

STREAM = base64.b64decode({stream!r})
PORT = {port!r}
REWRITE = {rewrite!r}
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (attack stand-in)")
    sys.exit(0)

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
SEIZE, INTERRUPT, PEEKTEXT, GETREGS, SETREGS, SINGLESTEP, DETACH = (
    0x4206, 0x4207, 1, 12, 13, 9, 17)
WALL = 0x40000000
NR_PRCTL, PR_SET_PDEATHSIG = 157, 1


class Regs(ctypes.Structure):  # struct user_regs_struct, x86-64
    _fields_ = [(name, ctypes.c_ulonglong) for name in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags "
        "rsp ss fs_base gs_base ds es fs gs").split()]


def ptrace(request, pid, addr=0, data=0):
    ctypes.set_errno(0)
    result = libc.ptrace(request, pid, ctypes.c_void_p(addr), ctypes.c_void_p(data))
    return result, ctypes.get_errno()


def name_of(code):
    return errno.errorcode.get(code, str(code))


def kill_watchers():
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (1, os.getpid()):
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"headwater-init" in cmdline:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
            except OSError as exc:  # the pid, or the name of the refusal's errno
                killed.append(name_of(exc.errno))
    return killed


def clear_pid1_deathsig():
    seen = {{}}
    result, code = ptrace(SEIZE, 1)
    seen["seize"] = "ok" if result == 0 else name_of(code)
    if result != 0:
        return seen
    ptrace(INTERRUPT, 1)
    os.waitpid(1, WALL)
    regs = Regs()
    ptrace(GETREGS, 1, 0, ctypes.addressof(regs))
    saved = Regs.from_buffer_copy(regs)
    word, code = ptrace(PEEKTEXT, 1, saved.rip - 2)
    if word & 0xFFFF != 0x050F:  # not right after a `syscall` instruction: leave it be
        seen["inject"] = "no syscall instruction before rip (%s)" % name_of(code)
        ptrace(DETACH, 1)
        return seen
    regs.rax, regs.rdi, regs.rsi = NR_PRCTL, PR_SET_PDEATHSIG, 0
    regs.rip, regs.orig_rax = saved.rip - 2, (1 << 64) - 1  # -1: no syscall restart here
    ptrace(SETREGS, 1, 0, ctypes.addressof(regs))
    ptrace(SINGLESTEP, 1)
    os.waitpid(1, WALL)
    ptrace(GETREGS, 1, 0, ctypes.addressof(regs))
    seen["prctl"] = ctypes.c_longlong(regs.rax).value
    ptrace(SETREGS, 1, 0, ctypes.addressof(saved))  # wait4 restarts (rax -ERESTARTSYS)
    result, code = ptrace(DETACH, 1)
    seen["detach"] = "ok" if result == 0 else name_of(code)
    return seen


def live_on():
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    target = os.open(REWRITE, os.O_WRONLY | os.O_CREAT, 0o644) if REWRITE else -1
    count = 0
    while True:
        if target >= 0:
            count += 1
            os.ftruncate(target, 0)
            os.pwrite(target, ("rewritten by a survivor %d\n" % count).encode(), 0)
        with open("heartbeat", "a"):
            os.utime("heartbeat")
        if PORT:
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=0.5).close()
            except OSError:
                pass
        time.sleep(0.2)


ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(ready_r)
        report = {{"watchers_killed": kill_watchers()}}
        report.update(clear_pid1_deathsig())
        with open("attack.json", "w") as f:
            json.dump(report, f)
        os.write(ready_w, b"x")
        os.close(ready_w)
        live_on()
    os._exit(0)
os.close(ready_w)
os.read(ready_r, 1)
view = memoryview(STREAM)
while view:
    view = view[os.write(1, view):]
sys.exit(0)
'''


def write_attack_standin(path: Path, *, stdout: bytes, port: int = 0,
                         rewrite: str | None = None) -> Path:
    """Write the attack stand-in at ``path`` (executable) and return ``path``.

    Args:
        path: Where to write it.
        stdout: The valid stream it prints once the daemon is set.
        port: A host loopback port the daemon connects to every 0.2 s (0: none).
        rewrite: A workspace-relative file the daemon rewrites every 0.2 s (None: none).
    """
    text = _TEMPLATE.format(python=STANDIN_PYTHON, stream=base64.b64encode(stdout), port=port,
                            rewrite=rewrite)
    path.write_text(text, encoding="ascii")
    path.chmod(0o755)
    return path
