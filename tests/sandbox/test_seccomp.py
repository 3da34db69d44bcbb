"""The seccomp filter (sandbox/_seccomp.py): no ptrace, no process_vm_readv/writev inside, and
no io_uring, perf_event_open or bpf (defence in depth, docs/confinement.md).

Expected values come from the rule and from the kernel's own headers, never
from the module's tables: for every ABI the host runs, the three calls (their
numbers read from asm/unistd_*.h) return EPERM, the five of defence in depth
ENOSYS, and every other call is allowed; the x32 ABI answers ENOSYS; an ABI
the host does not run is killed.
The program is run here through a small interpreter of the classic BPF it
uses (linux/filter.h), then under the real bwrap, where a process inside is
refused and the same process outside the filter is not.
"""

from __future__ import annotations

import errno
import re
import struct
from pathlib import Path

import pytest

from sandbox._capture import capture
from sandbox._errors import ContainmentUnavailable
from sandbox._layout import measure_host_layout
from sandbox._seccomp import abis_for, build_filter, session_filter
from sandbox.confined import ConfinedSpec, open_confined
from sandbox.users import session_user
from tests.conftest import missing
from tests.standin import STANDIN_PYTHON

HEADERS = Path("/usr/include/x86_64-linux-gnu/asm")
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev")
ABSENT = ("io_uring_setup", "io_uring_enter", "io_uring_register", "perf_event_open", "bpf")
GENERIC = Path("/usr/include/asm-generic/unistd.h")
# linux/audit.h (EM_* | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE), linux/seccomp.h
ARCH_X86_64, ARCH_I386, ARCH_ARM = 0xC000003E, 0x40000003, 0x40000028
ALLOW, KILL_PROCESS = 0x7FFF0000, 0x80000000
ERRNO = 0x00050000


def numbers(header: str) -> dict[str, int]:
    """``__NR_<name>`` -> number from a kernel header (x32's ``(__X32_SYSCALL_BIT + n)`` too)."""
    path = HEADERS / header
    if not path.exists():
        missing(f"the kernel headers ({path}; Debian's linux-libc-dev)")
    found: dict[str, int] = {}
    for name, value in re.findall(r"#define __NR_(\w+)\s+(.+)", path.read_text()):
        x32 = re.fullmatch(r"\(__X32_SYSCALL_BIT \+ (\d+)\)", value.strip())
        if x32:
            found[name] = 0x40000000 + int(x32.group(1))
        elif value.strip().isdigit():
            found[name] = int(value)
    return found


def run_bpf(program: bytes, *, nr: int, arch: int) -> int:
    """Run a classic BPF seccomp program on ``seccomp_data`` {nr, arch}; its return value.

    Implements what a seccomp program may hold that this one uses: BPF_LD|BPF_W|BPF_ABS
    (loads of the data's 32-bit words), BPF_JMP with BPF_JEQ/BPF_JGE and BPF_K, BPF_RET|BPF_K.
    """
    data = struct.pack("=iIQ6Q", nr, arch, 0, *([0] * 6))
    instructions = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = instructions[pc]
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35):  # jeq / jge #k
            taken = acc == k if code == 0x15 else acc >= k
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # ret #k
            return int(k)
        else:
            raise AssertionError(f"instruction {pc} has a code the filter must not use: {code:#x}")


@pytest.fixture(scope="module")
def x86_64_filter() -> bytes:
    return build_filter(abis_for("x86_64"))


@pytest.mark.parametrize("header", ["unistd_64.h", "unistd_32.h"])
def test_the_three_calls_are_refused_with_eperm_in_every_abi(
    x86_64_filter: bytes, header: str
) -> None:
    nrs = numbers(header)
    arch = ARCH_X86_64 if header == "unistd_64.h" else ARCH_I386
    for name in DENIED:
        assert run_bpf(x86_64_filter, nr=nrs[name], arch=arch) == ERRNO | errno.EPERM, name


@pytest.mark.parametrize("header", ["unistd_64.h", "unistd_32.h"])
def test_io_uring_perf_and_bpf_are_absent_with_enosys_in_every_abi(
    x86_64_filter: bytes, header: str
) -> None:
    nrs = numbers(header)
    arch = ARCH_X86_64 if header == "unistd_64.h" else ARCH_I386
    for name in ABSENT:
        assert run_bpf(x86_64_filter, nr=nrs[name], arch=arch) == ERRNO | errno.ENOSYS, name


