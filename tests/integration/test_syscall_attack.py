"""A session cannot reach io_uring, perf_event_open or bpf: an attack from inside, under bwrap.

Rule (docs/confinement.md "Process containment", point 2; `sandbox._seccomp`): as defence in
depth, the sandbox's seccomp filter answers ``io_uring_setup``, ``io_uring_enter``,
``io_uring_register``, ``perf_event_open`` and ``bpf`` with ENOSYS in every ABI the host
runs. A stand-in harness (one self-contained file run by Debian's python3 as a session,
through ``record`` under real bwrap) makes each call with ``syscall(2)`` by its number for
this machine (asm/unistd_64.h, asm-generic/unistd.h), writes what each returned and its
errno into its workspace, and prints a valid stream. Each must have returned -1 with
ENOSYS: the kernel's own answers to these calls with these arguments are a new ring, EBADF,
EINVAL, EFAULT or EPERM, never ENOSYS (the kernel has them), so ENOSYS is the filter's.

Seen red: the filter's ``ABSENT_CALLS`` comparisons left out of `sandbox._seccomp.build_filter`
(the filter as it was), on Linux 6.18: io_uring_setup made a ring (fd 3), io_uring_enter
EBADF, io_uring_register EINVAL, perf_event_open EFAULT, bpf EINVAL.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from sandbox._config import sweep_config_root
from tests.integration import kit
from tests.integration.test_record_standins import (
    ANSWERED,
    PROBE,
    init,
    make_corpus,
    record,
    result,
)

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(180)]

CALLS = ("io_uring_setup", "io_uring_enter", "io_uring_register", "perf_event_open", "bpf")
STANDIN = r'''#!/usr/bin/python3
import ctypes, json, os, platform, sys
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (syscall attack)"); sys.exit(0)
NUMBERS = {  # asm/unistd_64.h; asm-generic/unistd.h (arm64)
    "x86_64": {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
               "perf_event_open": 298, "bpf": 321},
    "aarch64": {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
                "perf_event_open": 241, "bpf": 280},
}[platform.machine()]
PARAMS = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
ARGS = {  # each call's arguments: a real attempt (io_uring with 8 entries and parameters)
    "io_uring_setup": (8, ctypes.addressof(PARAMS)),
    "io_uring_enter": (-1, 0, 0, 0, 0, 0),
    "io_uring_register": (-1, 0, 0, 0),
    "perf_event_open": (0, 0, -1, -1, 0),
    "bpf": (0, 0, 0),
}
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
seen = {}
for name, nr in NUMBERS.items():
    ctypes.set_errno(0)
    got = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in ARGS[name]])
    seen[name] = [got, ctypes.get_errno()]
    if got >= 0:
        os.close(got)
open("errnos.json", "w").write(json.dumps(seen))
os.write(1, STREAM)
'''


def test_io_uring_perf_event_open_and_bpf_are_absent_inside(tmp_path: Path, bwrap: str) -> None:
    batch = tmp_path / "b"
    corpus = make_corpus(tmp_path / "corpus")
    harness = tmp_path / "claude"
    harness.write_text(STANDIN.replace("STREAM", repr(init() + ANSWERED + result())))
    harness.chmod(0o755)
    try:
        run = record(corpus, batch, harness, "--post-result-grace", "2")
    finally:
        kit.kill_all(kit.processes_under(tmp_path))
        sweep_config_root()
    assert run.returncode == 0, run.stdout + run.stderr
    (final,) = kit.final_list(batch)
    assert final["state"] == "recorded", final["reason"]
    workspace = batch / "sessions" / "present" / PROBE / "r1" / "workspace"
    seen = json.loads((workspace / "errnos.json").read_text())
    assert seen == {name: [-1, errno.ENOSYS] for name in CALLS}
