"""`list_tree`: the listing a session past its writes limit keeps (docs/storage.md), no bytes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sandbox._remove import remove_tree
from sandbox.storage import Listing, list_tree

DEEP = 2000
"""Past Python's recursion limit (1,000)."""


def _list_in_time(source: Path, **kwargs: int) -> Listing:
    """list_tree in a thread with a deadline: an opened FIFO would block, not fail."""
    result: list[Listing] = []
    worker = threading.Thread(target=lambda: result.append(list_tree(source, **kwargs)),
                              daemon=True)  # fmt: skip
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "list_tree blocked"
    assert result, "list_tree raised"
    return result[0]


def test_every_entry_is_named_with_its_kind_and_sizes_and_no_link_is_followed(
        tmp_path: Path) -> None:  # fmt: skip
    source, outside = tmp_path / "src", tmp_path / "outside"
    (source / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "host.txt").write_text("the host's")
    (source / "sub" / "a.txt").write_bytes(b"x" * 5000)
    with open(source / "sparse.bin", "wb") as f:
        f.truncate(1 << 30)  # a GiB long, no block of data
    os.symlink(outside, source / "out")
    os.mkfifo(source / "pipe")
    listing = _list_in_time(source)
    seen = {e.path: e for e in listing.entries}
    assert set(seen) == {"sub", "sub/a.txt", "sparse.bin", "out", "pipe"}
    assert (seen["sub/a.txt"].kind, seen["sub/a.txt"].size_bytes) == ("file", 5000)
    assert seen["sub/a.txt"].data_bytes >= 5000
    assert (seen["sparse.bin"].size_bytes, seen["sparse.bin"].data_bytes) == (1 << 30, 0)
    assert (seen["out"].kind, seen["pipe"].kind, seen["sub"].kind) == (
        "symlink", "fifo", "directory")
    assert seen["out"].size_bytes == len(str(outside))
    assert listing.unlisted == 0
    record = listing.as_record()
    assert {"path": "sub/a.txt", "kind": "file", "size_bytes": 5000,
            "data_bytes": seen["sub/a.txt"].data_bytes} in record["entries"]  # type: ignore[operator]


def test_past_its_bounds_entries_are_counted_not_named(tmp_path: Path) -> None:
    for n in range(10):
        (tmp_path / f"f{n}").write_bytes(b"y")
    listing = _list_in_time(tmp_path, max_entries=4)
    assert (len(listing.entries), listing.unlisted) == (4, 6)
    by_chars = _list_in_time(tmp_path, max_path_chars=2 * 3)  # "fN" is two characters
    assert (len(by_chars.entries), by_chars.unlisted) == (3, 7)


def test_a_tree_deeper_than_the_recursion_limit_is_listed(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(DEEP):
            os.mkdir("d", dir_fd=fd)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        listing = _list_in_time(tmp_path)
        assert len(listing.entries) == DEEP + 1
        assert listing.entries[-1].path == "/".join(["d"] * DEEP + ["leaf"])
    finally:  # pytest's own removal of its base directory recurses, and fails, this deep
        remove_tree(tmp_path / "d")
