"""What is mounted under a store, and how it is unmounted and its loop device detached.

Mount points come from ``/proc/self/mountinfo`` (proc(5)): field 5 is the
mount point, with space, tab, newline and backslash escaped as ``\\040``,
``\\011``, ``\\012`` and ``\\134``. Loop devices come from
``/sys/block/loop*/loop/backing_file`` (the image's path, `` (deleted)``
appended once it is unlinked), so a device a killed runner attached without
mounting is found too.
"""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from typing import Final

from .._remove import remove_tree
from ._errors import StoreNotRemoved
from ._tools import failed, run_tool

__all__ = ["detach_loops", "dismantle", "loops_under", "mount_points_under", "unmount"]

MOUNTINFO: Final = Path("/proc/self/mountinfo")
SYS_BLOCK: Final = Path("/sys/block")
UMOUNT_TIMEOUT_S: Final = 30.0
"""One umount or losetup; an ext4 without a journal and with nothing dirty unmounts in ms."""
BUSY_RETRY_S: Final = 2.0
"""How long a busy mount is retried before it is detached lazily (a straggling ``close``)."""
_BUSY_PAUSE_S: Final = 0.05
_ESCAPE: Final = re.compile(r"\\([0-7]{3})")
_DELETED: Final = " (deleted)"


def _unescape(field: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def mount_points_under(directory: Path, *, mountinfo: Path = MOUNTINFO) -> list[Path]:
    """Mount points at or under ``directory`` (absolute, resolved), deepest first."""
    top = str(directory)
    found = []
    for line in mountinfo.read_text(errors="surrogateescape").splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            point = _unescape(fields[4])
            if point == top or point.startswith(top.rstrip("/") + "/"):
                found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def unmount(point: Path) -> None:
    """Unmount ``point``: ``umount``; only while it is busy, retried for `BUSY_RETRY_S`
    seconds, then ``umount -l`` (detached now, freed when its last user lets go).

    Raises:
        StoreNotRemoved: umount failed for another reason than busy, or ``-l`` failed too.
        StoreUnavailable: umount is missing or overran `UMOUNT_TIMEOUT_S`.
    """
    deadline = time.monotonic() + BUSY_RETRY_S
    while True:
        run = run_tool(["umount", "--", str(point)], timeout_s=UMOUNT_TIMEOUT_S)
        if run.returncode == 0 or "not mounted" in run.stderr:
            return
        if "busy" not in run.stderr:
            raise StoreNotRemoved(str(point), failed(run))
        if time.monotonic() >= deadline:
            break
        time.sleep(_BUSY_PAUSE_S)
    lazy = run_tool(["umount", "-l", "--", str(point)], timeout_s=UMOUNT_TIMEOUT_S)
    if lazy.returncode != 0:
        raise StoreNotRemoved(str(point), failed(lazy))


def loops_under(directory: Path, *, sys_block: Path = SYS_BLOCK) -> list[str]:
    """Loop devices (``/dev/loopN``) whose backing file lies under ``directory``."""
    top = str(directory).rstrip("/") + "/"
    devices = []
    for backing in sorted(sys_block.glob("loop*/loop/backing_file")):
        with contextlib.suppress(OSError):  # detached meanwhile
            name = backing.read_text(errors="surrogateescape").rstrip("\n")
            name = name.removesuffix(_DELETED)
            if name.startswith(top):
                devices.append("/dev/" + backing.parent.parent.name)
    return devices


def detach_loops(directory: Path) -> list[str]:
    """Detach every loop device backed by a file under ``directory``; returns them.

    A device ``mount -o loop`` attached is detached by its umount already
    (autoclear); this finds one a killed runner left attached without a mount.

    Raises:
        StoreNotRemoved: ``losetup -d`` failed for a device still attached.
    """
    devices = loops_under(directory)
    for device in devices:
        run = run_tool(["losetup", "-d", device], timeout_s=UMOUNT_TIMEOUT_S)
        if run.returncode != 0 and device in loops_under(directory):
            raise StoreNotRemoved(str(directory), failed(run))
    return devices


def dismantle(directory: Path) -> None:
    """Unmount everything under ``directory``, detach its loop devices, and remove it.

    Idempotent: a directory already gone is not an error. Nothing is removed
    while a mount remains under it (`remove_tree` would empty the mounted
    file system and then fail on its mount point), and no symlink is followed.

    Raises:
        StoreNotRemoved: a mount or loop device stays, or the tree cannot be removed.
        StoreUnavailable: umount or losetup is missing or overran its timeout.
    """
    for point in mount_points_under(directory):
        unmount(point)
    detach_loops(directory)
    if left := mount_points_under(directory):
        raise StoreNotRemoved(str(directory), f"still mounted: {', '.join(map(str, left))}")
    try:
        remove_tree(directory)
    except OSError as exc:
        raise StoreNotRemoved(str(directory), str(exc)) from exc
