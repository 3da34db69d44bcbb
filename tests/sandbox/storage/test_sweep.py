"""`sweep_stores`: a killed runner's stores are unmounted, detached and removed; live ones stay."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox._owner import runner_tag
from sandbox.storage import _mounts, _store, open_session_store, sweep_stores
from tests.sandbox.storage.conftest import losetup_all, mountinfo_lines

DEAD_TAG = "999999999.1"
"""No pid reaches 999,999,999 (pid_max is at most 2**22): a runner that is not alive."""
SIZE_BYTES = 64 << 20


@pytest.mark.usefixtures("loop_runner")
def test_a_dead_runners_mounted_store_is_swept_and_a_live_one_kept(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_session_store(size_bytes=SIZE_BYTES, inodes=100, root=store_root) as live:
        monkeypatch.setattr(_store, "runner_tag", lambda: DEAD_TAG)
        dead_cm = open_session_store(size_bytes=SIZE_BYTES, inodes=100, root=store_root)
        dead = dead_cm.__enter__()  # as a runner killed inside the block leaves it
        (dead.subdir("workspace") / "f").write_bytes(b"left behind")
        assert mountinfo_lines(dead.path) != []  # a path with a space: \040 in mountinfo

        assert sweep_stores(store_root) == [dead.directory]

        assert mountinfo_lines(dead.directory) == []
        assert str(dead.directory) not in losetup_all()
        assert not dead.directory.exists()
        assert mountinfo_lines(live.path) != [] and live.path.is_dir()
        assert sweep_stores(store_root) == []  # idempotent
        dead_cm.__exit__(None, None, None)  # the owner's own teardown finds it gone: no error
    assert os.listdir(store_root) == []


@pytest.mark.usefixtures("loop_runner")
def test_a_dead_runners_attached_but_unmounted_image_is_detached(store_root: Path) -> None:
    store_root.mkdir()
    directory = store_root / f"{DEAD_TAG}-abc123"
    directory.mkdir()
    image = directory / "image"
    os.truncate(os.open(image, os.O_CREAT | os.O_WRONLY, 0o600), SIZE_BYTES)
    device = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True,
                            text=True, timeout=30, check=True).stdout.strip()  # fmt: skip
    assert _mounts.loops_under(store_root.resolve()) == [device]

    assert sweep_stores(store_root) == [directory.resolve()]
    assert str(image) not in losetup_all()
    assert not directory.exists()


def test_sweep_leaves_live_untagged_and_symlinked_entries(tmp_path: Path) -> None:
    live = tmp_path / f"{runner_tag()}-live"
    untagged = tmp_path / "not-a-tag"
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    for path in (live, untagged):
        path.mkdir()
    (tmp_path / f"{DEAD_TAG}-link").symlink_to(outside)
    (tmp_path / f"{DEAD_TAG}-plain").mkdir()  # a dead non-root runner's store: removed
    assert sweep_stores(tmp_path) == [tmp_path.resolve() / f"{DEAD_TAG}-plain"]
    assert live.is_dir() and untagged.is_dir() and outside.is_dir()
    assert (tmp_path / f"{DEAD_TAG}-link").is_symlink()


def test_sweep_of_a_missing_root_is_empty(tmp_path: Path) -> None:
    assert sweep_stores(tmp_path / "missing") == []


def test_mount_points_are_read_unescaped_and_deepest_first(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "42 27 7:0 / /s/a\\040b/fs rw - ext4 /dev/loop0 rw\n"
        "43 42 7:1 / /s/a\\040b/fs/in rw - ext4 /dev/loop1 rw\n"
        "44 27 7:2 / /s/a\\040bc rw - ext4 /dev/loop2 rw\n"
        "45 27 7:3 / /s/tab\\011back\\134slash rw - ext4 /dev/loop3 rw\n")  # fmt: skip
    assert _mounts.mount_points_under(Path("/s/a b"), mountinfo=info) == [
        Path("/s/a b/fs/in"), Path("/s/a b/fs")]
    assert _mounts.mount_points_under(Path("/s/tab\tback\\slash"), mountinfo=info) == [
        Path("/s/tab\tback\\slash")]
