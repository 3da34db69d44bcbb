"""A session that opens many connections to its gateway and sends nothing on them.

A stand-in (tests/integration/gwattack.py) opens 1,000 connections at once and sends no
byte on any, waits 3 s, notes which were answered by then, closes them all, then sends one
request the harness would send.

Rule (docs/gateway.md, the ``over-cap`` refusal): a session holds at most its cap of
connections to its gateway (``--max-connections``, 64); one more is answered 503
(``overloaded_error``) and closed, and counted for that session (its final record's
``gateway.refused``, and a ``request`` row refused ``over-cap``). So whatever a session
opens, the runner holds at most its cap of that session's connections for long: an
over-cap connection that sends nothing is answered at once, not held until it does.

* ``--network host``: the gateway's own cap holds. 1,000 - 64 = 936 connections are
  answered 503 unasked within the 3 s, each counted and in a row; the request after is
  forwarded.
* ``--network confined``: the egress proxy's cap comes first (docs/network.md): the 65th
  connection through it ends the session ``limit-exceeded``; the gateway never held more
  than 64 of them and the provider received nothing.

Seen red: before the fix, with ``--network host`` none of the 1,000 was answered (the 936
past the cap waited, each holding a descriptor of the runner, for a request that never
came) and none was counted (``refused`` was empty): the cap bounded nothing a session did
not ask for.
"""

from __future__ import annotations

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import gwattack as ga
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

CAP = 64
"""The session's connection cap (``--max-connections``' default)."""
OPENED = 1000

HOLD_ATTACK = r'''
N = int(re.search(r"open (\d+)", TASK).group(1))
socks = []
for i in range(N):
    try:
        socks.append(connect(5))
    except OSError as exc:
        REPORT["connect_error"] = str(exc)
        break
REPORT["opened"] = len(socks)
time.sleep(3)
answered, closed = [], 0
for s in socks:
    s.setblocking(False)
    try:
        data = s.recv(65536)
        if data:
            answered.extend(statuses(data))
        else:
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
REPORT["answered_unasked"] = answered
REPORT["closed_unasked"] = closed
for s in socks:
    s.close()
time.sleep(1)
REPORT["after"] = exchange(request("/v1/messages?beta=true"))
'''


def test_connections_past_the_cap_are_answered_at_once_and_counted_host(bwrap: str) -> None:
    with kit.host_dir("hw-gwa-cap-") as root:
        done = ga.run(root, {"CAP-1": f"open {OPENED} connections now."}, HOLD_ATTACK, "host")
        assert done.returncode == 0, done.stderr
        seen = ga.report(root, "CAP-1")
        assert seen["opened"] == OPENED, seen
        assert seen["answered_unasked"] == [503] * (OPENED - CAP), seen
        assert seen["after"] == [200], seen
        final = gk.final_of(root / "batch", "CAP-1", 1)
        assert final["state"] == "recorded", final.get("reason")
        assert final["gateway"]["refused"] == {"over-cap": OPENED - CAP}
        assert final["gateway"]["forwarded"] == 1
        rows = gk.request_rows(root / "batch", "CAP-1", 1)
        assert sorted((r.get("refused"), r["status"]) for r in rows if r.get("refused")) == \
            [("over-cap", 503)] * (OPENED - CAP)
        assert [r["path"] for r in ga.provider_saw(root)] == [ga.ALLOWED_TARGET]


def test_connections_past_the_cap_end_a_confined_session_before_its_gateway(
        bwrap: str) -> None:
    with kit.host_dir("hw-gwa-capc-") as root:
        done = ga.run(root, {"CAP-1": "open 200 connections now."}, HOLD_ATTACK, "confined")
        assert done.returncode == 5, done.stderr  # no session recorded
        final = gk.final_of(root / "batch", "CAP-1", 1)
        assert final["state"] == "limit-exceeded" and final["limit"] == "connections"
        assert final["egress"]["most_open"] <= CAP
        assert final["gateway"]["forwarded"] == 0
        assert ga.provider_saw(root) == []