def test_aarch64_refuses_the_same_calls_by_the_generic_numbers() -> None:
    """arm64's table is asm-generic's: the same eight calls, by their numbers there."""
    if not GENERIC.exists():
        missing(f"the kernel headers ({GENERIC}; Debian's linux-libc-dev)")
    nrs = {name: int(nr) for name, nr in
           re.findall(r"#define __NR_(\w+)\s+(\d+)\s*$", GENERIC.read_text(), re.M)}
    program = build_filter(abis_for("aarch64"))
    arch = 0xC00000B7  # AUDIT_ARCH_AARCH64: EM_AARCH64 (183) | 64-bit | little-endian
    for name in DENIED:
        assert run_bpf(program, nr=nrs[name], arch=arch) == ERRNO | errno.EPERM, name
    for name in ABSENT:
        assert run_bpf(program, nr=nrs[name], arch=arch) == ERRNO | errno.ENOSYS, name
    others = {n: nr for n, nr in nrs.items() if n not in (*DENIED, *ABSENT)}
    assert len(others) > 250
    assert {n for n, nr in others.items() if run_bpf(program, nr=nr, arch=arch) != ALLOW} == set()


@pytest.mark.parametrize("header", ["unistd_64.h", "unistd_32.h"])
def test_every_other_call_is_allowed(x86_64_filter: bytes, header: str) -> None:
    nrs = numbers(header)
    arch = ARCH_X86_64 if header == "unistd_64.h" else ARCH_I386
    others = {name: nr for name, nr in nrs.items() if name not in (*DENIED, *ABSENT)}
    assert len(others) > 300  # the header was read, not a stub
    refused = {n for n, nr in others.items() if run_bpf(x86_64_filter, nr=nr, arch=arch) != ALLOW}
    assert refused == set()


def test_the_x32_abi_is_not_implemented_inside(x86_64_filter: bytes) -> None:
    nrs = numbers("unistd_x32.h")
    for name in (*DENIED, "read", "execve"):
        assert run_bpf(x86_64_filter, nr=nrs[name], arch=ARCH_X86_64) == ERRNO | errno.ENOSYS


def test_an_abi_the_host_does_not_run_is_killed(x86_64_filter: bytes) -> None:
    assert run_bpf(x86_64_filter, nr=26, arch=ARCH_ARM) == KILL_PROCESS


def test_an_unknown_machine_cannot_be_contained() -> None:
    with pytest.raises(ContainmentUnavailable, match="riscv64"):
        session_filter("riscv64")


PROBE = r"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def outcome(result):
    return "ok" if result != -1 else "errno=%d" % ctypes.get_errno()


child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
seize = outcome(libc.ptrace(0x4206, child, None, None))  # PTRACE_SEIZE, a child of ours
buf = ctypes.create_string_buffer(b"x" * 16)
here = Iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
there = Iovec(ctypes.cast(buf, ctypes.c_void_p), 16)
read = outcome(libc.process_vm_readv(os.getpid(), ctypes.byref(here), 1, ctypes.byref(there), 1, 0))
os.kill(child, 9)
print("ptrace", seize, "process_vm_readv", read, "getpid", os.getpid())
"""


@pytest.mark.bwrap
@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_inside_the_sandbox_ptrace_and_process_vm_readv_are_refused(
    bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same probe (ptrace of its own child, process_vm_readv of itself: both allowed by the
    kernel's own rules, Yama or not) is refused under the filter and works without it."""
    spec = ConfinedSpec(command=[STANDIN_PYTHON, "-c", PROBE], executable=Path(STANDIN_PYTHON),
                        network="none", env={"PATH": "/usr/bin:/bin"}, bwrap=bwrap,
                        layout=measure_host_layout(), user=session_user())  # fmt: skip
    async with open_confined(spec) as sandbox:
        run = await capture(sandbox.child, timeout_s=30)
    eperm = f"errno={errno.EPERM}"
    assert run.stdout.split()[:4] == ["ptrace", eperm, "process_vm_readv", eperm], run.stderr
    # Without the filter (its program replaced by one that allows everything) both succeed:
    # the check above is not vacuous.
    allow_all = struct.pack("=HBBI", 0x06, 0, 0, ALLOW)
    monkeypatch.setattr("sandbox.confined._open.session_filter", lambda: allow_all)
    async with open_confined(spec) as sandbox:
        run = await capture(sandbox.child, timeout_s=30)
    assert run.stdout.split()[:4] == ["ptrace", "ok", "process_vm_readv", "ok"], run.stderr
