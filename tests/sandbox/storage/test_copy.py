"""`copy_out`: a finished session's tree copied into the batch, trusting nothing in it."""

from __future__ import annotations

import os
import resource
import stat
import threading
from pathlib import Path

import pytest

from sandbox._remove import remove_tree
from sandbox.storage import CopyReport, Skipped, copy_out
from tests.conftest import missing

TIB = 1 << 40
DEEP = 2000
"""Past Python's recursion limit (1,000) and past the few descriptors the copy may hold."""


def _copy_in_time(source: Path, destination: Path, max_bytes: int = 1 << 30) -> CopyReport:
    """copy_out in a thread with a deadline: a followed FIFO would block, not fail."""
    result: list[CopyReport] = []
    worker = threading.Thread(
        target=lambda: result.append(copy_out(source, destination, max_bytes=max_bytes)),
        daemon=True)  # fmt: skip
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "copy_out blocked"
    assert result, "copy_out raised"
    return result[0]


def test_a_symlink_is_copied_as_a_link_and_never_read_through(tmp_path: Path) -> None:
    source, outside = tmp_path / "src", tmp_path / "outside"
    source.mkdir()
    outside.mkdir()
    os.mkfifo(outside / "trap")  # opening it for reading would block: a follow hangs the test
    (outside / "secret").write_text("host file")
    (source / "shadow").symlink_to("/etc/shadow")
    (source / "trap").symlink_to(outside / "trap")
    (source / "dir").symlink_to(outside)
    (source / "dangling").symlink_to("../../nowhere")
    report = _copy_in_time(source, tmp_path / "dst")
    dst = tmp_path / "dst"
    assert {n: os.readlink(dst / n) for n in os.listdir(dst)} == {
        "shadow": "/etc/shadow", "trap": str(outside / "trap"), "dir": str(outside),
        "dangling": "../../nowhere"}  # fmt: skip
    assert all((dst / n).is_symlink() for n in os.listdir(dst))
    assert (report.symlinks, report.files, report.directories) == (4, 0, 0)


def test_a_symlinked_source_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError, match=r"Too many levels|Not a directory"):
        copy_out(tmp_path / "link", tmp_path / "dst", max_bytes=0)


def test_a_fifo_and_a_socket_are_skipped_without_blocking(tmp_path: Path) -> None:
    import socket

    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    os.mkfifo(source / "sub" / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(source / "sock"))
        report = _copy_in_time(source, tmp_path / "dst")
    assert sorted(report.skipped, key=lambda s: s.path) == [
        Skipped("sock", "socket"), Skipped("sub/fifo", "fifo")]
    assert os.listdir(tmp_path / "dst" / "sub") == []


