"""`open_session_store`: a file system of the session's own (RC-02 blind sessions, disk bound)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from pathlib import Path

import pytest

from sandbox import measure_host_layout
from sandbox.storage import SessionStore, StoreUnavailable, _mounts, _store, open_session_store
from tests.sandbox.storage.conftest import losetup_all, mountinfo_lines

SIZE_BYTES = 64 << 20
INODES = 1000
INODES_PER_GROUP_ROUNDING = 16
"""ext4 fills whole inode-table blocks: 4096 / 256 bytes, per 128 MiB block group."""
pytestmark = pytest.mark.usefixtures("loop_runner")


def _gone(store: SessionStore) -> None:
    assert mountinfo_lines(store.directory) == []
    assert str(store.directory) not in losetup_all()
    assert _mounts.loops_under(store.directory) == []
    assert not store.directory.exists()


def test_a_store_is_its_own_mount_whose_root_is_slash(store_root: Path) -> None:
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        (line,) = mountinfo_lines(store.path)
        fields = line.split(" ")
        dash = fields.index("-")
        assert fields[3] == "/"  # the root field: nothing of the host path shows
        assert fields[dash + 1] == "ext4"
        assert fields[dash + 2].startswith("/dev/loop")
        assert {"nosuid", "nodev"} <= set(fields[5].split(","))
        assert store.kernel_bounded
        info = os.stat(store.path)
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o755, 0)
        assert os.listdir(store.path) == []  # lost+found removed: only the caller's names
        workspace = store.subdir("workspace")
        assert stat.S_IMODE(os.stat(workspace).st_mode) == 0o700
        assert store.subdir("workspace") == workspace  # kept when present
        assert stat.S_IMODE(os.stat(store.directory).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(store_root).st_mode) == 0o711
        assert "ext4" in repr(store) and str(store.path) in repr(store)


@pytest.mark.bwrap
def test_inside_bwrap_the_bind_of_a_store_subdir_shows_only_its_name(
        bwrap: str, store_root: Path) -> None:
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        store.subdir("workspace")
        layout = measure_host_layout()
        argv = [bwrap, "--unshare-user", "--unshare-pid", "--proc", "/proc",
                "--ro-bind", "/usr", "/usr"]
        for directory in layout.directories:
            argv += ["--ro-bind", directory, directory]
        for link, target in layout.symlinks:
            argv += ["--symlink", target, link]
        argv += ["--bind", str(store.path / "workspace"), "/workspace/x"]
        run = subprocess.run([*argv, "cat", "/proc/self/mountinfo"], capture_output=True,
                             text=True, timeout=30, check=True)  # fmt: skip
    (line,) = [ln for ln in run.stdout.splitlines() if ln.split(" ")[4] == "/workspace/x"]
    assert line.split(" ")[3] == "/workspace"
    assert "store" not in line and str(store_root.parent) not in line


def test_writing_past_the_size_is_refused_by_the_kernel(store_root: Path) -> None:
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        written = 0
        with (pytest.raises(OSError) as caught,
              open(store.subdir("w") / "big", "wb", buffering=0) as out):  # fmt: skip
            while written <= SIZE_BYTES:
                written += out.write(b"\0" * (1 << 20))
        assert caught.value.errno == errno.ENOSPC
        assert written < SIZE_BYTES
        image = os.stat(store.directory / "image")
        assert image.st_blocks * 512 <= SIZE_BYTES


def test_fallocate_past_the_size_is_refused(store_root: Path) -> None:
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        fd = os.open(store.subdir("w") / "f", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            with pytest.raises(OSError) as caught:
                os.posix_fallocate(fd, 0, 16 << 30)
            assert caught.value.errno == errno.ENOSPC
        finally:
            os.close(fd)
        assert os.stat(store.directory / "image").st_blocks * 512 <= SIZE_BYTES


def test_the_inode_count_bounds_the_files_made(store_root: Path) -> None:
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        made = 0
        with pytest.raises(OSError) as caught:
            while made <= INODES + INODES_PER_GROUP_ROUNDING:
                os.close(os.open(store.path / f"f{made}", os.O_CREAT | os.O_WRONLY, 0o600))
                made += 1
        assert caught.value.errno == errno.ENOSPC
        assert INODES <= made <= INODES + INODES_PER_GROUP_ROUNDING


def test_the_exit_leaves_no_mount_no_loop_device_and_no_file(store_root: Path) -> None:
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        (store.subdir("w") / "f").write_bytes(b"data")
        assert mountinfo_lines(store.path) != []
        assert str(store.directory / "image") in losetup_all()  # so the checks below can fail
    _gone(store)
    assert os.listdir(store_root) == []


def test_a_keyboard_interrupt_in_the_block_still_cleans(store_root: Path) -> None:
    with (pytest.raises(KeyboardInterrupt),
          open_session_store(size_bytes=SIZE_BYTES, inodes=INODES,
                             root=store_root) as store):  # fmt: skip
        (store.subdir("w") / "f").write_bytes(b"data")
        raise KeyboardInterrupt
    _gone(store)


def test_a_busy_store_is_detached_lazily_and_its_loop_device_freed_after(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_mounts, "BUSY_RETRY_S", 0.2)
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        held = os.open(store.subdir("w"), os.O_RDONLY | os.O_DIRECTORY)  # a straggler
    try:
        assert mountinfo_lines(store.directory) == []
        assert not store.directory.exists()
    finally:
        os.close(held)
    assert _mounts.loops_under(store.directory) == []  # autoclear at the last release
    assert str(store.directory) not in losetup_all()


def test_a_failed_mkfs_is_store_unavailable_and_leaves_nothing(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_store, "MKFS_OPTIONS", ("-q", "-F", "-O", "no_such_feature"))
    with (pytest.raises(StoreUnavailable, match=r"mkfs\.ext4"),
          open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root)):  # fmt: skip
        pytest.fail("the block must not run")
    assert os.listdir(store_root) == []
    assert str(store_root) not in losetup_all()


def test_a_runner_that_is_not_root_gets_a_plain_unbounded_directory(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_store, "_runner_is_root", lambda: False)
    with open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store:
        assert not store.kernel_bounded
        assert store.path.is_dir() and mountinfo_lines(store.directory) == []
        assert store.path.parent.parent == store_root.resolve()
        (store.subdir("workspace") / "f").write_bytes(b"x")
        assert "unbounded" in repr(store)
    assert not store.directory.exists()


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\0b"])
def test_a_subdir_name_is_one_component(store_root: Path, name: str) -> None:
    with (open_session_store(size_bytes=SIZE_BYTES, inodes=INODES, root=store_root) as store,
          pytest.raises(ValueError, match="one path component")):  # fmt: skip
        store.subdir(name)


def test_a_symlinked_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root").symlink_to(tmp_path / "elsewhere")
    with (pytest.raises(StoreUnavailable, match="not a directory of this runner"),
          open_session_store(size_bytes=SIZE_BYTES, inodes=INODES,
                             root=tmp_path / "root")):  # fmt: skip
        pytest.fail("the block must not run")
