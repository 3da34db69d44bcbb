"""How large a session's store must be for its sealed copy and its writes (disk bound).

Measured on ext4 as `open_session_store` makes it (4 KiB blocks, 256-byte
inodes, no journal, 1.47.0), ``statvfs`` before and after writing the files:

* before any file, ``f_blocks`` is the image less the inode tables (inodes x
  256 bytes) and about 2.3 blocks per 128 MiB block group: 90 blocks for
  1 GiB and 1,024 inodes, 417 for 16 GiB and 2,048 (the fewest ext4 gives
  128 groups), 6,282 for 1 GiB and 100,000 inodes;
* ext4 keeps 2% of the blocks, at most 4,096 (16 MiB), back from every writer
  (``f_bavail`` 15,987 of ``f_bfree`` 16,314 for 64 MiB);
* each file costs its bytes rounded up to whole 4 KiB blocks, and about 40
  bytes of directory entry (a 4 KiB directory block per 100 files): 1,000
  one-byte files took 4,140 bytes each; 10,000 files of 10,000 bytes, 2,329
  bytes each over their data; 200 files of 1 MiB, 61 each.

So ``size = sealed_bytes + sealed_files * FILE_SLACK_BYTES + write_bytes
+ inodes * INODE_BYTES``, plus `MARGIN` of that (directory blocks, extent
blocks, group metadata) and `FIXED_BYTES`, rounded up to a MiB and at least
`MIN_SIZE_BYTES`; ``inodes = 2 * sealed_files + max(NEW_INODES, write_bytes //
BLOCK_BYTES)`` (the sealed files, as many again for their directories and the
session's copies, and the session's own: as many as its writes limit has 4 KiB
blocks, since the sampled limit counts every entry as at least one block,
`sandbox.cgroup._watch`, with a floor). The image is sparse: the size bounds the session;
the host pays only for the blocks written.
"""

from __future__ import annotations

from typing import Final

__all__ = ["FILE_SLACK_BYTES", "MIN_SIZE_BYTES", "NEW_INODES", "file_size_limit", "store_size"]

BLOCK_BYTES: Final = 4096
"""The store's block size (`sandbox.storage._store.MKFS_OPTIONS`)."""
INODE_BYTES: Final = 256
"""mke2fs's default inode size: the inode tables come out of the image."""
FILE_SLACK_BYTES: Final = BLOCK_BYTES + 128
"""Per sealed file: its last block's unused part at worst, and its directory entry."""
NEW_INODES: Final = 16_384
"""Files and directories the session may make beyond the sealed copy's (a ``git init``,
a scratch tree); 4 MiB of inode table, never written until used."""
MARGIN: Final = 0.03
"""Of the sum: the blocks ext4 keeps back from every writer (2% of them, at most 4,096:
``resv_clusters``, fs/ext4/super.c; ``f_bavail`` leaves them out), then directory and
extent blocks, group bitmaps and backups (measured: under 0.5%)."""
FIXED_BYTES: Final = 4 << 20
"""Superblock, group descriptors and root directory of a small store, with room to spare."""
MIN_SIZE_BYTES: Final = 32 << 20
"""The floor, so that a tiny corpus with a tiny write bound still gets a usable store."""
_MIB: Final = 1 << 20


def store_size(*, sealed_bytes: int, sealed_files: int, write_bytes: int) -> tuple[int, int]:
    """The ``(size_bytes, inodes)`` for `open_session_store` (disk bound; module docstring).

    After the sealed copy (``sealed_files`` files holding ``sealed_bytes``
    bytes) is written, the store still has room for ``write_bytes`` bytes of
    data and as many new files as ``write_bytes`` has 4 KiB blocks (at least
    `NEW_INODES`); the kernel refuses more than the image.

    Args:
        sealed_bytes: Bytes of the workspace's sealed copy (and anything else the caller
            puts in the store before the session).
        sealed_files: Files of that copy.
        write_bytes: Bytes the session may write (its writes limit).

    Returns:
        ``(size_bytes, inodes)``: the image's size in bytes, a multiple of 1 MiB and at
        least `MIN_SIZE_BYTES`, and the inode count.

    Raises:
        ValueError: an argument is negative.
    """
    if min(sealed_bytes, sealed_files, write_bytes) < 0:
        raise ValueError(f"sizes must not be negative: {sealed_bytes}, {sealed_files}, "
                         f"{write_bytes}")  # fmt: skip
    inodes = 2 * sealed_files + max(NEW_INODES, write_bytes // BLOCK_BYTES)
    need = (sealed_bytes + sealed_files * FILE_SLACK_BYTES + write_bytes
            + inodes * INODE_BYTES)  # fmt: skip
    size = need + int(need * MARGIN) + FIXED_BYTES
    return max(MIN_SIZE_BYTES, -(-size // _MIB) * _MIB), inodes


def file_size_limit(write_bytes: int) -> int:
    """The ``RLIMIT_FSIZE``, in bytes, of a session of a runner that is not root (disk bound).

    Without a store of its own, nothing but the sampled writes limit bounds what
    such a session writes (`sandbox.cgroup._watch`), and a page cache fills at
    gigabytes a second between two samples; the per-file bound lets no file grow
    past the limit at all (docs/storage.md "A runner that is not root"). It is
    the limit and one block more, so that a file the kernel stopped holds more
    than the limit and the sampler ends the session ``limit-exceeded``
    (``written > limit``); at exactly the limit it would be taken for within it.

    Raises:
        ValueError: ``write_bytes`` is less than 1.
    """
    if write_bytes < 1:
        raise ValueError(f"write_bytes must be at least 1, got {write_bytes}")
    return write_bytes + BLOCK_BYTES
