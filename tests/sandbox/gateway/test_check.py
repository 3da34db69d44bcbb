"""Doctor's ``gateway`` check: its three answers (sandbox/gateway/_check.py)."""

from __future__ import annotations

import anyio
import pytest

from sandbox.gateway import GatewayStats, gateway_check
from sandbox.gateway._check import Observed, verdict


def test_the_check_passes_on_this_host_and_prints_no_key() -> None:
    check = gateway_check()
    assert (check.name, check.verdict, check.fix) == ("gateway", "ok", "")
    assert "sk-ant" not in check.detail and "placeholder" in check.detail


# httpx's request body, cut off by the closed connection, is left to the collector
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_host_where_no_connection_s_owner_can_be_read_is_broken(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a batch's gateways would close every session's connections as another user's
    async def nobody(*_: object) -> None:
        return None

    monkeypatch.setattr("sandbox.gateway._peer.owner_of", nobody)
    check = gateway_check()
    assert (check.name, check.verdict) == ("gateway", "broken"), check


def good() -> Observed:
    return Observed(statuses=(200, 401, 404), upstream_requests=1, upstream_had_key=True,
                    upstream_had_placeholder=False,
                    stats=GatewayStats(forwarded=1, refused={
                        "placeholder": 1, "path POST /v1/complete": 1}),
                    rows=[object()] * 3)  # type: ignore[list-item]


def test_the_verdict_of_what_holds_is_ok() -> None:
    assert verdict(good()).verdict == "ok"


@pytest.mark.parametrize(("change", "said"), [
    ({"statuses": (200, 200, 404), "upstream_requests": 2}, "another key was not refused"),
    ({"statuses": (200, 401, 200), "upstream_requests": 2}, "/v1/complete was not refused"),
    ({"upstream_had_key": False}, "not forwarded with the real key"),
    ({"upstream_had_placeholder": True}, "the placeholder reached the provider"),
    ({"stats": GatewayStats(forwarded=1)}, "not refused and counted"),
    ({"rows": []}, "0 requests were recorded"),
])
def test_each_broken_behaviour_is_broken_with_its_words(change: dict[str, object],
                                                         said: str) -> None:
    observed = good()
    for name, value in change.items():
        setattr(observed, name, value)
    check = verdict(observed)
    assert check.verdict == "broken" and said in check.detail and check.fix


def test_under_a_running_loop_it_is_unverified() -> None:
    async def inside() -> str:
        return gateway_check().verdict

    assert anyio.run(inside, backend="trio") == "unverified"
