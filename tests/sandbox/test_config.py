"""Credentials and the per-session config directory (RC-03): in, used, always removed."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from sandbox import (
    CONFIG_ROOT,
    Credentials,
    CredentialsMissing,
    SessionUser,
    host_credentials,
    session_config_dir,
    sweep_config_root,
)
from sandbox._owner import runner_tag

SECRET = "sk-ant-test-5e0f2b8d"
CREDS_JSON = b'{"claudeAiOauth": {"accessToken": "fake-token"}}'


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def creds_file(tmp_path: Path) -> Credentials:
    host = tmp_path.parent / f"{tmp_path.name}-host-claude"
    host.mkdir()
    (host / ".credentials.json").write_bytes(CREDS_JSON)
    return host_credentials(api_key_env=None, environ={}, host_config_dir=host)


def test_config_root_is_one_fixed_path() -> None:
    assert Path("/var/tmp/headwater-campaign/cfg") == CONFIG_ROOT


def test_credentials_repr_never_shows_the_key() -> None:
    creds = host_credentials(api_key_env="HW_KEY", environ={"HW_KEY": SECRET})
    assert creds == Credentials(credentials_file=None, api_key_env="HW_KEY", api_key=SECRET)
    assert SECRET not in repr(creds)
    assert SECRET not in str(creds)


@pytest.mark.parametrize("environ", [{}, {"HW_KEY": ""}], ids=["unset", "empty"])
def test_host_credentials_missing_key_names_the_variable(environ: dict[str, str]) -> None:
    with pytest.raises(CredentialsMissing, match="HW_KEY") as caught:
        host_credentials(api_key_env="HW_KEY", environ={**environ, "OTHER": SECRET})
    assert SECRET not in str(caught.value)


def test_host_credentials_file_from_claude_config_dir_then_home(tmp_path: Path) -> None:
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / ".credentials.json").write_bytes(CREDS_JSON)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_bytes(CREDS_JSON)
    from_env = host_credentials(
        api_key_env=None, environ={"CLAUDE_CONFIG_DIR": str(configured), "HOME": str(home)}
    )
    assert from_env.credentials_file == configured / ".credentials.json"
    from_home = host_credentials(api_key_env=None, environ={"HOME": str(home)})
    assert from_home.credentials_file == home / ".claude" / ".credentials.json"
    assert from_home.api_key is None


def test_host_credentials_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(CredentialsMissing, match=re.escape(str(tmp_path / ".credentials.json"))):
        host_credentials(api_key_env=None, environ={}, host_config_dir=tmp_path)


def test_session_config_dir_is_private_named_by_pid_and_holds_no_credentials(
    tmp_path: Path, creds_file: Credentials
) -> None:
    # RC-03 with the provider gateway: the host's login stays with the batch's gateway;
    # a session's config directory starts empty even when the host's credential is a file.
    root = tmp_path / "var" / "cfg"  # missing: created 0711 (search, no listing)
    assert creds_file.credentials_file is not None and creds_file.credentials_file.is_file()
    with session_config_dir(name="p1-r1", root=root) as path:
        assert path.parent == root
        assert path.is_absolute()
        assert re.fullmatch(rf"{re.escape(runner_tag())}-p1-r1-.+", path.name)
        assert _mode(root) == 0o711
        assert _mode(path) == 0o700
        assert list(path.iterdir()) == []
    assert not path.exists()


def test_session_config_dirs_are_distinct(tmp_path: Path) -> None:
    with (
        session_config_dir(name="s", root=tmp_path) as one,
        session_config_dir(name="s", root=tmp_path) as two,
    ):
        assert one != two


def test_session_config_dir_is_removed_after_an_exception(tmp_path: Path) -> None:
    seen: list[Path] = []

    def session() -> None:
        with session_config_dir(name="s", root=tmp_path) as path:
            seen.append(path)
            (path / "projects").mkdir()
            (path / "projects" / "log.jsonl").write_text("{}\n")
            raise RuntimeError("session blew up")

    with pytest.raises(RuntimeError, match="session blew up"):
        session()
    assert seen
    assert not seen[0].exists()
    assert list(tmp_path.iterdir()) == []


def test_session_config_dir_is_removed_after_keyboard_interrupt(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), session_config_dir(name="s", root=tmp_path):
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


@pytest.mark.anyio
async def test_session_config_dir_is_removed_on_cancellation(tmp_path: Path) -> None:
    seen: list[Path] = []
    with anyio.move_on_after(0.05) as scope:
        with session_config_dir(name="s", root=tmp_path) as path:
            seen.append(path)
            await anyio.sleep(10)
    assert scope.cancelled_caught
    assert not seen[0].exists()


def test_session_config_dir_tolerates_a_dir_already_removed(tmp_path: Path) -> None:
    with session_config_dir(name="s", root=tmp_path) as path:
        shutil.rmtree(path)
    assert list(tmp_path.iterdir()) == []


def test_session_config_dir_removes_what_the_session_locked_down(tmp_path: Path) -> None:
    with session_config_dir(name="s", root=tmp_path) as path:
        locked = path / "locked"
        (locked / "inner").mkdir(parents=True)
        (locked / "inner" / "f").write_text("x")
        locked.chmod(0o500)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["", "a/b", "a\x00b"])
def test_session_config_dir_rejects_bad_names(tmp_path: Path, name: str) -> None:
    with (
        pytest.raises(ValueError, match="name"),
        session_config_dir(name=name, root=tmp_path),
    ):
        pass
    assert list(tmp_path.iterdir()) == []


def _dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return int(child.stdout)


def test_sweep_removes_dirs_of_dead_pids_and_keeps_live_ones(tmp_path: Path) -> None:
    dead = tmp_path / f"{_dead_pid()}-p1-r1-abcd"
    dead.mkdir()
    (dead / ".credentials.json").write_bytes(CREDS_JSON)
    live = tmp_path / f"{os.getpid()}-p1-r2-efgh"
    live.mkdir()
    foreign = tmp_path / "notes"
    foreign.mkdir()
    assert sweep_config_root(tmp_path) == [dead]
    assert not dead.exists()
    assert live.is_dir()
    assert foreign.is_dir()


def test_sweep_of_a_missing_root_is_empty(tmp_path: Path) -> None:
    assert sweep_config_root(tmp_path / "missing") == []


def test_an_older_0700_root_becomes_0711(tmp_path: Path) -> None:
    root = tmp_path / "cfg"
    root.mkdir(mode=0o700)
    root.chmod(0o700)
    with session_config_dir(name="s", root=root):
        assert _mode(root) == 0o711


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_session_config_dir_with_an_owner_hands_the_dir_to_it(tmp_path: Path) -> None:
    """A root runner's session user owns its config dir (0700), which holds nothing."""
    owner = SessionUser("someone", 54321, 54322)
    with session_config_dir(name="s", root=tmp_path / "cfg", owner=owner) as path:
        assert (path.stat().st_uid, path.stat().st_gid, _mode(path)) == (54321, 54322, 0o700)
        assert list(path.iterdir()) == []
    assert not path.exists()


def test_sweep_keeps_what_it_may_not_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-root runner meets a root runner's left-over: skipped, not a crash."""
    dead = tmp_path / f"{_dead_pid()}-p1-r1-abcd"
    dead.mkdir()

    def denied(path: Path) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("sandbox._config.remove_tree", denied)
    assert sweep_config_root(tmp_path) == []
    assert dead.is_dir()
