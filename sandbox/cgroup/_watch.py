"""Watch one running sandbox against its limits, and end it at the first one passed.

Rule (`sandbox.cgroup._limits`): passing a limit ends that session, with the limit
named. The kernel enforces ``processes`` and ``memory`` (a refused fork, an
OOM kill) and the tmpfs its size (ENOSPC); this watch *sees* that it
happened, and holds the session to the limits only the runner can measure.
Every `POLL_S` while the session runs it reads:

* the limit cgroups' counters (``pids.events`` ``max``; ``oom_kill``);
* the private ``/tmp``'s and ``/dev/shm``'s free space (`TMPFS_MOUNTS`),
  through ``/proc/<pid>/root/tmp`` (``/dev/shm``) of the
  sandbox's pid 1 (bwrap's own process, which the session cannot trace or
  move; the filesystem is taken to be the session's tmpfs only once its size
  is the one asked for, since before bwrap's pivot_root that path is the
  host's ``/tmp``); less than `TMP_FULL_SLACK_BYTES` left is full. The tmpfs
  goes with the sandbox, so a /tmp filled and emptied again between two reads
  is not seen (it never held more than its size);
* the caller's own checks (the egress proxy's connection cap);

and, every `WRITE_POLL_S` at least (more apart when a walk is slow), what the
directories it may write hold: allocated blocks (``st_blocks``) of every
entry (an entry with fewer counts `MIN_ENTRY_BYTES`: its inode is the host's
too), hard links counted once, symlinks not followed, against what they held
when it started. A directory nested `MAX_WALK_DEPTH` levels deep, or one the
runner may not read, is a limit passed too (its writes could not be measured).
The first limit seen passed is kept (`LimitWatch.hit`) and the sandbox's
cgroup killed at once. Once the
session is over, `LimitWatch.check_after` reads the final counters and
measures the directories once more: a limit passed between two reads is
still named, and a session that wrote too much just before it exited ends
``limit-exceeded`` too.
"""

from __future__ import annotations

import os
import stat
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final, final

import anyio

from .._groups import single_unwrapped
from .._hostfs import DIR_FLAGS
from ..storage import unlinked_bytes
from ._limits import LimitHit, Limits, format_bytes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence
    from pathlib import Path

    from ._cgroup import SessionCgroup

__all__ = ["MAX_WALK_DEPTH", "MIN_ENTRY_BYTES", "POLL_S", "LimitWatch", "allocated_bytes",
           "watching"]

TMPFS_MOUNTS: Final = ("/tmp", "/dev/shm")
"""The session's private tmpfs, each of ``--max-tmp``'s size (`sandbox._argv.bwrap_options`);
``tmp_bytes`` is the most either held."""
POLL_S: Final = 0.2
"""Seconds between two reads of the counters, /tmp and the caller's checks: cheap reads."""
WRITE_POLL_S: Final = 0.05
"""Least seconds between two walks of the writable directories. Writes land in the page
cache at gigabytes a second (measured here: 1 GiB in 0.35 s), so a session passes its
limit by what it writes in one interval before it is ended: about 150 MB at this pace. A
walk of a docs workspace takes about a millisecond; after a slower one (a large tree) the
next waits `WALK_SPACING` times as long, so walking takes at most a twentieth of a core."""
WALK_SPACING: Final = 20.0
MAX_WALK_DEPTH: Final = 64
"""Directory levels a walk measures; a directory deeper than that passes the writes limit."""
MIN_ENTRY_BYTES: Final = 4096
"""What an entry with fewer allocated bytes (an empty file, a short symlink, a FIFO) counts
against the writes limit: one block. Its inode is not in ``st_blocks``, and the inodes are
the host's filesystem's (16 M on this host's root, shared with everything on it): counted
by blocks alone, 300,000 empty files cost a session 4.9 MB of directory blocks, so the
default 512 MiB let one session take every inode of the host in a few minutes."""
TMP_FULL_SLACK_BYTES: Final = 1024 * 1024
"""/tmp counts as full when less than this is left (a write that hit ENOSPC left less)."""
_PAGE: Final = os.sysconf("SC_PAGE_SIZE")


