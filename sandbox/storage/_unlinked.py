"""Files a session unlinked but still holds open: bytes a walk of its directories cannot see.

A runner that is not root bounds a session's writes by sampling what its writable
directories hold (`sandbox.cgroup._watch`, docs/storage.md). A file made with ``O_TMPFILE``, or
written and then unlinked while a process keeps it open, takes disk on the same file
system and appears in no directory. The kernel still lists it among its holder's open
files: ``/proc/<pid>/fd/<n>`` links to ``<path> (deleted)``, and ``stat`` through that
link gives its blocks. `unlinked_bytes` adds those up, for files on the file systems of
the session's writable directories, each inode once.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterable

DELETED_SUFFIX: Final = " (deleted)"
"""What the kernel appends to the link of an open file that has no name left."""
MAX_FDS_LOOKED_AT: Final = 1 << 16
"""Open files looked at per sample at most (a session holds at most ``--max-processes`` x
``--max-open-files``); past it the sample counts what it saw (a lower bound)."""


def unlinked_bytes(pids: Iterable[int], devices: frozenset[int],
                   seen: set[tuple[int, int]] | None = None) -> int:
    """Bytes allocated (``st_blocks`` x 512) by the unlinked files ``pids`` hold open on
    ``devices`` (``st_dev`` of the writable directories), each inode once (blocking).

    ``seen`` holds the inodes already counted (a walk's); the ones counted here are added.
    A process that is gone, or whose descriptors the runner may not read, adds nothing.
    """
    seen = set() if seen is None else seen
    total = looked = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            looked += 1
            if looked > MAX_FDS_LOOKED_AT:
                return total
            link = f"/proc/{pid}/fd/{fd}"
            try:
                if not os.readlink(link).endswith(DELETED_SUFFIX):
                    continue
                info = os.stat(link)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if info.st_dev in devices and key not in seen:
                seen.add(key)
                total += info.st_blocks * 512
    return total
