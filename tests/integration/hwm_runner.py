"""Run ``python -m campaign ARGS``; at its exit write two peaks (KiB) to $HW_HWM_FILE.

The first is the runner's own peak RSS (``VmHWM``; not its ``ru_maxrss``, which carries
the peak of the process that forked it); the second is ``RUSAGE_CHILDREN``'s ``ru_maxrss``:
the largest of the processes it started and reaped (grep, bwrap, the harness).
"""

from __future__ import annotations

import atexit
import os
import resource
import runpy
import sys


def _write_peak() -> None:
    with open("/proc/self/status") as fp:
        peak = next(line.split()[1] for line in fp if line.startswith("VmHWM:"))
    with open(os.environ["HW_HWM_FILE"], "w") as out:
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        out.write(f"{peak} {children}\n")


if __name__ == "__main__":
    atexit.register(_write_peak)
    sys.argv = ["campaign", *sys.argv[1:]]
    runpy.run_module("campaign", run_name="__main__")
