"""After a session, its files are the runner's and its log is a copy (sandbox.storage._reclaim).

The trees here are made the way a session would leave them: owned by the
session user (when the tests run as root), setuid and setgid bits, a
world-writable directory, an ACL entry, a symlink to a host file, a FIFO, a
directory nested past the walk's depth.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sandbox.cgroup import allocated_bytes
from sandbox.storage._reclaim import MAX_DEPTH, reclaim_tree, replace_with_copy
from sandbox.users._privileges import _add_user_search, _read_acl
from tests.conftest import missing
from tests.integration import kit

MiB = 1024 * 1024
SESSION_UID = 999 if os.geteuid() == 0 else os.geteuid()
"""Who owns what the 'session' made here (the session user when root can chown to it)."""


def _as_session(*paths: Path) -> None:
    for path in paths:
        os.lchown(path, SESSION_UID, SESSION_UID)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _host_file(tmp_path: Path) -> Path:
    host = tmp_path / "host-secret"
    host.write_text("root only\n")
    host.chmod(0o600)
    return host


def test_the_workspace_becomes_the_runners_without_special_bits_acls_or_session_writes(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    py = ws / "py"
    py.write_bytes(b"\x7fELF not really")
    py.chmod(0o6755)  # a setuid and setgid copy of an interpreter
    notes = ws / "sub" / "notes.md"
    notes.write_text("x")
    notes.chmod(0o666)
    (ws / "sub").chmod(0o3777)  # setgid, sticky, world-writable
    _add_user_search(notes, 12345)  # an ACL entry the session granted
    _as_session(ws, ws / "sub", py, notes)
    done = reclaim_tree(ws)
    for path in (ws, ws / "sub", py, notes):
        info = os.lstat(path)
        assert (info.st_uid, info.st_gid) == (os.geteuid(), os.getegid()), path
    assert _mode(py) == 0o755  # executable, never setuid or setgid
    assert _mode(notes) == 0o644
    assert _mode(ws / "sub") == 0o755 and _mode(ws) == 0o755
    assert _read_acl(notes) is None
    assert done.entries == 4 and done.sealed == 0


def test_a_symlink_is_reowned_and_its_target_left_alone_and_a_fifo_does_not_hang(
        tmp_path: Path) -> None:
    host = _host_file(tmp_path)
    before = os.stat(host)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(host)
    (ws / "dirlink").symlink_to(tmp_path)
    os.mkfifo(ws / "pipe", 0o666)
    _as_session(ws, ws / "link", ws / "dirlink", ws / "pipe")
    reclaim_tree(ws)
    after = os.stat(host)
    assert (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)
    assert os.lstat(ws / "link").st_uid == os.geteuid()
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode) and _mode(ws / "pipe") == 0o644


def test_a_top_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "ws").symlink_to(tmp_path / "real")
    with pytest.raises(OSError):
        reclaim_tree(tmp_path / "ws")


def test_a_directory_at_the_depth_bound_is_closed_and_not_entered(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    deep = ws
    for level in range(MAX_DEPTH + 2):
        deep = deep / f"d{level}"
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    (deep / "f").chmod(0o4777)
    bound = ws.joinpath(*(f"d{level}" for level in range(MAX_DEPTH)))
    done = reclaim_tree(ws)
    assert done.sealed == 1
    assert _mode(bound) == 0o700 and os.lstat(bound).st_uid == os.geteuid()
    assert _mode(deep / "f") == 0o4777  # below the bound: unreachable, not changed


def test_a_log_directory_is_replaced_by_a_copy_of_its_regular_files(tmp_path: Path) -> None:
    host = _host_file(tmp_path)
    log = tmp_path / "log"
    (log / "nested").mkdir(parents=True)
    log.chmod(0o777)
    creds = log / "creds"
    creds.write_text("sk-the-session-key\n")
    creds.chmod(0o644)
    (log / "nested" / "hook.log").write_text("ran\n")
    (log / "shadow").symlink_to(host)
    os.mkfifo(log / "pipe")
    _as_session(log, log / "nested", creds, log / "nested" / "hook.log", log / "shadow")
    done = replace_with_copy(log, max_bytes=MiB)
    assert sorted(p.name for p in log.rglob("*")) == ["creds", "hook.log", "nested"]
    assert creds.read_text() == "sk-the-session-key\n"
    for path, mode in ((log, 0o700), (log / "nested", 0o700), (creds, 0o600),
                       (log / "nested" / "hook.log", 0o600)):
        info = os.lstat(path)
        assert (stat.S_IMODE(info.st_mode), info.st_uid) == (mode, os.geteuid()), path
    assert (done.entries, done.dropped) == (3, 2)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert host.read_text() == "root only\n"


def test_a_hard_link_in_the_log_becomes_an_independent_copy(tmp_path: Path) -> None:
    ws_file = tmp_path / "artifact.md"
    ws_file.write_text("kept\n")
    log = tmp_path / "log"
    log.mkdir()
    os.link(ws_file, log / "alias")
    replace_with_copy(log, max_bytes=MiB)
    (log / "alias").write_text("changed\n")
    assert ws_file.read_text() == "kept\n"


def test_the_log_copy_holds_no_more_than_its_bound_whatever_the_sizes_and_links(
        tmp_path: Path) -> None:
    """A sparse file (2 GiB, no block allocated) and one 1 MiB file under 100 names cost the
    session almost nothing of its writes limit (allocated blocks, hard links once); the
    copy writes every byte of each name, so it is bounded itself: what would pass the
    bound (8 MiB here) is dropped. Red without the bound: the copy wrote 2.1 GiB."""
    log = tmp_path / "log"
    log.mkdir()
    with open(log / "a-sparse", "wb") as f:
        f.truncate(2 * 1024 * MiB)
    (log / "b-hook.log").write_bytes(b"x" * MiB)
    for n in range(100):
        os.link(log / "b-hook.log", log / f"c-alias{n:03d}")
    done = replace_with_copy(log, max_bytes=8 * MiB)
    kept = sorted(p.name for p in log.iterdir())
    assert "a-sparse" not in kept and len(kept) == 8 and done.copied_bytes == 8 * MiB
    assert sum(os.lstat(p).st_blocks * 512 for p in log.iterdir()) <= 8 * MiB
    assert done.entries + done.dropped == 102



def _as_nobody(work: object) -> object:
    """``work()`` in a forked child that dropped to ``nobody`` (uid and gid 65534); its value."""
    import pickle

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            os.write(write, pickle.dumps(work()))  # type: ignore[operator]
        except BaseException as exc:
            os.write(write, pickle.dumps(repr(exc)))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)


def test_a_runner_that_is_not_root_measures_and_reclaims_what_its_session_made_unreadable(
        ) -> None:
    """A session of a runner that is not root runs as the runner and may chmod 000 its own
    directory: the writes walk calls that unmeasurable (a limit passed, never a hole), and
    the reclaim still reaches everything under it."""
    if os.geteuid() != 0:
        missing("a root runner, to play a runner that is not root")
    with kit.host_dir("hw-reclaim-") as root:
        root.chmod(0o755)  # nobody reaches it (pytest's own temporary directories are 0700)
        _unreadable_by_its_own_runner(root)


def _unreadable_by_its_own_runner(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "hidden" / "deeper").mkdir(parents=True)
    (ws / "hidden" / "deeper" / "f").write_bytes(b"x" * 65536)
    for path in (ws, ws / "hidden", ws / "hidden" / "deeper", ws / "hidden" / "deeper" / "f"):
        os.chown(path, 65534, 65534)
    (ws / "hidden").chmod(0)

    def walk_then_reclaim() -> tuple[str, int, int]:
        try:
            allocated_bytes([ws])
            walk = "measured"
        except Exception as exc:
            walk = f"{type(exc).__name__}: {exc}"
        done = reclaim_tree(ws)
        return walk, done.entries, stat.S_IMODE(os.stat(ws / "hidden").st_mode)

    answer = _as_nobody(walk_then_reclaim)
    assert isinstance(answer, tuple), answer  # the child's exception otherwise
    walk, entries, mode = answer
    assert walk == "_Unmeasurable: a directory the runner may not read"
    assert (entries, mode) == (4, 0o755)
