"""Two sessions that race the batch's budget with many concurrent requests.

Two stand-ins run at once (tests/integration/gwattack.py), each sending waves of 16
concurrent requests the harness would send (each on its own connection, the waves one after
another), until a whole wave is refused or 20 waves were sent. The batch has
``--max-cost-cents 5``: 50 of the scripted provider's answers at 0.1 cent each.

Rule (docs/gateway.md, "Cost and budgets"): once the batch's realized spend reaches the
budget, the gateway refuses new requests (``budget``); so a batch overshoots by at most the
requests in flight, here at most 2 x 16 at once: the batch forwards at least the budget's
worth (the budget stopped it, it did not stop early) and at most 31 more than that, its
spend in the ledger's rows within the budget plus 31 requests' price; every refusal past
it is counted for the session that made it (``budget`` in its ``gateway.refused``, a row
each), and each session ends ``budget-stopped``.

Seen red by weakening the gateway: `Gateway._forward` not asking the gate (``why = None``):
all 640 requests were forwarded, 6.4 times the budget.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import gwattack as ga
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

BUDGET_CENTS = 5
WAVE = 16
SESSIONS = 2
IN_FLIGHT = WAVE * SESSIONS
"""The most requests of the batch in flight at once."""

RACE_ATTACK = r'''
import threading
def one(results, i):
    results[i] = (exchange(request("/v1/messages?beta=true"), timeout=30) or [0])[0]
waves = []
for w in range(20):
    results = [None] * 16
    threads = [threading.Thread(target=one, args=(results, i)) for i in range(16)]
    for t in threads: t.start()
    for t in threads: t.join()
    waves.append(results)
    if all(s == 400 for s in results):
        break
REPORT["waves"] = waves
'''


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_a_race_at_the_budget_overshoots_by_at_most_the_requests_in_flight(
        network: str, bwrap: str) -> None:
    tasks = {"RACE-A": "race the budget now, A.", "RACE-B": "race the budget now, B."}
    with kit.host_dir("hw-gwa-race-") as root:
        done = ga.run(root, tasks, RACE_ATTACK, network, "--concurrency", "2",
                      "--max-cost-cents", str(BUDGET_CENTS))  # fmt: skip
        rows = gk.request_rows(root / "batch")
        forwarded = [r for r in rows if not r.get("refused")]
        prices = {Decimal(r["cost_usd"]) for r in forwarded}
        assert len(prices) == 1, prices  # one price per request: the bound is in requests
        (price,) = prices
        budget = Decimal(BUDGET_CENTS) / 100
        enough = math.ceil(budget / price)
        print(f"{network}: {len(forwarded)} forwarded for a budget of {enough} requests")
        assert enough <= len(forwarded) <= enough + IN_FLIGHT - 1, len(forwarded)
        assert sum(Decimal(r["cost_usd"]) for r in forwarded) <= budget + (IN_FLIGHT - 1) * price
        assert len(ga.provider_saw(root)) == len(forwarded)
        assert done.returncode == 3, done.stderr  # the budget stopped the batch
        for probe in tasks:
            seen = ga.report(root, probe)
            sent = [s for wave in seen["waves"] for s in wave]
            assert set(sent) <= {200, 400}, sent
            final = gk.final_of(root / "batch", probe, 1)
            assert final["state"] == "budget-stopped", final.get("reason")
            refused = sent.count(400)
            assert final["gateway"]["refused"] == {"budget": refused}
            assert final["gateway"]["forwarded"] == sent.count(200)
            mine = gk.request_rows(root / "batch", probe, 1)
            assert len([r for r in mine if r.get("refused") == "budget"]) == refused
