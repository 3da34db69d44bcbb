"""Reading a session's file after the session: beneath the workspace, no symlink, bounded."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import pytest

from recorder._beneath import MAX_ARTIFACT_BYTES, Unreadable, open_beneath, read_beneath
from recorder._event import UnreadFile, produced_artifacts


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "a.md").write_text("HW-DOC-0001 here\n")
    (tmp_path / "secret").write_text("root only\n")
    (ws / "link.md").symlink_to(tmp_path / "secret")
    (ws / "inner.md").symlink_to("d/a.md")  # even a link that stays inside is not followed
    (ws / "ld").symlink_to("d")
    os.mkfifo(ws / "fifo")
    with (ws / "sparse").open("wb") as fp:
        fp.truncate(8 * 1024**4)  # 8 TiB of nothing
    return ws


def test_a_regular_file_is_read_once_for_its_digest_and_text(ws: Path) -> None:
    pieces: list[tuple[str, bool]] = []
    facts = read_beneath(ws, "d/a.md", on_text=lambda t, f: pieces.append((t, f)))
    assert facts.digest == "sha256:" + hashlib.sha256(b"HW-DOC-0001 here\n").hexdigest()
    assert facts.size_bytes == 17
    assert "".join(t for t, _ in pieces) == "HW-DOC-0001 here\n" and pieces[-1][1] is True


@pytest.mark.parametrize(("name", "reason"), [
    ("link.md", "a symlink"), ("inner.md", "a symlink"), ("ld/a.md", "a symlink"),
    ("fifo", "not a regular file"), ("d", "not a regular file"),
    ("nope.md", "missing after the session"), ("../secret", "not a file inside"),
    ("/etc/passwd", "not a file inside"),
])
def test_what_is_not_a_regular_file_beneath_the_workspace_is_not_read(
    ws: Path, name: str, reason: str
) -> None:
    with pytest.raises(Unreadable, match=reason):
        read_beneath(ws, name)


def test_a_file_over_the_cap_is_refused_by_its_size_without_reading_it(ws: Path) -> None:
    with pytest.raises(Unreadable) as caught:
        open_beneath(ws, "sparse")
    assert caught.value.size_bytes == 8 * 1024**4 > MAX_ARTIFACT_BYTES
    assert f"over the {MAX_ARTIFACT_BYTES}" in caught.value.reason


def test_no_descriptor_is_left_open_whatever_the_outcome(ws: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    for name in ("d/a.md", "link.md", "ld/a.md", "fifo", "sparse", "nope.md"):
        with contextlib.suppress(Unreadable):
            read_beneath(ws, name)
    assert len(os.listdir("/proc/self/fd")) == before


def test_produced_files_not_read_keep_their_path_and_are_listed_with_why(ws: Path) -> None:
    unread: list[UnreadFile] = []
    artifacts = produced_artifacts(["d/a.md", "link.md", "sparse", "nope.md", "/etc/hosts"],
                                   workspace=ws, corpus_ids=["HW-DOC-0001"], unread=unread)
    assert [a.model_dump(exclude_unset=True) for a in artifacts][1:] == [
        {"path": "link.md"}, {"path": "sparse"}, {"path": "nope.md"}, {"path": "/etc/hosts"}]
    assert artifacts[0].cites == ["HW-DOC-0001"]
    assert [(u.path, u.reason, u.size_bytes) for u in unread] == [
        ("link.md", "a symlink, never followed after a session", None),
        ("sparse", f"{8 * 1024**4} bytes, over the {MAX_ARTIFACT_BYTES} read after a session",
         8 * 1024**4)]
