"""Unlinked files held open count against a sampled writes bound (docs/storage.md)."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox.storage._unlinked import unlinked_bytes

MIB = 1024 * 1024


def _written(fd: int, size: int) -> None:
    os.write(fd, b"x" * size)
    os.fsync(fd)


def test_an_o_tmpfile_and_an_unlinked_file_held_open_are_counted_each_once(
        tmp_path: Path) -> None:
    device = os.stat(tmp_path).st_dev
    tmpfile = os.open(tmp_path, os.O_TMPFILE | os.O_WRONLY, 0o600)
    named = tmp_path / "gone"
    unlinked = os.open(named, os.O_CREAT | os.O_WRONLY, 0o600)
    kept = os.open(tmp_path / "kept", os.O_CREAT | os.O_WRONLY, 0o600)
    again = os.open(f"/proc/self/fd/{tmpfile}", os.O_RDONLY)  # the same inode twice
    try:
        for fd in (tmpfile, unlinked, kept):
            _written(fd, MIB)
        named.unlink()
        counted = unlinked_bytes([os.getpid()], frozenset({device}))
        assert 2 * MIB <= counted < 3 * MIB  # the named file is a walk's, not counted here
        assert unlinked_bytes([os.getpid()], frozenset({device + 1})) == 0  # another device
        assert unlinked_bytes([2**22 + 17], frozenset({device})) == 0  # no such process
    finally:
        for fd in (tmpfile, unlinked, kept, again):
            os.close(fd)