class _Unmeasurable(Exception):
    """A directory the walk cannot measure: too deep, or one the runner may not read (a
    session of a runner that is not root can make its own directory unreadable)."""


def allocated_bytes(roots: Sequence[Path]) -> int:
    """Bytes allocated under ``roots`` (``st_blocks`` x 512), each inode once (blocking).

    Each directory is opened relative to its parent without following a
    symlink, so no path length and no planted link can hide what lies below.
    A root that does not exist adds nothing.

    Raises:
        _Unmeasurable: a directory lies more than `MAX_WALK_DEPTH` levels below a
            root, or the runner may not read one.
    """
    seen: set[tuple[int, int]] = set()
    total = 0
    for root in roots:
        try:
            fd = os.open(root, DIR_FLAGS)
        except OSError:
            continue
        try:
            total += _walk(fd, 0, seen)
        finally:
            os.close(fd)
    return total


def _walk(dir_fd: int, depth: int, seen: set[tuple[int, int]]) -> int:
    if depth > MAX_WALK_DEPTH:
        raise _Unmeasurable(f"directories nested more than {MAX_WALK_DEPTH} levels deep")
    total = 0
    with os.scandir(dir_fd) as entries:
        listed = list(entries)
    for entry in listed:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
        total += max(info.st_blocks * 512, MIN_ENTRY_BYTES)
        if stat.S_ISDIR(info.st_mode):
            try:
                fd = os.open(entry.name, DIR_FLAGS, dir_fd=dir_fd)
            except PermissionError as exc:
                raise _Unmeasurable("a directory the runner may not read") from exc
            except OSError:
                continue
            try:
                total += _walk(fd, depth + 1, seen)
            finally:
                os.close(fd)
    return total


