"""A file system of the session's own: blind to its condition, bounded by the kernel.

Rules: RC-02 blind sessions (a bind mount's root field in
``/proc/self/mountinfo`` is the source's path within its file system, so a
workspace under the batch would show its arm, probe and session; on a file
system of its own it shows ``/workspace``) and the disk bound (the kernel
refuses a write, an ``fallocate`` or a new file past the store's size and
inode count; the runner's sampling of writes no longer has to catch them).

A root runner gets ``root/<runner tag>-<random>/`` (0700): a sparse ``image``
(0600), made ext4 without a journal, with a fixed inode count and no blocks
reserved, and loop-mounted ``nosuid,nodev`` at ``fs`` (``mount -o loop``: its
umount detaches the loop device). A runner that is not root cannot mount: its
``fs`` is a plain directory in the same place, which still names nothing of
the batch but bounds nothing (``kernel_bounded`` False; docs/storage.md).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from .._owner import runner_tag
from ._errors import StoreNotRemoved, StoreUnavailable
from ._mounts import dismantle
from ._tools import failed, run_tool

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["STORE_ROOT", "SessionStore", "open_session_store"]

STORE_ROOT: Final = Path("/var/tmp/headwater-campaign/store")
"""One fixed root for every runner's stores, where `sweep_stores` finds a killed runner's."""
STORE_ROOT_MODE: Final = 0o711
"""Search without listing, as `sandbox._config.CONFIG_ROOT_MODE`."""
STORE_DIR_MODE: Final = 0o700
FS_ROOT_MODE: Final = 0o755
"""The mounted file system's own root: root's, searchable, so a session user reaches its
subdirectory (0700, handed over by the caller) and lists nothing it may not."""
SUBDIR_MODE: Final = 0o700
RESERVED_INODES: Final = 11
"""Inodes ext4 holds before the first file: 1-10 reserved, 11 lost+found (removed at once:
the store's root holds only the caller's names)."""
MKFS_OPTIONS: Final = ("-q", "-F", "-t", "ext4", "-b", "4096", "-O", "^has_journal,^resize_inode",
                       "-m", "0", "-E", "lazy_itable_init=1,assume_storage_prezeroed=1,nodiscard")
"""mke2fs(8) 1.47: no journal (the store lives one session), no blocks kept for root, no room
to grow; the sparse image reads as zeros, so inode tables are neither written nor zeroed later
by the kernel (``assume_storage_prezeroed`` marks them zeroed), and nothing is discarded."""
MOUNT_OPTIONS: Final = "loop,nosuid,nodev,noatime,noinit_itable"
MKFS_TIMEOUT_S: Final = 60.0
"""mkfs of a 16 GiB image takes about 10 ms here; a minute means the host is wedged."""
MOUNT_TIMEOUT_S: Final = 30.0
FALLBACK_ROOT: Final = "/var/tmp/headwater-campaign-{uid}/store"
"""A runner that is not root and may not write `STORE_ROOT` (a root runner made it)."""
_IMAGE: Final = "image"
_FS: Final = "fs"


@final
class SessionStore:
    """One session's store, as `open_session_store` yields it (RC-02 blind sessions, disk bound).

    Attributes:
        path: The file system's directory (``<store>/fs``); its subdirectories are bound
            into the sandbox at fixed paths.
        directory: The store's own directory (``<root>/<runner tag>-<random>``).
        kernel_bounded: True for the loop-mounted ext4 (the kernel refuses writes past
            ``size_bytes`` and new inodes past ``inodes``); False for a plain directory.
        size_bytes: The image's size in bytes (requested; the usable space is smaller by the
            file system's metadata, `store_size`).
        inodes: Files and directories the file system holds at least, its root's excepted;
            ext4 rounds up to whole inode-table blocks, 16 per 128 MiB block group.
    """

    __slots__ = ("directory", "inodes", "kernel_bounded", "path", "size_bytes")

    def __init__(self, directory: Path, *, kernel_bounded: bool, size_bytes: int,
                 inodes: int) -> None:  # fmt: skip
        self.directory = directory
        self.path = directory / _FS
        self.kernel_bounded = kernel_bounded
        self.size_bytes = size_bytes
        self.inodes = inodes

    def subdir(self, name: str) -> Path:
        """``path/<name>``, made 0700 (the runner's) when absent; an existing one is kept.

        Raises:
            ValueError: ``name`` is empty, ``.``/``..``, or holds ``/`` or NUL.
            OSError: ``path/<name>`` exists and is not a directory (a symlink included).
        """
        if name in ("", ".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"a subdirectory name is one path component, got {name!r}")
        target = self.path / name
        with contextlib.suppress(FileExistsError):
            target.mkdir(mode=SUBDIR_MODE)
            os.chmod(target, SUBDIR_MODE)  # mkdir's mode passes through the umask
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            raise NotADirectoryError(f"{target} exists and is not a directory")
        return target

    def __repr__(self) -> str:
        kind = "ext4 on a loop device" if self.kernel_bounded else "plain directory, unbounded"
        return (f"<SessionStore {self.path} {kind}, {self.size_bytes} bytes, "
                f"{self.inodes} inodes>")  # fmt: skip


@contextlib.contextmanager
def open_session_store(*, size_bytes: int, inodes: int,
                       root: Path = STORE_ROOT) -> Iterator[SessionStore]:  # fmt: skip
    """Make one session's file system, yield it, and always unmount and remove it (blocking).

    Sync: run it in a worker thread. Size it with `store_size`. Rules: RC-02
    blind sessions, disk bound (module docstring).

    **Cancellation:** the teardown runs on a normal exit, on an exception and on
    ``KeyboardInterrupt``: ``umount`` (a busy mount retried for
    `sandbox.storage._mounts.BUSY_RETRY_S` seconds, then detached lazily),
    loop devices detached, the directory removed. After an exception its own
    failures are swallowed (the exception travels on; `sweep_stores` of the
    next runner removes what is left). Every command is bounded by a timeout.

    Args:
        size_bytes: The image's size in bytes (sparse: it costs what is written).
        inodes: Files and directories the session may make at least.
        root: Where stores live; `STORE_ROOT` in production. A runner that is not root
            and may not write it uses `FALLBACK_ROOT`.

    Yields:
        The store; ``store.subdir(name)`` makes the directories to bind.

    Raises:
        ValueError: ``size_bytes`` or ``inodes`` is not positive.
        StoreUnavailable: mkfs or mount failed, a tool is missing or overran, or ``root``
            is not a directory of this runner's (or root's).
        StoreNotRemoved: the block ended normally, but the store could not be removed.
        OSError: ``root`` or the store's directory cannot be made.
    """
    if size_bytes <= 0 or inodes <= 0:
        raise ValueError(f"size_bytes and inodes must be positive, got {size_bytes}, {inodes}")
    bounded = _runner_is_root()
    directory = _make_dir(root if bounded else _writable_root(root))
    store = SessionStore(directory, kernel_bounded=bounded, size_bytes=size_bytes,
                         inodes=inodes)  # fmt: skip
    try:
        _make_fs(store) if bounded else store.path.mkdir(mode=SUBDIR_MODE)
        yield store
    except BaseException:
        with contextlib.suppress(StoreNotRemoved, StoreUnavailable, OSError):
            dismantle(directory)
        raise
    dismantle(directory)


def stores_kernel_bounded() -> bool:
    """Whether this runner's stores are file systems of their own, whose size the kernel
    holds a session to (a root runner), rather than staging directories (docs/storage.md)."""
    return _runner_is_root()


def _runner_is_root() -> bool:
    """Whether this runner may mount (euid 0); tests stand in a runner that is not."""
    return os.geteuid() == 0


def _make_fs(store: SessionStore) -> None:
    image = store.directory / _IMAGE
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, store.size_bytes)
    finally:
        os.close(fd)
    mkfs = run_tool(["mkfs.ext4", *MKFS_OPTIONS, "-N", str(store.inodes + RESERVED_INODES),
                     str(image)], timeout_s=MKFS_TIMEOUT_S)  # fmt: skip
    if mkfs.returncode != 0:
        raise StoreUnavailable(failed(mkfs), "check that e2fsprogs is 1.47 or later")
    store.path.mkdir(mode=STORE_DIR_MODE)
    mount = run_tool(["mount", "-t", "ext4", "-o", MOUNT_OPTIONS, "--", str(image),
                      str(store.path)], timeout_s=MOUNT_TIMEOUT_S)  # fmt: skip
    if mount.returncode != 0:
        raise StoreUnavailable(failed(mount), "give the runner loop devices (modprobe loop; "
                               "/dev/loop-control in a container)")  # fmt: skip
    os.rmdir(store.path / "lost+found")
    os.chown(store.path, 0, 0)
    os.chmod(store.path, FS_ROOT_MODE)


def _make_dir(root: Path) -> Path:
    _ensure_root(root)
    made = tempfile.mkdtemp(prefix=f"{runner_tag()}-", dir=root.resolve())  # as mountinfo says
    os.chmod(made, STORE_DIR_MODE)
    return Path(made)


def _ensure_root(root: Path) -> None:
    """Create ``root`` (0711) when missing; refuse one that is a symlink or another user's."""
    with contextlib.suppress(FileExistsError):  # another runner won the race
        root.parent.mkdir(parents=True, exist_ok=True)
        root.mkdir(mode=STORE_ROOT_MODE)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (0, os.geteuid()):
        raise StoreUnavailable(f"{root} is not a directory of this runner's or root's",
                               f"remove {root}; the runner makes it again")  # fmt: skip
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != STORE_ROOT_MODE:
        os.chmod(root, STORE_ROOT_MODE)  # mkdir's mode passes through the umask


def _writable_root(root: Path) -> Path:
    """``root`` if this runner may make directories in it, else its own `FALLBACK_ROOT`."""
    with contextlib.suppress(OSError):
        _ensure_root(root)
        if os.access(root, os.W_OK | os.X_OK):
            return root
    fallback = Path(FALLBACK_ROOT.format(uid=os.geteuid()))
    fallback.parent.mkdir(mode=STORE_DIR_MODE, exist_ok=True)
    return fallback
