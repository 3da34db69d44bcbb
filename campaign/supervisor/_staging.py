"""Where one attempt's workspace and log directory live while it runs: a store of its own.

Blind sessions (RC-02): a session reads ``/proc/self/mountinfo``, where a bind
mount shows its source's path within its file system. A workspace under the
batch shows ``<batch>/sessions/<arm>/<probe>/<session>/workspace`` there, so
the attempt is sealed into a store of its own instead (`sandbox.storage`): for
a root runner a loop-mounted ext4 file system, whose mounts show only
``/workspace`` and ``/log``, and whose size the kernel holds the session to
(disk bound: ``fallocate``, sparse files and inodes alike); for a runner that
is not root a staging directory whose path names nothing of the batch. When
the sandbox has ended (every process of it gone), what the batch keeps is
copied into ``sessions/<arm>/<probe>/<session>/`` (`copy_out`: no symlink
followed, sparse files sparse, at most the store's size), and the store goes.
"""

from __future__ import annotations

import contextlib
import json
import os
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import anyio

from campaign._json_text import json_safe
from recorder import write_atomic
from sandbox import copy_regular
from sandbox.storage import SessionStore, copy_out, list_tree, open_session_store, store_size

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable
    from pathlib import Path

WORKSPACE_NAME: Final = "workspace"
"""The workspace's directory in the store (its mountinfo root, inside the sandbox)."""
LOG_NAME: Final = "log"
"""The log directory's directory in the store."""
CONFIG_DIR_NAME: Final = "config"
"""The config directory's directory in a store of its own (with the credentials copy)."""
LISTING_NAME: Final = "workspace.listing.json"
"""Beside the batch's ``workspace``, instead of it, for a session past its writes limit."""
EGRESS_NAME: Final = "egress"
"""The egress socket's directory in a store of its own."""


@dataclass(frozen=True, slots=True)
class Staged:
    """One attempt's store and the two directories it binds from it.

    Attributes:
        store: The store (`sandbox.storage.SessionStore`); ``kernel_bounded``
            says whether the kernel bounds its size.
        workspace: Where the workspace is sealed into (does not exist yet).
        log_dir: The session's log directory (made, empty).
        config_dir: Where the session's config directory goes (not made), or None
            (a staging directory, not a file system of its own: the shared config
            root, as before).
        egress_dir: Where the egress socket's directory goes (not made), or None.
    """

    store: SessionStore
    workspace: Path
    log_dir: Path
    config_dir: Path | None = None
    egress_dir: Path | None = None


@asynccontextmanager
async def staged(*, sealed_bytes: int, sealed_files: int,
                 write_bytes: int) -> AsyncIterator[Staged]:  # fmt: skip
    """A store sized for the sealed copy and ``write_bytes`` more; removed on exit, always.

    Args:
        sealed_bytes: Bytes the sealed workspace holds at most (the corpus's).
        sealed_files: Files it holds at most.
        write_bytes: Bytes the session may add (``--max-writes``).

    **Cancellation:** the store's teardown (unmount, detach, remove) is
    shielded and runs in a worker thread; the cancellation then propagates.

    Raises:
        StoreUnavailable: the store cannot be made (a `ConfinementUnavailable`:
            the attempt is ``refused-confinement``, nothing spent).
    """
    size, inodes = store_size(sealed_bytes=sealed_bytes, sealed_files=sealed_files,
                              write_bytes=write_bytes)
    manager = open_session_store(size_bytes=size, inodes=inodes)
    store = await anyio.to_thread.run_sync(manager.__enter__)
    try:
        log_dir = await anyio.to_thread.run_sync(store.subdir, LOG_NAME)
        own = store.kernel_bounded  # mounts of its own file system show no host path
        yield Staged(store=store, workspace=store.path / WORKSPACE_NAME, log_dir=log_dir,
                     config_dir=store.path / CONFIG_DIR_NAME if own else None,
                     egress_dir=store.path / EGRESS_NAME if own else None)
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(manager.__exit__, type(exc), exc, exc.__traceback__)
        raise
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(manager.__exit__, None, None, None)


def keep(stage: Staged, *, workspace: Path, log_dir: Path, log_bytes: int,
         over_writes: bool = False) -> list[str]:
    """Copy the ended session's workspace and log directory into the batch (blocking).

    Call only once every process of the session is gone. ``workspace`` and
    ``log_dir`` must not exist, or be empty (a fresh attempt's). The
    workspace goes with `copy_out` (symlinks as links, sparse files sparse,
    at most the store's size); the log as the runner's copy of its regular
    files, at most ``log_bytes`` (`sandbox.copy_regular`: what a
    session may write, however it wrote it). A part the session never had (a
    seal that failed before it wrote) is skipped.

    A session past its writes limit (``over_writes``) keeps its workspace's
    listing, not its bytes (docs/storage.md "Past the writes limit"): no
    ``workspace`` is made, and `LISTING_NAME` beside it holds every entry's
    path, kind and sizes (`sandbox.storage.list_tree`). Its log is kept as
    ever (at most ``log_bytes``, the writes limit itself).

    Returns:
        One line per entry the workspace copy left out (not a regular file,
        directory or symlink, or past the store's size), its name quoted as a
        JSON string (a session's names carry control characters), for the
        attempt's reason; past the writes limit, one line saying the
        workspace's data was left out and where its listing is.
    """
    left: list[str] = []
    if stage.workspace.is_dir() and not stage.workspace.is_symlink():
        _clear(workspace)
        if over_writes:
            listing = list_tree(stage.workspace)
            # A name that is not UTF-8 as \xHH text, never a lone surrogate (docs/batch.md).
            record = json.dumps(json_safe(listing.as_record()), indent=1, sort_keys=True) + "\n"
            write_atomic(workspace.with_name(LISTING_NAME), record.encode())
            left = [f"the workspace's data, past the writes limit ({len(listing.entries)} "
                    f"entries and their sizes listed in {LISTING_NAME})"]
        else:
            report = copy_out(stage.workspace, workspace, max_bytes=stage.store.size_bytes)
            left = [f"{json.dumps(item.path)} ({item.reason})" for item in report.skipped]
    if stage.log_dir.is_dir() and not stage.log_dir.is_symlink():
        _clear(log_dir)
        copy_regular(stage.log_dir, log_dir, max_bytes=log_bytes)
    return left


def _clear(directory: Path) -> None:
    """Remove ``directory`` if it is an empty one the attempt made (never a full one)."""
    with contextlib.suppress(FileNotFoundError):
        directory.rmdir()


def sealed_extent(root: Path, files: Iterable[str]) -> tuple[int, int]:
    """``(bytes, files)`` a sealed workspace of the corpus at ``root`` holds at most (blocking).

    The seal copies a subset of the corpus's regular files (RC-09), so their
    sizes summed bound it; a file gone or unreadable counts 0 bytes (the seal
    then refuses it anyway).
    """
    total = count = 0
    for relpath in files:
        count += 1
        with contextlib.suppress(OSError):
            total += os.lstat(root / relpath).st_size
    return total, count


