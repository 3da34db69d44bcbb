"""The session's Landlock domain (`sandbox._landlock`), run on the host without bwrap.

Rule (docs/confinement.md "Process containment", point 5): a process of the domain
cannot open the memory of, nor signal, a process outside it (its parent here), while
the same calls succeed from outside; the harness is executed in place (argv untouched),
and a command that cannot be executed ends with a shell's 126 or 127. From ABI 6 no
abstract unix socket made outside the domain can be reached from inside it. A step of the
script that fails ends the sandbox with `LANDLOCK_FAILED_STATUS` before the command runs.

Seen red: with the ruleset's ``scoped`` field 0 in the script the signal is not refused;
with ``landlock_restrict_self`` removed both calls succeed; with ``scoped`` only the signal
bit the abstract sockets are reached; with the answer of ``landlock_restrict_self``
unchecked the command runs.
"""

from __future__ import annotations

import ctypes
import os
import platform
import socket
import struct
import subprocess
from pathlib import Path

import pytest

from sandbox._landlock import (
    LANDLOCK_FAILED_STATUS,
    PYTHON,
    REFER_ABI,
    SCOPE_ABI,
    host_abi,
    scoped_command,
)

pytestmark = pytest.mark.skipif(not Path(PYTHON).is_file(), reason=f"no {PYTHON}")

ANSWER = r"""def answer(call):
    try:
        call()
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]
"""
"""A probe's way of saying what a call did: ``ok``, or the errno's name."""

PROBE = r"""
import errno, os, sys
""" + ANSWER + r"""target = int(sys.argv[1])
print(answer(lambda: os.close(os.open("/proc/%d/mem" % target, os.O_RDONLY))),
      answer(lambda: os.kill(target, 0)), " ".join(sys.argv[2:]))
"""
"""Opens the memory of the process ``argv[1]`` and signals it; prints both answers and the
rest of its argv."""


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def test_the_command_is_wrapped_untouched() -> None:
    command = ["/opt/harness/claude", "-p", "--", "a b", "$HOME", ""]
    argv = scoped_command(command)
    assert argv[:4] == [PYTHON, "-I", "-S", "-c"] and argv[5:] == command
    with pytest.raises(ValueError, match="empty"):
        scoped_command([])


@pytest.mark.skipif(host_abi() is None, reason="the kernel has no Landlock")
def test_inside_the_domain_the_parent_is_out_of_reach() -> None:
    me = str(os.getpid())
    outside = run([PYTHON, "-c", PROBE, me, "x"])
    assert outside.stdout.split() == ["ok", "ok", "x"], outside.stderr
    inside = run(scoped_command([PYTHON, "-c", PROBE, me, "a b", "c"]))
    assert inside.returncode == 0, inside.stderr
    abi = host_abi()
    assert abi is not None
    signal = "EPERM" if abi >= SCOPE_ABI else "ok"
    assert inside.stdout.split() == ["EACCES", signal, "a", "b", "c"], inside.stderr


