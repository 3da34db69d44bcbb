"""argparse value types: each checks one command-line value and names the rule it breaks.

A refusal is an `argparse.ArgumentTypeError`, which argparse reports with the
option's name and the command's usage (exit 2).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Final

from sandbox import (
    MAX_POOL_USERS,
    MIN_STDOUT_BYTES,
    MiB,
    check_workspace_path,
    format_bytes,
)

_DURATION: Final = re.compile(r"\A(\d+(?:\.\d+)?)([smh]?)\Z")
_UNIT_S: Final = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration_s(text: str) -> float:
    """argparse type: seconds, or a number with ``s``, ``m`` or ``h`` (``90``, ``45m``,
    ``8h``); more than zero."""
    m = _DURATION.match(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give seconds, or a number with s, m or h (e.g. 8h)")
    value = float(m.group(1)) * _UNIT_S[m.group(2)]
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than zero, got {text!r}")
    return value


_SIZE: Final = re.compile(r"\A(\d+)\s*(|[kmg]i?b?)\Z", re.IGNORECASE)
_UNIT_BYTES: Final = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def size_bytes(text: str) -> int:
    """argparse type: bytes, or a whole number with K, M or G (binary: 1K is 1024 bytes;
    ``512M``, ``4GiB``, ``64k``); at least 1."""
    m = _SIZE.match(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size: give bytes, or a whole number with K, M or G (e.g. 512M)")
    value = int(m.group(1)) * _UNIT_BYTES[m.group(2)[:1].lower()]
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return value


SIZE_FLOORS: Final = {"max_memory_bytes": 64 * MiB, "max_tmp_bytes": MiB,
                      "max_write_bytes": MiB}
"""The least each size limit takes, in bytes: below it the pinned CLI cannot start (a session
holds about 150 MB of memory; its config directory and log hold tens of KiB), so a smaller
value is almost always a missing unit (``--max-memory 1`` is one byte)."""


COUNT_FLOORS: Final = {"max_processes": 8, "max_open_files": 20}
"""The least each count limit takes: Node.js alone runs 7 threads beside the sandbox's init
shell, and opens 19 files before the CLI reads its prompt (measured on the pinned CLI's Node),
so below these no session can start."""


def count_at_least(floor: int) -> Callable[[str], int]:
    """argparse type: a whole number of at least ``floor`` (a count limit's floor, named in the
    refusal)."""
    def parse(text: str) -> int:
        value = _whole(text)
        if value < floor:
            raise argparse.ArgumentTypeError(
                f"must be at least {floor}, the least a session can start with; got {value}")
        return value
    return parse


def size_at_least(floor: int) -> Callable[[str], int]:
    """argparse type: `size_bytes` of at least ``floor`` bytes (a size limit's floor, named in
    the refusal with its reason)."""
    def parse(text: str) -> int:
        value = size_bytes(text)
        if value < floor:
            raise argparse.ArgumentTypeError(
                f"{text!r} is {format_bytes(value)}, below the least a session can start "
                f"with, {format_bytes(floor)} (a size takes K, M or G: e.g. 512M)")
        return value
    return parse


def concurrency(text: str) -> int:
    """argparse type: ``--concurrency``, 1 to `MAX_POOL_USERS` (a root runner runs each
    session at once as its own session user, and the pool holds at most that many:
    docs/host.md)."""
    value = positive_int(text)
    if value > MAX_POOL_USERS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_POOL_USERS}, the most session users a runner leases at "
            f"once (each running session is its own user); got {value}")
    return value


def stdout_bound(text: str) -> int:
    """argparse type of ``--max-stdout``: a size (`size_bytes`) of at least
    `sandbox.MIN_STDOUT_BYTES` (docs/cli.md, "Defaults")."""
    value = size_bytes(text)
    if value < MIN_STDOUT_BYTES:
        raise argparse.ArgumentTypeError(
            f"must be at least {format_bytes(MIN_STDOUT_BYTES)} (one large line of a real "
            f"session passes 1 MB), got {text!r}")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1 (``--concurrency``, budgets)."""
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """argparse type: a whole number of at least 0 (``--seed``, ``--retries``)."""
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def workspace_path(text: str) -> str:
    """argparse type: a batch's workspace path (``--workspace-path``), normalised (RC-02)."""
    try:
        return check_workspace_path(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def probability(text: str) -> float:
    """argparse type: a share strictly between 0 and 1 (``0.5``, ``0.8``): at 0 or 1 every
    session of an arm would give the same verdict, so no difference could be sized."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: give a share such as "
                                         "0.5") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {text!r}")
    return value
