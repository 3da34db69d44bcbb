"""A host login that has expired is found before anything runs (docs/gateway.md).

Rule: the gateway never refreshes a login, so a batch started on an expired one would end
every session ``harness-error``; ``doctor`` answers broken for it (with when it expired
and how to log in again), and ``run``/``resume`` stop at their preflight (exit 12,
nothing started). A login that has not expired, or none that says when, is ok.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from campaign.batch import BatchOptions
from campaign.cli._batch import credentials_for
from campaign.cli._errors import PreflightStop
from campaign.doctor import check_credentials


def _login(home: Path, expires_ms: int | None) -> None:
    oauth: dict[str, object] = {"accessToken": "t-not-a-secret"}
    if expires_ms is not None:
        oauth["expiresAt"] = expires_ms
    (home / ".credentials.json").write_text(json.dumps({"claudeAiOauth": oauth}))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    return tmp_path


def test_doctor_answers_broken_for_an_expired_login_saying_when(home: Path) -> None:
    _login(home, 1_700_000_000_000)  # 2023-11-14 22:13:20 UTC
    check = check_credentials(None)
    assert check.verdict == "broken", check
    assert "expired at 2023-11-14 22:13:20 UTC" in check.detail
    assert "t-not-a-secret" not in check.detail + (check.fix or "")
    assert "--api-key-env" in (check.fix or "")


@pytest.mark.parametrize("expires_ms", [None, int(time.time() * 1000) + 3_600_000])
def test_a_login_that_has_not_expired_is_ok(home: Path, expires_ms: int | None) -> None:
    _login(home, expires_ms)
    assert check_credentials(None).verdict == "ok"


def test_a_run_on_an_expired_login_stops_before_anything_starts(home: Path) -> None:
    _login(home, 1_700_000_000_000)
    with pytest.raises(PreflightStop) as caught:
        credentials_for(BatchOptions(command="run", corpus=str(home), tier="campaign", seed=0,
                                     harness_path="/nonexistent/claude"))
    assert "expired at 2023-11-14 22:13:20 UTC" in str(caught.value)
    assert "nothing was started or spent" in str(caught.value)