def test_a_device_node_is_skipped(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        missing("a root runner (mknod of a device needs root)")
    source = tmp_path / "src"
    source.mkdir()
    os.mknod(source / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    assert _copy_in_time(source, tmp_path / "dst").skipped == [Skipped("null", "device")]


def test_a_huge_sparse_file_is_copied_sparse(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    with open(source / "sparse", "wb") as out:
        out.write(b"head")
        out.seek(TIB)
        out.write(b"tail")
        out.truncate(2 * TIB)  # and a hole at the end, which no write makes
    report = _copy_in_time(source, tmp_path / "dst")
    copy = tmp_path / "dst" / "sparse"
    assert copy.stat().st_size == 2 * TIB
    assert copy.stat().st_blocks * 512 <= 1 << 20  # its two blocks, not a TiB
    with open(copy, "rb") as got:
        assert got.read(4) == b"head"
        got.seek(TIB)
        assert got.read(8) == b"tail\0\0\0\0"
        got.seek(TIB // 2)
        assert got.read(8) == b"\0" * 8
    assert report.bytes_copied <= 1 << 20


def _nest(top: Path, depth: int) -> None:
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    os.close(fd)


def _depth(top: Path) -> tuple[int, list[str]]:
    fd, depth = os.open(top, os.O_RDONLY | os.O_DIRECTORY), 0
    while "d" in (names := os.listdir(fd)):
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd, depth = child, depth + 1
    os.close(fd)
    return depth, names


def test_a_tree_deeper_than_the_recursion_limit_is_copied_with_few_descriptors(
        tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    _nest(source, DEEP)
    (source / "beside").write_bytes(b"x")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 16, hard))  # far below DEEP
        try:
            report = copy_out(source, tmp_path / "dst", max_bytes=1 << 20)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert _depth(tmp_path / "dst") == (DEEP, ["leaf"])
        assert (report.directories, report.files) == (DEEP, 2)
        assert len(os.listdir("/proc/self/fd")) == in_use
    finally:  # pytest's own clean-up of old temporary trees recurses
        remove_tree(source)
        remove_tree(tmp_path / "dst")


def test_a_name_that_is_not_utf8_is_copied_byte_for_byte(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    name = b"caf\xe9-\xff"
    with pytest.raises(UnicodeDecodeError):
        name.decode()
    os.mkdir(os.fsencode(source) + b"/" + name)
    with open(os.fsencode(source) + b"/" + name + b"/" + name, "wb") as out:
        out.write(b"latin-1")
    os.mkfifo(os.fsencode(source) + b"/" + name + b"/fifo")
    report = _copy_in_time(source, tmp_path / "dst")
    dst = os.fsencode(tmp_path / "dst")
    assert os.listdir(dst) == [name]
    with open(dst + b"/" + name + b"/" + name, "rb") as got:
        assert got.read() == b"latin-1"
    assert [os.fsencode(s.path) for s in report.skipped] == [name + b"/fifo"]


def test_copying_stops_at_max_bytes_and_lists_what_it_left(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    sizes = {"a": 600, "sub/b": 500, "sub/c": 300}
    for rel, size in sizes.items():
        (source / rel).write_bytes(b"x" * size)
    (source / "sub" / "link").symlink_to("a")
    report = _copy_in_time(source, tmp_path / "dst", max_bytes=1000)
    copied = {rel for rel in sizes if (tmp_path / "dst" / rel).exists()}
    left = {s.path: s.size_bytes for s in report.skipped if s.reason == "over-max-bytes"}
    assert copied | set(left) == set(sizes) and not copied & set(left)
    assert report.bytes_copied == sum(sizes[rel] for rel in copied) <= 1000
    assert left == {rel: sizes[rel] for rel in left} and left  # 1,400 bytes do not fit
    assert report.bytes_not_copied == sum(left.values())
    assert (tmp_path / "dst" / "sub").is_dir() and (tmp_path / "dst" / "sub" / "link").is_symlink()
    for rel in copied:
        assert (tmp_path / "dst" / rel).read_bytes() == b"x" * sizes[rel]


def test_the_copy_is_the_runners_with_the_reclaimed_workspace_modes(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "plain").write_bytes(b"p")
    (source / "tool").write_bytes(b"#!/bin/sh\n")
    os.chmod(source / "tool", 0o4777)  # setuid and world-writable: neither survives
    os.chmod(source / "plain", 0o666)
    os.chmod(source / "sub", 0o3777)
    copy_out(source, tmp_path / "dst", max_bytes=1 << 20)
    dst = tmp_path / "dst"
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (dst, dst / "sub", dst / "plain",
                                                               dst / "tool")}  # fmt: skip
    assert modes == {"dst": 0o755, "sub": 0o755, "plain": 0o644, "tool": 0o755}
    assert {(p.stat().st_uid, p.stat().st_gid) for p in dst.rglob("*")} == {
        (os.geteuid(), os.getegid())}


def test_an_existing_destination_is_refused(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    with pytest.raises(FileExistsError):
        copy_out(tmp_path / "src", tmp_path / "dst", max_bytes=0)
    with pytest.raises(ValueError, match="negative"):
        copy_out(tmp_path / "src", tmp_path / "dst2", max_bytes=-1)
