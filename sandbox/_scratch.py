"""Scratch directories of sandboxes, and what a killed runner left behind.

A sandbox that is given no workspace, log or config directory (a preflight
probe, the findings checker) gets them in ``/tmp/headwater-<name>-<runner
tag>-<random>/``, removed when it ends. A runner killed with SIGKILL removes
nothing; its runner tag (`sandbox._owner`) lets the next runner find and
remove its scratch directories and end its sessions' cgroups
(`sweep_killed_runners`), as `sandbox.sweep_config_root` does for credentials
copies.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Final

from ._owner import TAG, runner_gone, runner_tag
from ._remove import remove_tree
from .cgroup import sweep_cgroups
from .storage import FALLBACK_ROOT, STORE_ROOT, sweep_stores

__all__ = ["PREFIX", "make_scratch", "sweep_killed_runners", "sweep_scratch"]

PREFIX: Final = "headwater-"
"""Every scratch directory's name starts so, then the sandbox's label and the runner tag."""


def make_scratch(label: str) -> Path:
    """A new private (0700) directory ``<tmp>/headwater-<label>-<runner tag>-<random>``."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{label}-{runner_tag()}-"))


def sweep_scratch(root: Path | None = None) -> list[Path]:
    """Remove the scratch directories under ``root`` (the temp dir) of runners no longer running.

    A name without a runner tag (another tool's, or an older version's) is
    left alone. Returns the directories removed.
    """
    root = Path(tempfile.gettempdir()) if root is None else root
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        # headwater-<label>-<runner tag>-<random>: mkdtemp's random part holds no "-".
        parts = entry.name.rsplit("-", 2)
        tag = parts[1] if entry.name.startswith(PREFIX) and len(parts) == 3 else ""
        if (not TAG.fullmatch(tag) or not runner_gone(tag, entry=entry.path)
                or not entry.is_dir(follow_symlinks=False)):
            continue
        path = Path(entry.path)
        try:
            remove_tree(path)
        except OSError:
            continue
        removed.append(path)
    return removed


def sweep_killed_runners() -> list[Path]:
    """End and remove what runners killed before they could clean up left: their sessions'
    cgroups (`sandbox.cgroup._cgroup.sweep_cgroups`), then their sessions' stores (unmounted,
    detached, removed: `sandbox.storage.sweep_stores`; once the cgroups are ended nothing of
    a session holds one) and their scratch directories (blocking).

    Call it at start-up, beside `sandbox.sweep_config_root`, and say what it removed;
    `sandbox.open_confined` also runs the cgroup part once per process.

    Returns:
        Every cgroup and directory removed.
    """
    cgroups = sweep_cgroups()
    own_root = Path(FALLBACK_ROOT.format(uid=os.geteuid()))  # a runner that is not root's
    stores = [*sweep_stores(STORE_ROOT), *sweep_stores(own_root)]
    return [*cgroups, *stores, *sweep_scratch()]
