"""`store_size`: after the sealed copy, the store still holds the session's writes (disk bound)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.storage import open_session_store, store_size
from sandbox.storage._sizing import MIN_SIZE_BYTES, NEW_INODES


def test_a_tiny_corpus_gets_the_floors() -> None:
    size, inodes = store_size(sealed_bytes=0, sealed_files=0, write_bytes=0)
    assert size == MIN_SIZE_BYTES and inodes == NEW_INODES
    assert size % (1 << 20) == 0


def test_sizes_grow_with_every_input_and_stay_near_their_sum() -> None:
    base = store_size(sealed_bytes=10**8, sealed_files=10**4, write_bytes=10**9)
    assert store_size(sealed_bytes=2 * 10**8, sealed_files=10**4, write_bytes=10**9)[0] > base[0]
    assert store_size(sealed_bytes=10**8, sealed_files=2 * 10**4, write_bytes=10**9) > base
    assert base[0] < 1.2 * (10**8 + 10**9) + (64 << 20)  # slack, not a multiple


def test_negative_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        store_size(sealed_bytes=-1, sealed_files=0, write_bytes=0)


@pytest.mark.usefixtures("loop_runner")
@pytest.mark.parametrize(("sealed_files", "per_file_bytes"), [(3000, 1), (500, 40_000)],
                         ids=["many-tiny-files", "fewer-larger-files"])  # fmt: skip
def test_after_the_sealed_copy_the_session_can_write_its_bound(
        store_root: Path, sealed_files: int, per_file_bytes: int) -> None:
    write_bytes = 8 << 20
    size, inodes = store_size(sealed_bytes=sealed_files * per_file_bytes,
                              sealed_files=sealed_files, write_bytes=write_bytes)  # fmt: skip
    with open_session_store(size_bytes=size, inodes=inodes, root=store_root) as store:
        workspace = store.subdir("workspace")
        for i in range(sealed_files):
            directory = workspace / f"d{i // 100}"
            directory.mkdir(exist_ok=True)
            (directory / f"sealed-file-{i:05d}.md").write_bytes(b"x" * per_file_bytes)
        os.sync()
        room = os.statvfs(store.path)
        assert room.f_bavail * room.f_frsize >= write_bytes
        assert room.f_favail >= NEW_INODES


def test_a_session_may_make_as_many_entries_as_its_writes_limit_has_blocks() -> None:
    """The sampled writes limit counts each new entry as at least one 4 KiB block, so the
    kernel's inode bound lets the session make that many (512 MiB: 131,072), never fewer."""
    _, inodes = store_size(sealed_bytes=0, sealed_files=10, write_bytes=512 << 20)
    assert inodes == 2 * 10 + (512 << 20) // 4096
