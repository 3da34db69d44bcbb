"""`sandbox._remove.remove_tree`: any tree a session made goes, or an OSError says why."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox._remove import OPEN_DIRS, remove_tree


def _nest(top: Path, depth: int) -> None:
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        (child := os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd))
        os.close(fd)
        fd = child
    os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    os.close(fd)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_tree_deeper_than_the_recursion_limit_is_removed_with_few_descriptors(
        tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    _nest(tree, 3000)
    (tree / "beside").mkdir()
    _nest(tree / "beside", 200)
    before = _open_fds()
    try:
        remove_tree(tree)
        assert not tree.exists()
        assert _open_fds() == before
    finally:
        subprocess.run(["rm", "-rf", str(tree)], check=False)


def test_a_wide_tree_a_planted_symlink_and_a_fifo_are_removed_and_the_target_kept(
        tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "kept").write_text("x")
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(300):
        (tree / f"s{i}").mkdir()
        (tree / f"s{i}" / "f").write_text("y")
    (tree / "link").symlink_to(target)
    (tree / "s0" / "link").symlink_to(target / "kept")
    os.mkfifo(tree / "fifo")
    _nest(tree / "s1", OPEN_DIRS * 3)
    remove_tree(tree)
    assert not tree.exists()
    assert (target / "kept").read_text() == "x"


def test_a_missing_path_is_nothing_and_a_symlink_at_the_top_is_unlinked(tmp_path: Path) -> None:
    remove_tree(tmp_path / "missing")
    target = tmp_path / "target"
    target.mkdir()
    (target / "kept").write_text("x")
    (tmp_path / "link").symlink_to(target)
    remove_tree(tmp_path / "link")
    assert not (tmp_path / "link").is_symlink()
    assert (target / "kept").read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root removes whatever the modes say")
def test_directories_made_unreadable_and_unwritable_are_removed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f").write_text("z")
    (tree / "a" / "b").chmod(0o500)
    (tree / "a").chmod(0)
    tree.chmod(0o500)
    remove_tree(tree)
    assert not tree.exists()
