"""The session pool (`sandbox.users._pool`): its names, its bound, and users it refuses.

Lookups are faked (``pwd.getpwnam``) except where a test says it reads this
host's real pool (a root runner; `make session-user` makes it).
"""

from __future__ import annotations

import os
import pwd

import pytest

from sandbox._errors import SessionUserUnusable
from sandbox.users import SESSION_USER
from sandbox.users._pool import (
    MAX_POOL_USERS,
    SessionPool,
    ensure_session_pool,
    pool_user_name,
    session_pool,
    useradd_argv,
)


def fake_accounts(monkeypatch: pytest.MonkeyPatch, ids: dict[str, tuple[int, int]]) -> None:
    def getpwnam(name: str) -> pwd.struct_passwd:
        if name not in ids:
            raise KeyError(name)
        uid, gid = ids[name]
        return pwd.struct_passwd((name, "x", uid, gid, "", "/nonexistent", "/usr/sbin/nologin"))

    monkeypatch.setattr("sandbox.users._pool.pwd.getpwnam", getpwnam)


def test_the_pool_starts_with_the_one_user_of_earlier_versions() -> None:
    assert pool_user_name(0) == SESSION_USER == "headwater-session"
    assert pool_user_name(1) == "headwater-session-1"
    assert pool_user_name(MAX_POOL_USERS - 1) == f"headwater-session-{MAX_POOL_USERS - 1}"
    with pytest.raises(ValueError, match=r"0\.\.63"):
        pool_user_name(MAX_POOL_USERS)
    assert useradd_argv("headwater-session-3") == (
        "useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
        "--shell", "/usr/sbin/nologin", "--user-group", "headwater-session-3")  # fmt: skip


def test_the_pool_is_every_user_up_to_the_first_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_accounts(monkeypatch, {"headwater-session": (999, 995), "headwater-session-1": (998, 994),
                                "headwater-session-3": (997, 993)})  # fmt: skip
    pool = session_pool(euid=0)
    assert pool is not None
    assert [(u.name, u.uid, u.gid) for u in pool.users] == [
        ("headwater-session", 999, 995), ("headwater-session-1", 998, 994)]  # fmt: skip
    assert pool.describe() == ("2 users: headwater-session (uid 999, gid 995), "
                               "headwater-session-1 (uid 998, gid 994)")  # fmt: skip


def test_a_runner_that_is_not_root_has_no_pool() -> None:
    assert session_pool(euid=1000) is None


@pytest.mark.parametrize("ids", [(999, 994), (997, 995)], ids=["same-uid", "same-gid"])
def test_pool_users_that_share_an_id_are_refused(
    monkeypatch: pytest.MonkeyPatch, ids: tuple[int, int]
) -> None:
    """Two sessions as one uid would share what the kernel counts per user.

    Seen red with the loop over the earlier users taken out of ``_checked``: the pool is read.
    """
    fake_accounts(monkeypatch, {"headwater-session": (999, 995), "headwater-session-1": ids})
    with pytest.raises(SessionUserUnusable, match="shares an id with headwater-session"):
        session_pool(euid=0)


def test_a_pool_user_with_uid_0_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_accounts(monkeypatch, {"headwater-session": (999, 995), "headwater-session-1": (0, 994)})
    with pytest.raises(SessionUserUnusable, match="would run as root"):
        session_pool(euid=0)


def test_no_first_user_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_accounts(monkeypatch, {"headwater-session-1": (998, 994)})
    with pytest.raises(SessionUserUnusable) as caught:
        session_pool(euid=0)
    assert "make session-user" in caught.value.fix


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root runner has a pool")
def test_a_pool_above_the_bound_is_refused_with_the_fix() -> None:
    with pytest.raises(SessionUserUnusable) as caught:
        ensure_session_pool(MAX_POOL_USERS + 1)
    assert f"--concurrency {MAX_POOL_USERS} or less" in caught.value.fix


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root runner has a pool")
def test_the_hosts_pool_of_two_exists_and_is_made_of_distinct_unprivileged_users() -> None:
    """This host's real pool (`make session-user` made the two users a default run needs)."""
    pool, created = ensure_session_pool(2)
    assert isinstance(pool, SessionPool) and len(pool) >= 2
    assert set(created) <= set(pool.users)
    assert len({u.uid for u in pool.users}) == len(pool) == len({u.gid for u in pool.users})
    assert all(u.uid != 0 and u.gid != 0 for u in pool.users)
