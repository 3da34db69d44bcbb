"""The start-up sweep: what a killed runner's stores left mounted, attached and on disk.

A runner killed with SIGKILL leaves its stores mounted, their loop devices
attached and their images on disk. Each store's name starts with its runner's
tag (`sandbox._owner`), so the next runner tells a dead runner's store from a
live one's, as `sandbox._scratch.sweep_scratch` does for scratch directories.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._owner import TAG, runner_gone
from ._mounts import dismantle
from ._store import STORE_ROOT

__all__ = ["sweep_stores"]


def sweep_stores(root: Path = STORE_ROOT) -> list[Path]:
    """Dismantle the stores under ``root`` of runners no longer running (blocking; start-up).

    A directory ``<runner tag>-<random>`` whose runner is known dead
    (`sandbox._owner.runner_gone`: of this pid namespace, and not running) is
    unmounted when mounted (as ``/proc/self/mountinfo`` says), its loop device
    detached, and removed; a live runner's store, one of a runner in another
    pid namespace (logged), a name without a tag and a symlink are left alone.
    Idempotent. Rules: disk bound (a killed runner's images hold disk), RC-02.

    Args:
        root: Where stores live; `STORE_ROOT` in production.

    Returns:
        The stores removed, sorted. A missing ``root`` gives ``[]``.

    Raises:
        StoreNotRemoved: a dead runner's store could not be unmounted or removed.
        StoreUnavailable: umount or losetup is missing or overran its timeout.
    """
    try:
        root = root.resolve()  # mountinfo names resolved paths
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    for entry in entries:
        tag = entry.name.rsplit("-", 1)[0]  # mkdtemp's random part holds no "-"
        if "-" not in entry.name or not TAG.fullmatch(tag):
            continue
        if not runner_gone(tag, entry=entry.path):  # running, or of another pid namespace
            continue
        if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            continue
        dismantle(Path(entry.path))
        removed.append(Path(entry.path))
    return removed
