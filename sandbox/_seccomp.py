"""The sandbox's seccomp filter: no ptrace, no process_vm_readv/writev, no io_uring, perf or bpf.

Rule: nothing inside a sandbox can trace or read another process's memory.
Without this, a session (same uid as bwrap's pid 1, which is dumpable, and a
host without Yama) could ``PTRACE_SEIZE`` bwrap's pid 1 and inject
``prctl(PR_SET_PDEATHSIG, 0)``, so that pid 1 (and every daemon the session
left under it) outlives the runner. The filter is passed to bwrap with
``--seccomp FD`` (bubblewrap 0.8.0), which installs it, with no_new_privs,
right before it runs the command: it binds the session's first process and
everything it starts, never bwrap's own pid 1.

Defence in depth (docs/confinement.md "Process containment"): ``io_uring_setup``,
``io_uring_enter``, ``io_uring_register``, ``perf_event_open`` and ``bpf`` are
refused too, as container runtimes' default profiles refuse them: io_uring does
file and socket I/O that no system call filter sees per operation, and the
three are large kernel surfaces a session has no use for. They answer
``ENOSYS``, as if the kernel had none of them, which is how programs that probe
for them (libuv, the event loop of the pinned CLI's node, may set up an io_uring)
know to fall back quietly; ``EPERM`` tells a caller it was refused something
it should have, and is kept for the three calls of the rule above.

Why a fixed BPF program built here rather than libseccomp: libseccomp2 is on
the host, but its Python binding (Debian's python3-seccomp) is not installed
and binds only Debian's interpreter, not the venv's; PyPI's pyseccomp would be
a new dependency loading the C library through ctypes at run time. The
program this rule needs is small and fixed (a deny-list of eight system calls
per ABI), so it is written out here as classic BPF (linux/filter.h,
linux/seccomp.h), with no dependency and no set-up step, and its tests run it
through an interpreter against the kernel headers' numbers.

The program, per ABI of the host (``platform.machine()``):

* load ``seccomp_data.arch``; for each ABI the host can run, if it matches:
  load ``seccomp_data.nr``; the denied calls return ``EPERM``, the absent ones
  ``ENOSYS``; everything else is allowed;
* on x86-64, a system call number with the x32 bit set returns ``ENOSYS``:
  nothing in a sandbox uses the x32 ABI, and its own ptrace numbers would
  otherwise need a table of their own;
* any other ABI kills the process (fail closed: its numbers are unknown).
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._errors import ContainmentUnavailable

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ABSENT_CALLS",
    "DENIED_CALLS",
    "SECCOMP_RET_ALLOW",
    "SECCOMP_RET_ERRNO",
    "SECCOMP_RET_KILL_PROCESS",
    "Abi",
    "abis_for",
    "build_filter",
    "session_filter",
]

DENIED_CALLS: Final = ("ptrace", "process_vm_readv", "process_vm_writev")
"""The system calls no sandboxed process may make; they return ``EPERM`` (module docstring)."""
ABSENT_CALLS: Final = ("io_uring_setup", "io_uring_enter", "io_uring_register",
                       "perf_event_open", "bpf")
"""The system calls a sandbox is shown as missing: they return ``ENOSYS`` (module docstring,
defence in depth)."""

# linux/filter.h: instruction classes and fields
_BPF_LD_W_ABS: Final = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_BPF_JEQ_K: Final = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_BPF_JGE_K: Final = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_BPF_RET_K: Final = 0x06 | 0x00  # BPF_RET | BPF_K
_INSTRUCTION: Final = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k
_MAX_JUMP: Final = 255  # jt/jf are one byte
# linux/seccomp.h: actions, and struct seccomp_data's field offsets
SECCOMP_RET_KILL_PROCESS: Final = 0x80000000
SECCOMP_RET_ERRNO: Final = 0x00050000
SECCOMP_RET_ALLOW: Final = 0x7FFF0000
_NR_OFFSET: Final = 0
_ARCH_OFFSET: Final = 4
# linux/audit.h
AUDIT_ARCH_X86_64: Final = 0xC000003E
AUDIT_ARCH_I386: Final = 0x40000003
AUDIT_ARCH_AARCH64: Final = 0xC00000B7
X32_SYSCALL_BIT: Final = 0x40000000


@dataclass(frozen=True, slots=True)
class Abi:
    """One system call ABI a host can run: its audit arch and its denied calls' numbers.

    Attributes:
        name: For messages, e.g. ``"x86_64"``.
        arch: The ``AUDIT_ARCH_*`` value the kernel puts in ``seccomp_data.arch``.
        numbers: ``DENIED_CALLS`` and ``ABSENT_CALLS`` name -> system call number in this ABI.
        x32: True for x86-64, whose numbers with `X32_SYSCALL_BIT` are the x32 ABI.
    """

    name: str
    arch: int
    numbers: Mapping[str, int]
    x32: bool = False


_ABIS: Final[Mapping[str, tuple[Abi, ...]]] = {
    # asm/unistd_64.h and asm/unistd_32.h
    "x86_64": (
        Abi("x86_64", AUDIT_ARCH_X86_64,
            {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
             "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
             "perf_event_open": 298, "bpf": 321}, x32=True),
        Abi("i386", AUDIT_ARCH_I386,
            {"ptrace": 26, "process_vm_readv": 347, "process_vm_writev": 348,
             "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
             "perf_event_open": 336, "bpf": 357}),
    ),
    # asm-generic/unistd.h (arm64 has no 32-bit table here: such a call is killed)
    "aarch64": (
        Abi("aarch64", AUDIT_ARCH_AARCH64,
            {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
             "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
             "perf_event_open": 241, "bpf": 280}),
    ),
}  # fmt: skip


def abis_for(machine: str) -> tuple[Abi, ...]:
    """The ABIs a host of ``machine`` (``platform.machine()``) runs, native first.

    Raises:
        ContainmentUnavailable: no table for ``machine``.
    """
    try:
        return _ABIS[machine]
    except KeyError:
        raise ContainmentUnavailable(
            f"no seccomp table for the machine {machine!r} (known: {', '.join(_ABIS)})",
            "run on x86_64 or aarch64, or add this machine's numbers of the filtered calls "
            "(ptrace, process_vm_readv/writev, io_uring_*, perf_event_open, bpf) to "
            "sandbox/_seccomp.py",
        ) from None


def build_filter(abis: tuple[Abi, ...]) -> bytes:
    """The BPF program (module docstring) for ``abis``, as bwrap's ``--seccomp FD`` reads it.

    Pure. The result is an array of ``struct sock_filter`` in host byte order
    (8 bytes each); every jump is forward and within one byte.

    Raises:
        ValueError: ``abis`` is empty, or an ABI lacks a number for a `DENIED_CALLS` or
            `ABSENT_CALLS` call.
    """
    if not abis:
        raise ValueError("no ABI to build a filter for")
    program: list[tuple[int, str | int, str | int, int]] = []  # jumps by label, resolved below
    labels: dict[str, int] = {}
    for index, abi in enumerate(abis):
        missing = {*DENIED_CALLS, *ABSENT_CALLS} - set(abi.numbers)
        if missing:
            raise ValueError(f"the {abi.name} table lacks {sorted(missing)}")
        labels[f"abi{index}"] = len(program)
        program.append((_BPF_LD_W_ABS, 0, 0, _ARCH_OFFSET))
        program.append((_BPF_JEQ_K, 0, f"abi{index + 1}", abi.arch))
        program.append((_BPF_LD_W_ABS, 0, 0, _NR_OFFSET))
        if abi.x32:
            program.append((_BPF_JGE_K, "enosys", 0, X32_SYSCALL_BIT))
        for name in DENIED_CALLS:
            program.append((_BPF_JEQ_K, "deny", 0, abi.numbers[name]))
        for name in ABSENT_CALLS:
            program.append((_BPF_JEQ_K, "enosys", 0, abi.numbers[name]))
        program.append((_BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    labels[f"abi{len(abis)}"] = len(program)
    program.append((_BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS))
    labels["deny"] = len(program)
    program.append((_BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM))
    labels["enosys"] = len(program)  # an x32 call, or one of ABSENT_CALLS
    program.append((_BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS))
    return b"".join(
        _INSTRUCTION.pack(code, _offset(at, jt, labels), _offset(at, jf, labels), k)
        for at, (code, jt, jf, k) in enumerate(program)
    )


def _offset(at: int, target: str | int, labels: Mapping[str, int]) -> int:
    if isinstance(target, int):
        return target
    skip = labels[target] - at - 1  # BPF jumps count the instructions skipped
    if not 0 <= skip <= _MAX_JUMP:
        raise ValueError(f"jump from {at} to {target} is out of range ({skip})")
    return skip


def session_filter(machine: str | None = None) -> bytes:
    """The filter every sandbox gets, for this host's machine (``platform.machine()`` by default).

    Raises:
        ContainmentUnavailable: no table for the machine; a sandbox then cannot be opened.
    """
    return _filter_for(machine or platform.machine())


@functools.cache
def _filter_for(machine: str) -> bytes:
    """`build_filter` of ``machine``'s ABIs, built once per process and machine name.

    A cache of a pure function: the program depends on the machine name alone (the
    tables of this module), so one process-wide copy is correct. functools.cache is
    thread-safe; two threads that miss at once both build the same bytes. A machine
    without a table raises each time (exceptions are not cached).
    """
    return build_filter(abis_for(machine))
