"""A session that connects to its gateway and resets each connection at once.

A stand-in (tests/integration/gwattack.py) opens 50 connections to its way in to the gateway
(``ANTHROPIC_BASE_URL``'s port with ``--network host``, its egress proxy's bridge when
confined), each closed with ``SO_LINGER`` 0 (a reset) as soon as it is made, then sends one
request the harness would send.

Rule (docs/gateway.md): one connection's failure never ends the gateway (or the batch). A
reset connection may be accepted by the gateway after it is gone: asking its peer's address
then fails (``ENOTCONN``); it is not taken, and the session's request after is forwarded,
the session recorded; where it is counted, it is counted as a connection whose owner is
unknown, not as another user's (the session made it). With ``--network host`` any process
of the host's network reaches every gateway of the batch this way, before the check of who
connected can refuse it.

Seen red: before the fix, with ``--network host`` the first reset connection's failed
address lookup raised out of the gateway's accept loop and ended the session's gateway;
the request after went unanswered and the batch stopped on the gateway's error; and
with ``--network host`` the 50 resets were counted as ``connection of another user``.
"""

from __future__ import annotations

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import gwattack as ga
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

RESET_ATTACK = r'''
import struct
done = 0
for i in range(50):
    try:
        s = connect(5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        done += 1
    except OSError as exc:
        REPORT["connect_error"] = str(exc)
time.sleep(1)
REPORT["reset"] = done
REPORT["after"] = exchange(request("/v1/messages?beta=true"))
'''


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_reset_connections_end_nothing_but_themselves(bwrap: str, network: str) -> None:
    with kit.host_dir("hw-gwa-rst-") as root:
        done = ga.run(root, {"RST-1": "reset connections now."}, RESET_ATTACK, network)
        assert done.returncode == 0, done.stderr[-3000:]
        seen = ga.report(root, "RST-1")
        assert seen["reset"] == 50, seen
        assert seen["after"] == [200], seen
        final = gk.final_of(root / "batch", "RST-1", 1)
        assert final["state"] == "recorded", final.get("reason")
        assert final["gateway"]["forwarded"] == 1
        # its own resets, where the gateway saw them, are not told as another user's
        assert "connection of another user" not in final["gateway"]["refused"], final
        assert [r["path"] for r in ga.provider_saw(root)] == [ga.ALLOWED_TARGET]
