"""A session that leaves while more of its requests wait for a place at the provider.

A stand-in (tests/integration/gwattack.py) sends its gateway 8 + 4 whole requests at once,
each on a connection of its own, that the scripted provider holds for a minute before it
answers (a turn's ``delay_s``): 8 are at the provider, the session's share
(``MAX_IN_FLIGHT``), and 4 wait, their bodies unread. It notes what it was answered in
3 s, then exits, leaving all 12 unanswered.

Rule (docs/gateway.md, "Bounds"): the 4 that waited were never forwarded nor answered, so
they count nowhere: the final record's ``gateway.forwarded`` is 8, exactly 8 ``request``
rows read as forwarded (no ``refused``), and the attempt's ``unpriced_requests`` (the
forwarded requests whose cost is unknown: here the 8 cut before any usage) is 8, not 12.

Seen red: before the fix, each waiting request cut by the session's end got a row with no
``refused``, as if forwarded: 12 such rows beside ``forwarded: 8``, and 12
``unpriced_requests``, the batch's spend flagged a lower bound for requests the provider
never received.
"""

from __future__ import annotations

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import gwattack as ga
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

SHARE = 8
"""A session's requests at the provider at once (``MAX_IN_FLIGHT``)."""
WAITING = 4

WAIT_ATTACK = r'''
N = int(re.search(r"send (\d+)", TASK).group(1))
body = json.dumps({"model": "claude-opus-4-8", "max_tokens": 8, "stream": False,
                   "messages": [{"role": "user", "content": "hold a place"}]}).encode()
socks = []
for i in range(N):
    s = connect(10)
    s.sendall(request("/v1/messages?beta=true", body))
    socks.append(s)
time.sleep(3)
answered = []
for s in socks:
    s.setblocking(False)
    try:
        answered.extend(statuses(s.recv(65536)))
    except BlockingIOError:
        pass
    except OSError:
        pass
REPORT["sent"] = len(socks)
REPORT["answered"] = answered
'''


@pytest.mark.slow
@pytest.mark.parametrize("network", gk.NETWORKS)
def test_requests_still_waiting_when_the_session_ends_count_nowhere(bwrap: str,
                                                                     network: str) -> None:
    with kit.host_dir("hw-gwa-wait-") as root:
        gk.write_script(root / "scripts", "held", "hold a place",
                        [{"blocks": [{"type": "text", "text": "late"}], "delay_s": 60}])
        done = ga.run(root, {"WAIT-1": f"send {SHARE + WAITING} requests now."},
                      WAIT_ATTACK, network)
        assert done.returncode == 0, done.stderr
        seen = ga.report(root, "WAIT-1")
        assert seen["sent"] == SHARE + WAITING and seen["answered"] == [], seen
        final = gk.final_of(root / "batch", "WAIT-1", 1)
        assert final["state"] == "recorded", final.get("reason")
        gateway = final["gateway"]
        assert gateway["forwarded"] == SHARE, gateway
        assert gateway["refused"] == {}, gateway
        assert gateway.get("unpriced_requests") == SHARE, gateway
        rows = gk.request_rows(root / "batch", "WAIT-1", 1)
        assert len([r for r in rows if r.get("refused") is None]) == SHARE, rows
        assert len(ga.provider_saw(root)) == SHARE
