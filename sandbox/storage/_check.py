"""The preflight's ``storage`` check: can this runner give each session a store of its own?

Rules: RC-02 blind sessions and the disk bound (docs/storage.md). A root runner
makes, mounts and removes one small store the way a session's is made; a
runner that is not root gets a staging directory, and the check says what that
gives up, in words, instead of passing it off as the same.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

from .._report import Check
from ._errors import StoreNotRemoved, StoreUnavailable
from ._store import STORE_ROOT, open_session_store

if TYPE_CHECKING:
    from pathlib import Path

PROBE_SIZE_BYTES: Final = 32 << 20
"""The probe store's size: the smallest a session gets (`store_size`'s floor)."""
PROBE_INODES: Final = 64
"""The probe store's inode count: enough to show the file system works."""
GIVEN_UP: Final = (
    "the runner is not root, so it cannot loop-mount a file system per session: each "
    "session runs from a staging directory instead, whose path (a random name under "
    "/var/tmp, nothing of its arm, probe, session or batch) the session can read in "
    "/proc/self/mountinfo, and its writes limit (--max-writes) is sampled there (checked "
    "every fraction of a second), with each file bounded by RLIMIT_FSIZE, not held by the "
    "kernel as a root runner's file system of its own holds it; run as root for both"
)
"""What a runner that is not root gives up, for ``doctor`` and the batch's notes."""


def check_storage(euid: int | None = None, root: Path = STORE_ROOT) -> Check:
    """``storage``: a store is made, loop-mounted and removed (root), or what is given up.

    Args:
        euid: The runner's effective uid (None: this process's).
        root: Where stores live; `STORE_ROOT` in production.

    Returns:
        ``ok`` for a root runner whose probe store mounted and was removed,
        and for a runner that is not root (the detail says what it gives up:
        `GIVEN_UP`); ``broken`` with the fix when a root runner's store cannot
        be made or removed (every session would be refused its confinement).
    """
    if (os.geteuid() if euid is None else euid) != 0:
        return Check("storage", "ok", GIVEN_UP)
    try:
        with open_session_store(size_bytes=PROBE_SIZE_BYTES, inodes=PROBE_INODES,
                                root=root) as store:  # fmt: skip
            bounded = store.kernel_bounded
    except StoreUnavailable as exc:
        return Check("storage", "broken", exc.detail, exc.fix)
    except (StoreNotRemoved, OSError) as exc:
        return Check("storage", "broken", f"a probe store under {root}: {exc}",
                     f"check that {root} is a directory on a local file system of root's")
    if not bounded:
        return Check("storage", "broken", f"a store under {root} was not loop-mounted",
                     "run as root with loop devices (/dev/loop-control) and mkfs.ext4")
    return Check("storage", "ok", f"each session runs from an ext4 file system of its own, "
                                  f"loop-mounted under {root} (nosuid, nodev): the kernel bounds "
                                  "its size and inodes, and its mounts show no host path")
