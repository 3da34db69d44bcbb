"""The session's Landlock domain: nothing of the session can reach into the processes that tie it.

Every process of a session runs as one uid with bwrap's pid 1, the lifeline
watcher and the egress bridge (`sandbox._init`), and every one of those is
dumpable. The seccomp filter refuses ``ptrace`` and ``process_vm_readv``/
``writev`` (`sandbox._seccomp`), but the kernel also lets a process of the same
uid open ``/proc/<pid>/mem`` of another and write to it, and a filter of
system calls cannot tell that ``open`` from any other: a session could write
code into pid 1 that clears its parent-death signal, and SIGKILL its own
watcher (same uid).

Landlock closes both by the kernel's own rule: a process inside a Landlock
domain may ptrace (hence open ``/proc/<pid>/mem``, ``/proc/<pid>/syscall``,
``process_vm_*``) only processes of its own domain or of one nested in it,
and, from Landlock ABI 6, may signal only those too (``LANDLOCK_SCOPE_SIGNAL``)
and connect to no abstract unix socket made outside it
(``LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET``: with ``--network host`` the host's
abstract sockets would otherwise be reachable). The domain is made by the
last step of the init shell, after the watcher and the bridge are started
and before the harness is executed: the command becomes
``/usr/bin/python3 -I -S -c SCRIPT HARNESS ARGS...`` (`scoped_command`),
which enters a new domain and ``execv``s the harness, so the harness keeps
pid 2 and everything it starts inherits the domain, while pid 1, the watcher
and the bridge stay outside it.

The domain restricts no file access: bwrap's mounts are what a session sees
(RC-02). From ABI 6 the ruleset has scopes only and handles no file access
at all. Before ABI 6 a ruleset must handle some file access right, and a
domain that handles any refuses every rename or link into another directory
(EXDEV; ``git``, ``mv`` and editors' saves would fail) unless a rule allows
``LANDLOCK_ACCESS_FS_REFER`` there: so it handles making character and
block devices (``LANDLOCK_ACCESS_FS_MAKE_CHAR``, ``..._MAKE_BLOCK``), which
no rule allows and a session without ``CAP_MKNOD`` cannot do anyway, and
``REFER``, which a rule on ``/`` allows everywhere. ABI 1 has no ``REFER``:
such a kernel is refused (`REFER_ABI`).

Why a Python script: the host's ``/usr/bin/python3`` (Debian's, under
``/usr``, which every sandbox mounts read-only) is already what the preflight
probes run with; the runner's own interpreter is not inside. It costs one
interpreter start (``-I -S``) per sandbox, about 6 ms here, next to seconds of
harness. The script imports ``posix`` and ``sys`` (built in) and ``_ctypes``
(the C extension under ``ctypes``; it subclasses its function-pointer and scalar
types the way ``ctypes`` does) and no Python source: importing the ``ctypes``
package added 7 to 16 ms more per sandbox. A host interpreter without
``_ctypes`` fails the ``landlock`` check of the preflight.

Rule: no process of a session can trace, read or write the memory of, or
(Landlock ABI 6+) signal, a process the session did not start (process
containment; RC-05).
"""

from __future__ import annotations

import ctypes
import errno
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "LANDLOCK_FAILED_STATUS",
    "PYTHON",
    "SCOPE_ABI",
    "host_abi",
    "scoped_command",
]

PYTHON: Final = "/usr/bin/python3"
"""The interpreter that makes the domain inside the sandbox (Debian's, under /usr: mounted)."""
LANDLOCK_FAILED_STATUS: Final = 123
"""Exit status of a sandbox whose domain could not be made (the harness never ran); distinct
from the init shell's 124 and 125."""
SCOPE_ABI: Final = 6
"""The first Landlock ABI with scopes (signals, abstract unix sockets)."""
_CREATE_RULESET: Final = 444
_RESTRICT_SELF: Final = 446
"""System call numbers, the same on every architecture (added after the tables were unified)."""
_VERSION_FLAG: Final = 1  # LANDLOCK_CREATE_RULESET_VERSION

REFER_ABI: Final = 2
"""The first Landlock ABI that can allow a rename or link into another directory."""
_ADD_RULE: Final = 445
_SCOPES: Final = (1 << 0) | (1 << 1)
"""LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL (linux/landlock.h)."""
_REFER: Final = 1 << 13
"""LANDLOCK_ACCESS_FS_REFER: a domain that handles any file access refuses every rename or
link into another directory (EXDEV) unless a rule allows this right."""
_HANDLED_FS: Final = (1 << 6) | (1 << 11) | _REFER
"""LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK, handled and allowed nowhere,
and REFER, allowed everywhere (a rule on ``/``): before `SCOPE_ABI` a ruleset must handle
some file access."""

