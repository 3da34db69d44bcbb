"""How the host has /bin, /lib, /lib64 and /sbin: symlinks into /usr or real directories (RC-02)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

TOP_LEVEL_DIRS: Final = ("/bin", "/lib", "/lib64", "/sbin")
"""The top-level paths RC-02 mounts "as the host has them"; /usr itself is always bound."""


@dataclass(frozen=True, slots=True)
class HostLayout:
    """Which of `TOP_LEVEL_DIRS` are symlinks and which are real directories.

    A path that is absent on the host is in neither tuple, and is then absent
    inside the sandbox too.

    Attributes:
        symlinks: ``(link, target)`` pairs, e.g. ``("/bin", "usr/bin")``: the
            link's absolute path and its ``readlink`` target, unchanged
            (relative or absolute). `bwrap_argv` recreates each with
            ``--symlink TARGET LINK``; it never binds onto a symlink.
        directories: Absolute paths that are real directories, bound read-only.

    Raises:
        ValueError: a path is not one of `TOP_LEVEL_DIRS`, appears twice, or
            a target is empty.
    """

    symlinks: tuple[tuple[str, str], ...]
    directories: tuple[str, ...]

    def __post_init__(self) -> None:
        links = [link for link, _ in self.symlinks]
        names = [*links, *self.directories]
        unknown = [name for name in names if name not in TOP_LEVEL_DIRS]
        if unknown:
            raise ValueError(f"host layout names {unknown!r}; only {TOP_LEVEL_DIRS!r} are measured")
        if len(set(names)) != len(names):
            raise ValueError(f"host layout names a path twice: {names!r}")
        empty = [link for link, target in self.symlinks if not target]
        if empty:
            raise ValueError(f"host layout has symlinks with an empty target: {empty!r}")


def measure_host_layout(root: Path = Path("/")) -> HostLayout:
    """Measure how ``root`` has /bin, /lib, /lib64 and /sbin (RC-02, BC-16).

    A symlink is recorded as a symlink even when it points at a directory
    (``lstat``, not ``stat``); a dangling symlink is still a symlink.

    Args:
        root: The filesystem root to measure; tests pass a fake tree.

    Returns:
        The layout, paths given as absolute paths of the sandbox
        (``"/bin"``), not of ``root``.

    Raises:
        OSError: a path exists but cannot be inspected (permission denied).
    """
    symlinks: list[tuple[str, str]] = []
    directories: list[str] = []
    for name in TOP_LEVEL_DIRS:
        host_path = root / PurePosixPath(name).relative_to("/")
        if host_path.is_symlink():
            symlinks.append((name, os.readlink(host_path)))
        elif host_path.is_dir():
            directories.append(name)
    return HostLayout(symlinks=tuple(symlinks), directories=tuple(directories))