def test_a_command_that_cannot_be_executed_ends_like_a_shell(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("not a program\n")
    missing = run(scoped_command([str(tmp_path / "missing")]))
    refused = run(scoped_command([str(plain)]))
    if host_abi() is None:
        assert missing.returncode == refused.returncode == LANDLOCK_FAILED_STATUS
        assert "no Landlock" in missing.stderr
        return
    assert (missing.returncode, refused.returncode) == (127, 126)
    assert str(tmp_path / "missing") in missing.stderr


def test_the_domain_is_inherited_by_what_the_harness_starts() -> None:
    """A grandchild of the wrapped command cannot reach the runner either, but can reach the
    wrapped command (the same domain)."""
    if host_abi() is None:
        pytest.skip("the kernel has no Landlock")
    nested = (f"import os, subprocess; "
              f"subprocess.call([{PYTHON!r}, '-c', {PROBE!r}, '{os.getpid()}']); "
              f"subprocess.call([{PYTHON!r}, '-c', {PROBE!r}, str(os.getpid())])")
    inside = run(scoped_command([PYTHON, "-c", nested]))
    signal = "EPERM" if (host_abi() or 0) >= SCOPE_ABI else "ok"
    assert inside.stdout.split() == ["EACCES", signal, "ok", "ok"], inside.stderr


RENAME = r"""
import os, sys
base = sys.argv[1]
os.rename(os.path.join(base, "a", "x"), os.path.join(base, "b", "x"))
os.link(os.path.join(base, "b", "x"), os.path.join(base, "a", "y"))
os.rename(os.path.join(base, "a"), os.path.join(base, "b", "a"))
print("moved")
"""
"""A rename and a hard link into another directory, and a directory moved under another."""


@pytest.mark.skipif((host_abi() or 0) < REFER_ABI, reason="no Landlock ABI 2")
@pytest.mark.parametrize("cap", [None, 5, REFER_ABI])
def test_a_session_may_move_files_between_directories(tmp_path: Path, cap: int | None) -> None:
    """The domain changes nothing of the file system: a rename or link into another
    directory works (``git`` writes objects so), on this kernel's ABI and on the older ABIs'
    path (device nodes and REFER handled, REFER allowed on ``/``), where pid 1 is still out
    of reach. Seen red with REFER not allowed (no rule): EXDEV; and with the file accesses
    handled on ABI 6+ too: EXDEV."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x").write_text("x")
    moved = run(scoped_command([PYTHON, "-c", RENAME, str(tmp_path)], abi_cap=cap))
    assert (moved.returncode, moved.stdout.strip()) == (0, "moved"), moved.stderr
    assert (tmp_path / "b" / "a" / "y").read_text() == "x"
    inside = run(scoped_command([PYTHON, "-c", PROBE, str(os.getpid())], abi_cap=cap))
    assert inside.stdout.split()[0] == "EACCES", inside.stderr


@pytest.mark.skipif(host_abi() is None, reason="the kernel has no Landlock")
def test_abi_1_is_refused_before_the_command_runs() -> None:
    refused = run(scoped_command([PYTHON, "-c", "print('ran')"], abi_cap=1))
    assert refused.returncode == LANDLOCK_FAILED_STATUS and "ran" not in refused.stdout
    assert "cannot allow renames" in refused.stderr


SOCKETS = r"""
import errno, os, socket, sys
""" + ANSWER + r"""def connect(name):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect("\0" + name)
def send(name):
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", "\0" + name)
own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
own.bind("\0" + sys.argv[1] + "-inside")
own.listen(1)
name = sys.argv[1]
print(answer(lambda: connect(name + "-stream")), answer(lambda: send(name + "-dgram")),
      answer(lambda: connect(name + "-inside")))
"""
"""Connects to the abstract stream socket ``argv[1]-stream`` and sends to the datagram one
``argv[1]-dgram`` (both made by the test), and connects to one it made itself."""


@pytest.mark.skipif((host_abi() or 0) < SCOPE_ABI, reason="no Landlock ABI 6 (scopes)")
def test_abstract_unix_sockets_made_outside_are_out_of_reach() -> None:
    """From ABI 6 the domain scopes abstract unix sockets: the session cannot connect, nor
    send a datagram, to one made outside it (with ``--network host`` the host's own, e.g. a
    desktop bus or a container runtime's), and can to its own. Seen red with the ruleset's
    ``scoped`` field only ``LANDLOCK_SCOPE_SIGNAL`` (2): ok ok ok."""
    name = f"headwater-test-landlock-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stream, \
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dgram:  # fmt: skip
        stream.bind("\0" + name + "-stream")
        stream.listen(4)
        dgram.bind("\0" + name + "-dgram")
        outside = run([PYTHON, "-c", SOCKETS, name])
        assert outside.stdout.split() == ["ok", "ok", "ok"], outside.stderr
        inside = run(scoped_command([PYTHON, "-c", SOCKETS, name]))
        assert inside.stdout.split() == ["EPERM", "EPERM", "ok"], inside.stderr
        inside = run(scoped_command([PYTHON, "-c", SOCKETS, name], abi_cap=SCOPE_ABI - 1))
        assert inside.stdout.split() == ["ok", "ok", "ok"], inside.stderr


PRCTL = {"x86_64": 157, "aarch64": 167}.get(platform.machine(), -1)
"""prctl's system call number (Landlock's are the same on every architecture)."""


def _refuse(nr: int, arg: int | None, value: int, err: int) -> bytes:
    """A seccomp program: system call ``nr`` (with its argument ``arg``'s low 32 bits equal
    to ``value``, when ``arg`` is not None) fails with ``err``; every other call is allowed."""

    def ins(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("<HBBI", code, jt, jf, k)

    ld, jeq, ret, allow, errno_ = 0x20, 0x15, 0x06, 0x7FFF0000, 0x00050000
    if arg is None:
        body = [ins(jeq, 0, 1, nr)]
    else:
        body = [ins(jeq, 0, 3, nr), ins(ld, 0, 0, 16 + 8 * arg), ins(jeq, 0, 1, value)]
    return b"".join([ins(ld, 0, 0, 0), *body, ins(ret, 0, 0, errno_ | err),
                     ins(ret, 0, 0, allow)])  # fmt: skip


@pytest.mark.skipif((host_abi() or 0) < REFER_ABI or PRCTL < 0,
                    reason="no Landlock ABI 2, or no prctl number for this machine")
@pytest.mark.parametrize(("nr", "arg", "value", "err", "step", "cap"), [
    (444, 2, 1, 38, "the kernel has no Landlock", None),  # the version query: ENOSYS
    (444, 2, 1, 95, "the kernel has no Landlock", None),  # EOPNOTSUPP (not in lsm=)
    (444, 2, 0, 24, "landlock_create_ruleset", None),  # EMFILE
    (444, 2, 0, 24, "landlock_create_ruleset", REFER_ABI),
    (445, None, 0, 9, "landlock_add_rule", REFER_ABI),  # EBADF
    (PRCTL, 0, 38, 22, "PR_SET_NO_NEW_PRIVS", None),  # prctl(PR_SET_NO_NEW_PRIVS): EINVAL
    (446, None, 0, 1, "landlock_restrict_self", None),  # EPERM
    (446, None, 0, 7, "landlock_restrict_self", REFER_ABI),  # E2BIG
])
def test_every_step_that_fails_ends_the_sandbox_before_the_command(
        nr: int, arg: int | None, value: int, err: int, step: str, cap: int | None) -> None:
    """Each system call of the script made to fail (a seccomp filter set before the
    interpreter starts): the sandbox ends with `LANDLOCK_FAILED_STATUS`, the command never
    runs, and stderr names the step and the kernel's errno (``_ctypes.get_errno``). Seen red
    with the script's ``landlock_restrict_self`` answer unchecked: the command runs."""
    program = _refuse(nr, arg, value, err)

    def install() -> None:  # in the child, between fork and exec
        libc = ctypes.CDLL(None, use_errno=True)
        code = ctypes.create_string_buffer(program)
        fprog = struct.pack("<HxxxxxxQ", len(program) // 8, ctypes.addressof(code))
        if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, fprog, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp")

    refused = subprocess.run(scoped_command([PYTHON, "-c", "print('ran')"], abi_cap=cap),
                             capture_output=True, text=True, timeout=30, check=False,
                             preexec_fn=install)  # fmt: skip
    assert (refused.returncode, refused.stdout) == (LANDLOCK_FAILED_STATUS, ""), refused.stderr
    assert f"{step} (errno {err})\n" in refused.stderr