@final
class LimitWatch:
    """The watch over one sandbox (module docstring); made by `open_confined`.

    Args:
        limits: The sandbox's limits.
        cgroup: Its cgroup (the counters, the kill, the pids to find bwrap's pid 1).
        writable: The directories it may write (workspace, log, config).
        baseline_bytes: `allocated_bytes` of ``writable`` before it started.
        checks: The caller's own, each returning a `LimitHit` once passed.

    Attributes:
        hit: The first limit seen passed, or None.
        peaks: The most seen used, per measure (``tmp_bytes``, ``write_bytes``;
            ``pids``, ``memory_bytes`` where the kernel keeps a peak).
    """

    def __init__(self, limits: Limits, cgroup: SessionCgroup, writable: Sequence[Path],
                 baseline_bytes: int, checks: Sequence[Callable[[], LimitHit | None]] = (),
                 *, count_unlinked: bool = False) -> None:
        self.limits = limits
        self.hit: LimitHit | None = None
        self.peaks: dict[str, int] = {}
        self._cgroup = cgroup
        self._writable = tuple(writable)
        self._baseline = baseline_bytes
        self._checks = tuple(checks)
        self._pid1: int | None = None
        self._unlinked_on = _devices(self._writable) if count_unlinked else frozenset()

    def __repr__(self) -> str:
        return f"<LimitWatch {self._cgroup.path.name} hit={self.hit}>"

    async def run(self) -> None:
        """Watch until cancelled; once a limit is passed, kill the cgroup every `POLL_S`.

        The kill is repeated because the sandbox's first process may join its
        cgroup after a limit was already seen passed (a caller's check).

        **Cancellation:** the only way it returns; a walk in flight finishes in its thread.
        """
        writes = self.limits.write_bytes is not None
        next_read = next_walk = anyio.current_time()
        while self.hit is None:
            if anyio.current_time() >= next_read:
                self.hit = self._counters() or self._tmp() or self._checks_hit()
                next_read = anyio.current_time() + POLL_S
            if self.hit is None and writes and anyio.current_time() >= next_walk:
                started = anyio.current_time()
                self.hit = await anyio.to_thread.run_sync(self._writes, abandon_on_cancel=True)
                spent = anyio.current_time() - started
                next_walk = anyio.current_time() + max(WRITE_POLL_S, WALK_SPACING * spent)
            if self.hit is None:
                wake = min(next_read, next_walk) if writes else next_read
                await anyio.sleep(max(0.0, wake - anyio.current_time()))
        while True:  # until the block ends: a process may join the cgroup after a kill
            self._cgroup.kill()
            await anyio.sleep(POLL_S)

    def check_after(self) -> LimitHit | None:
        """Once the session is over (its cgroup empty): the final counters and one more walk.

        Blocking (run it in a thread). Returns `hit`, set if still unset.
        """
        if self.hit is None:
            self.hit = self._counters(self._cgroup.final_events) or self._checks_hit()
        if self.hit is None and self.limits.write_bytes is not None:
            self.hit = self._writes()
        return self.hit

    def _counters(self, events: dict[str, int] | None = None) -> LimitHit | None:
        for group in self._cgroup.groups:
            count = group.events() if events is None else events.get(group.controller, 0)
            peak = group.peak()
            if peak is not None:
                key = "pids" if group.controller == "pids" else "memory_bytes"
                self.peaks[key] = max(self.peaks.get(key, 0), peak)
            if count and group.controller == "pids":
                return LimitHit("processes", f"the session tried to run more than "
                                f"{group.limit} processes and threads at once")  # fmt: skip
            if count:
                return LimitHit("memory", f"the session used all of its "
                                f"{format_bytes(group.limit)} of memory and the kernel ended "
                                f"{count} of its processes")  # fmt: skip
        return None

    def _checks_hit(self) -> LimitHit | None:
        return next((hit for check in self._checks if (hit := check()) is not None), None)

    def _tmp(self) -> LimitHit | None:
        size = self.limits.tmp_bytes
        if size is None:
            return None
        pid = self._pid1 or self._find_pid1()
        if pid is None:
            return None
        for inside in TMPFS_MOUNTS:
            try:
                fs = os.statvfs(f"/proc/{pid}/root{inside}")
            except OSError:
                continue
            total = fs.f_blocks * fs.f_frsize
            if total != -(-size // _PAGE) * _PAGE:  # not (yet) the session's tmpfs
                continue
            self._pid1 = pid
            free = fs.f_bavail * fs.f_frsize
            self.peaks["tmp_bytes"] = max(self.peaks.get("tmp_bytes", 0), total - free)
            if free < min(TMP_FULL_SLACK_BYTES, total):
                return LimitHit("tmp", f"the session filled its private {inside} of "
                                f"{format_bytes(size)}")  # fmt: skip
        return None

    def _find_pid1(self) -> int | None:
        """bwrap's pid 1 of the sandbox: its pid namespace's 1, one level below ours."""
        for pid in self._cgroup.procs():
            try:
                with open(f"/proc/{pid}/status") as status:
                    ids = next((line.split()[1:] for line in status
                                if line.startswith("NSpid:")), [])  # fmt: skip
            except OSError:
                continue
            if len(ids) == 2 and ids[1] == "1":
                return pid
        return None

    def _writes(self) -> LimitHit | None:
        limit = self.limits.write_bytes
        assert limit is not None
        try:
            written = allocated_bytes(self._writable) - self._baseline
            if self._unlinked_on:  # sampled bound: what the session unlinked but holds too
                written += unlinked_bytes(self._cgroup.procs(), self._unlinked_on)
        except _Unmeasurable as exc:
            return LimitHit("writes", f"the session made {exc}, so its writes cannot be "
                            "measured")  # fmt: skip
        self.peaks["write_bytes"] = max(self.peaks.get("write_bytes", 0), written)
        if written > limit:
            return LimitHit("writes", f"the session wrote {format_bytes(written)} into its "
                            f"workspace, log and config directories, over its "
                            f"{format_bytes(limit)}")  # fmt: skip
        return None


def _devices(roots: Sequence[Path]) -> frozenset[int]:
    """``st_dev`` of each root that exists."""
    found = set()
    for root in roots:
        try:
            found.add(os.stat(root).st_dev)
        except OSError:
            continue
    return frozenset(found)


@asynccontextmanager
async def watching(watch: LimitWatch | None) -> AsyncIterator[None]:
    """Run ``watch`` beside the caller's block (nothing for None); stop it when the block ends.

    The block's own exception comes out as it was raised (trio's strict task
    groups would wrap it in an exception group; the watch itself raises none).

    **Cancellation:** the watch is cancelled with the block.
    """
    if watch is None:
        yield
        return
    with single_unwrapped():
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch.run)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
