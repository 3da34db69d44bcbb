"""The host's login as the batch's one holder: used while valid, never refreshed, and an expired
one ends the session as an authentication failure that is not retried (docs/gateway.md, "The
login: one holder, never refreshed").

The real CLI under real bwrap, against the scripted provider over TLS taking the login's access
token only (as a bearer token with the OAuth beta, as the Messages API wants). Held:

* a login that expired before the batch: the preflight stops it (exit 12), nothing started;
* a login that expires while a session runs: its next request is refused ``login`` (401)
  and never reaches the provider; the session ends ``harness-error``, not retryable (a retry
  would meet the same login), and its reason says how to log in again; the final record's
  ``gateway`` names the login failure; the token appears nowhere in the batch;
* a login renewed on the host while a session runs (Claude Code on the host replaced the
  file): the session's next request carries the new token, and neither token is anywhere in
  the batch.

Seen red by weakening the gateway: the login's expiry ignored (the request reaches the
provider); the login read once and never again (the second request carries the old token, the
provider refuses it, and the session ends harness-error).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.slow,
              pytest.mark.timeout(600)]  # fmt: skip

PROBE = "GW-LOGIN"
TASK = "gateway login: say hello"


def _write_login(h: gk.Host, token: str, *, expires_in_s: float) -> None:
    """The host's login, replaced whole (written aside, then renamed over the file)."""
    path = h.root / "host-config" / ".credentials.json"
    aside = path.with_name(".credentials.json.new")
    aside.write_text(json.dumps({"claudeAiOauth": {
        "accessToken": token, "refreshToken": gk.canary(),
        "expiresAt": int((time.time() + expires_in_s) * 1000)}}))  # fmt: skip
    aside.chmod(0o600)
    os.replace(aside, path)


def test_a_login_expired_before_the_batch_stops_it_before_any_session(
        harness: Path, bwrap: str) -> None:
    """The preflight reads the login as the gateway would: nothing starts, exit 12."""
    with kit.host_dir("hw-gw-login-") as root, gk.host(root, "login") as h:
        _write_login(h, h.secret, expires_in_s=-60)
        corpus = kit.write_corpus(root / "corpus", {PROBE: TASK})
        kit.write_script(root / "scripts", PROBE, TASK)
        batch = root / "batch"
        with gk.provider(h, root / "scripts") as served:
            done = gk.run(h, served, corpus, batch, harness, "confined")
            assert served.requests == {PROBE: 0}
        assert done.returncode == 12, done.stderr
        assert "expired at" in done.stderr and "nothing was started or spent" in done.stderr
        assert not (batch / "ledger.jsonl").exists() or kit.final_list(batch) == []
        assert h.secret not in done.stdout + done.stderr


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_a_login_that_expires_mid_session_ends_it_unretried_with_how_to_log_in(
        network: str, harness: Path, bwrap: str) -> None:
    wait = ("mkdir -p attempts; echo ready > attempts/ready.txt; "
            "for i in $(seq 900); do [ -s attempts/go.txt ] && break; sleep 0.1; done")
    with kit.host_dir("hw-gw-login-") as root, gk.host(root, "login") as h:
        _write_login(h, h.secret, expires_in_s=3600)
        corpus = kit.write_corpus(root / "corpus", {PROBE: TASK})
        kit.write_script(root / "scripts", PROBE, TASK, [kit.bash("t1", wait)])
        batch = root / "batch"
        with gk.provider(h, root / "scripts") as served:
            running = gk.start(h, served, corpus, batch, harness, network, "--retries", "2")
            try:
                (ready,) = kit.wait_for(
                    lambda: gk.live_workspace_files(running.pid, "ready.txt"), timeout_s=240,
                    what="the session between its two requests")
                _write_login(h, h.secret, expires_in_s=-60)  # the login ran out meanwhile
                gk.hand_over(ready.with_name("go.txt"), "go")
                running.communicate(timeout=kit.CLI_TIMEOUT_S)
            finally:
                if running.returncode is None:
                    kit.kill_group(running)
            assert served.requests == {PROBE: 1} and served.refused_credentials == 0
        assert running.returncode != 0
        (final,) = kit.final_list(batch)  # not retried, whatever --retries allows
        assert (final["state"], final["retryable"]) == ("harness-error", False)
        assert "log in" in final["reason"].lower()
        assert final["gateway"]["forwarded"] == 1
        assert "expired at" in final["gateway"]["login_failure"]
        rows = gk.request_rows(batch, PROBE, 1)
        assert rows[0]["status"] == 200
        assert rows[1:] and all((r["refused"], r["status"]) == ("login", 401) for r in rows[1:])
        assert gk.holding(batch, h.secret) == []


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_a_login_renewed_on_the_host_mid_session_is_used_by_the_next_request(
        network: str, harness: Path, bwrap: str) -> None:
    wait = ("mkdir -p attempts; echo ready > attempts/ready.txt; "
            "for i in $(seq 900); do [ -s attempts/go.txt ] && break; sleep 0.1; done")
    with kit.host_dir("hw-gw-renew-") as root, gk.host(root, "login") as h:
        corpus = kit.write_corpus(root / "corpus", {PROBE: TASK})
        kit.write_script(root / "scripts", PROBE, TASK, [kit.bash("t1", wait)])
        batch = root / "batch"
        renewed = gk.canary()
        with gk.provider(h, root / "scripts") as served:
            running = gk.start(h, served, corpus, batch, harness, network, "--retries", "0")
            try:
                (ready,) = kit.wait_for(
                    lambda: gk.live_workspace_files(running.pid, "ready.txt"), timeout_s=240,
                    what="the session between its two requests")
                _write_login(h, renewed, expires_in_s=3600)  # as Claude Code on the host
                served.credential = renewed  # the provider now takes the renewed token only
                gk.hand_over(ready.with_name("go.txt"), "go")
                _, stderr = running.communicate(timeout=kit.CLI_TIMEOUT_S)
                assert running.returncode == 0, stderr
            finally:
                if running.returncode is None:
                    kit.kill_group(running)
            assert served.refused_credentials == 0  # the old token never came after
            assert served.requests == {PROBE: 2}
        assert gk.final_of(batch, PROBE, 1)["state"] == "recorded"
        assert [r["status"] for r in gk.request_rows(batch, PROBE, 1)] == [200, 200]
        for token in (h.secret, renewed):
            assert gk.holding(batch, token) == []
