"""Batch directory rules (docs/batch.md "Layout", RC-06)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
from pathlib import Path

import pytest

from campaign.batch._dir import (
    BatchDirRefused,
    is_under_home,
    new_batch_name,
    prepare_batch_dir,
    session_paths,
)

FORMAT1 = Path(__file__).resolve().parents[1] / "fixtures" / "batches" / "format1" / "batch"


def test_batch_dir_under_home_refused_rc06(tmp_path: Path) -> None:
    # RC-06: a batch directory inside $HOME is refused before anything is spent.
    home = tmp_path / "home"
    home.mkdir()
    with pytest.raises(BatchDirRefused) as info:
        prepare_batch_dir(home / "b1", command="run", home=home)
    assert info.value.rule == "RC-06"
    assert not (home / "b1").exists()


def test_batch_dir_symlink_into_home_refused_rc06(tmp_path: Path) -> None:
    # RC-06 resolves symlinks: a path outside $HOME that links into it is inside.
    home = tmp_path / "home"
    (home / "real").mkdir(parents=True)
    link = tmp_path / "elsewhere"
    link.symlink_to(home / "real")
    with pytest.raises(BatchDirRefused):
        prepare_batch_dir(link / "b", command="run", home=home)


def test_batch_dir_home_itself_refused(tmp_path: Path) -> None:
    assert is_under_home(tmp_path, home=tmp_path.resolve())


def test_batch_dir_outside_home_created(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    out = prepare_batch_dir(tmp_path / "batches" / "b", command="run", home=home)
    assert out.is_dir() and out == (tmp_path / "batches" / "b").resolve()


def test_a_batch_dir_is_the_runners_alone_new_or_existing(tmp_path: Path) -> None:
    # No other host user reaches a session's files (docs/session-reach.md "After the session").
    new = prepare_batch_dir(tmp_path / "new", command="run", home=tmp_path / "home")
    old = tmp_path / "old"
    old.mkdir(mode=0o755)
    (old / "plan.yaml").write_text("")
    (old / "config.yaml").write_text("")
    prepare_batch_dir(old, command="record", home=tmp_path / "home", must_be_new=False)
    assert [stat.S_IMODE(p.stat().st_mode) for p in (new, old)] == [0o700, 0o700]


def test_batch_dir_not_empty_refused_points_at_resume(tmp_path: Path) -> None:
    # docs/batch.md: --batch-dir must not exist or be empty; a batch's directory points at resume.
    b = tmp_path / "b"
    b.mkdir()
    for name in ("plan.yaml", "config.yaml", "ledger.jsonl"):
        (b / name).write_text("")
    with pytest.raises(BatchDirRefused) as info:
        prepare_batch_dir(b, command="run", home=tmp_path / "home")
    assert "resume" in str(info.value)


@pytest.mark.parametrize("stray", ["ledger.jsonl", "plan.yaml"])
def test_one_stray_batch_file_is_not_offered_to_resume(tmp_path: Path, stray: str) -> None:
    # resume needs plan.yaml and config.yaml: a directory with one file of a batch's name
    # would be refused by resume too, so the hint would send the user round in a circle.
    b = tmp_path / "b"
    b.mkdir()
    (b / stray).write_text("")
    with pytest.raises(BatchDirRefused) as info:
        prepare_batch_dir(b, command="run", home=tmp_path / "home")
    assert "resume" not in str(info.value)


def test_another_batchs_config_yaml_alone_is_never_taken_for_a_set_up(tmp_path: Path) -> None:
    # A runner takes the lock before it writes config.yaml: a batch's config.yaml with no
    # .lock beside it (copied there) is not a killed runner's set-up, and is never replaced.
    b = tmp_path / "b"
    b.mkdir()
    shutil.copy(FORMAT1 / "config.yaml", b / "config.yaml")
    with pytest.raises(BatchDirRefused, match="not empty"):
        prepare_batch_dir(b, command="run", home=tmp_path / "home")


def test_a_users_own_config_yaml_is_never_overwritten(tmp_path: Path) -> None:
    # Found by a user: a directory holding only their config.yaml was taken for a killed
    # runner's set-up and the file replaced. Only a batch's config counts as a left-over.
    b = tmp_path / "b"
    b.mkdir()
    (b / "config.yaml").write_text("my: precious\n")
    with pytest.raises(BatchDirRefused, match="not empty"):
        prepare_batch_dir(b, command="run", home=tmp_path / "home")
    assert (b / "config.yaml").read_text() == "my: precious\n"


def test_record_into_a_directory_that_holds_no_batch_leaves_it_as_it_was(
        tmp_path: Path) -> None:
    # Found by users: a refused record had made the directory 0700 and left a .lock in it.
    b = tmp_path / "b"
    b.mkdir(mode=0o755)
    os.chmod(b, 0o755)
    (b / "notes.txt").write_text("mine")
    with pytest.raises(BatchDirRefused, match="is not a batch"):
        prepare_batch_dir(b, command="record", home=tmp_path / "home", must_be_new=False)
    assert stat.S_IMODE(b.stat().st_mode) == 0o755
    assert sorted(p.name for p in b.iterdir()) == ["notes.txt"]


def test_a_full_directory_that_holds_no_batch_is_not_offered_to_resume(tmp_path: Path) -> None:
    # The hint to finish a stopped batch is for a batch: any other directory cannot be resumed.
    b = tmp_path / "b"
    b.mkdir()
    (b / "notes.txt").write_text("mine")
    with pytest.raises(BatchDirRefused) as info:
        prepare_batch_dir(b, command="run", home=tmp_path / "home")
    assert "resume" not in str(info.value) and "holds no batch" in str(info.value)


def test_a_batch_dir_under_a_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(BatchDirRefused) as info:
        prepare_batch_dir(tmp_path / "f" / "b", command="run", home=tmp_path / "home")
    assert f"{tmp_path / 'f'} is a file" in str(info.value)


@pytest.mark.parametrize("where", ["/proc/", "/sys/", "/proc", "/dev/shm/"])
def test_a_batch_dir_in_a_kernel_tree_is_refused_before_anything_is_made(where: str,
                                                                         tmp_path: Path) -> None:
    # /proc, /sys and /dev keep nothing written there: refused by name, never tried.
    batch = Path(where + tmp_path.name) if where.endswith("/") else Path(where)
    with pytest.raises(BatchDirRefused) as info:
        prepare_batch_dir(batch, command="run", home=tmp_path / "home")
    assert "the kernel makes up" in str(info.value)
    assert not batch.exists() or where == "/proc"


def test_batch_dir_empty_existing_accepted(tmp_path: Path) -> None:
    b = tmp_path / "b"
    b.mkdir()
    assert prepare_batch_dir(b, command="run", home=tmp_path / "home") == b.resolve()


def test_default_batch_name_is_command_and_utc_stamp() -> None:
    when = dt.datetime(2026, 11, 30, 1, 2, 3, tzinfo=dt.UTC)
    assert new_batch_name("demo", now=when) == "demo-20261130T010203Z"


def test_session_paths_layout(tmp_path: Path) -> None:
    p = session_paths(tmp_path, arm="absent", probe="HW-PRB-0001", session="s2")
    assert p.workspace == tmp_path / "sessions/absent/HW-PRB-0001/s2/workspace"
    assert p.manifest.name == "manifest.json"
    assert p.log_dir.name == "log"
    assert p.stderr_tail.name == "stderr.tail"


def test_home_unset_falls_back_to_passwd_home(monkeypatch: pytest.MonkeyPatch) -> None:
    # RC-06 must hold with HOME cleared: the home directory has not moved.
    import pwd

    from campaign.batch._dir import _home

    monkeypatch.delenv("HOME", raising=False)
    assert _home() == Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()


def test_what_a_runner_killed_while_making_the_batch_left_counts_as_empty(tmp_path: Path) -> None:
    # plan.yaml is written last: without it the directory holds no batch, only set-up files.
    b = tmp_path / "b"
    b.mkdir()
    for name in (".lock", ".config.yaml.abc123.tmp"):
        (b / name).write_text("x")
    shutil.copy(FORMAT1 / "config.yaml", b / "config.yaml")  # a batch's config, as written
    assert prepare_batch_dir(b, command="run", home=tmp_path / "home") == b.resolve()
    (b / "plan.yaml").write_text("x")
    with pytest.raises(BatchDirRefused, match="resume"):
        prepare_batch_dir(b, command="run", home=tmp_path / "home")


def test_a_users_own_file_is_never_taken_for_a_set_up_left_over(tmp_path: Path) -> None:
    b = tmp_path / "b"
    b.mkdir()
    (b / "config.yaml").write_text("x")
    (b / "notes.txt").write_text("mine")
    with pytest.raises(BatchDirRefused, match="not empty"):
        prepare_batch_dir(b, command="run", home=tmp_path / "home")