_SCRIPT: Final = rf"""
import posix, sys, _ctypes
class Long(_ctypes._SimpleCData):
    _type_ = "l"
class Int(_ctypes._SimpleCData):
    _type_ = "i"
class UInt(_ctypes._SimpleCData):
    _type_ = "I"
class ULong(_ctypes._SimpleCData):
    _type_ = "L"
class Fn(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = Long
class Libc:
    _handle = _ctypes.dlopen(None)
syscall, prctl = Fn(("syscall", Libc)), Fn(("prctl", Libc))
def fail(what):
    sys.stderr.write("headwater: could not enter the session's Landlock domain: %s (errno %d)\n"
                     % (what, _ctypes.get_errno()))
    posix._exit({LANDLOCK_FAILED_STATUS})
def u64(n):
    return n.to_bytes(8, "little")
abi = syscall(Long({_CREATE_RULESET}), None, ULong(0), UInt(1))
if abi < 1:
    fail("the kernel has no Landlock")
abi = min(abi, ABI_CAP)
if abi < {REFER_ABI}:
    fail("Landlock ABI %d cannot allow renames into another directory" % abi)
# ABI 6+: scopes only, no file access handled (nothing of the file system is changed);
# before: device nodes handled and allowed nowhere, renames and links allowed everywhere
fs, scoped = (0, {_SCOPES}) if abi >= {SCOPE_ABI} else ({_HANDLED_FS}, 0)
size = 24 if abi >= {SCOPE_ABI} else 16 if abi >= 4 else 8
fd = syscall(Long({_CREATE_RULESET}), (u64(fs) + u64(0) + u64(scoped))[:size], ULong(size),
             UInt(0))
if fd < 0:
    fail("landlock_create_ruleset")
if fs:
    root = posix.open("/", posix.O_PATH | posix.O_CLOEXEC)
    if syscall(Long({_ADD_RULE}), Int(fd), Int(1), u64({_REFER}) + root.to_bytes(4, "little"),
               UInt(0)) != 0:
        fail("landlock_add_rule")
    posix.close(root)
if prctl(Int(38), ULong(1), ULong(0), ULong(0), ULong(0)) != 0:
    fail("PR_SET_NO_NEW_PRIVS")
if syscall(Long({_RESTRICT_SELF}), Int(fd), UInt(0)) != 0:
    fail("landlock_restrict_self")
posix.close(fd)
try:
    posix.execv(sys.argv[1], sys.argv[1:])
except OSError as exc:
    sys.stderr.write("headwater: %s: %s\n" % (sys.argv[1], exc.strerror))
    posix._exit(126 if exc.errno == {errno.EACCES} else 127)
"""


def scoped_command(
    command: Sequence[str], *, python: str = PYTHON, abi_cap: int | None = None
) -> list[str]:
    """``command`` run inside a new Landlock domain (module docstring): the init shell's last exec.

    Pure. The result is ``[python, "-I", "-S", "-c", SCRIPT, *command]``: the
    script makes the domain, then ``execv``s ``command[0]`` with ``command``
    as its argv (untouched). A kernel without Landlock, or a domain that
    cannot be made, ends the sandbox with `LANDLOCK_FAILED_STATUS` and a line
    on stderr before the command runs; a command that cannot be executed,
    with 126 (permission) or 127, like a shell.

    Args:
        command: The command, ``command[0]`` an absolute path.
        python: The interpreter inside the sandbox.
        abi_cap: Use at most this Landlock ABI, whatever the kernel has (tests of the
            older kernels' path); None: the kernel's.

    Raises:
        ValueError: ``command`` is empty.
    """
    if not command:
        raise ValueError("command is empty")
    script = _SCRIPT.replace("ABI_CAP", str(abi_cap if abi_cap is not None else 1 << 30))
    return [python, "-I", "-S", "-c", script, *command]


def host_abi() -> int | None:
    """The host kernel's Landlock ABI version (1, 2, ...), or None when it has no Landlock.

    Asked of the kernel (``landlock_create_ruleset`` with the version flag),
    not of a configuration file: a kernel built with Landlock but booted
    without it in its ``lsm=`` list answers ``EOPNOTSUPP``, one built without
    it ``ENOSYS``; both are None.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(_VERSION_FLAG))  # fmt: skip
    return int(abi) if abi >= 1 else None
