"""A session that floods its gateway with 100,000 distinct bad paths.

A stand-in (tests/integration/gwattack.py) sends 100,000 requests with its own placeholder,
each to a path of its own (``/v1/flood/<n>/`` then 150 characters), each on a connection of
its own (a ``path`` refusal closes its connection), from 8 threads; then one request the
harness would send. With ``--network confined`` it sends 3,000 (each connection there costs
a process of the session's own bridge).

Rule (docs/gateway.md, docs/batch.md): every refusal is counted in that session's final
record (``gateway.refused``: a name per refusal kind, with the path for ``path``, at most
100 distinct names, the rest under ``(further refusals)``; the counts sum to every refusal),
and has its ``request`` row, up to 1,000 refused rows per attempt, past which each is still
counted (``refused_rows_not_written``) and no row written: the ledger and the final record
stay bounded however many refusals a session makes. The request after is forwarded.

Seen red, each weakening alone, in both modes: `sandbox.gateway._gateway.MAX_REFUSED_NAMES`
raised to 1,000,000 (the final record named each of the 100,000, or 3,000, paths: past 101
names); `campaign.supervisor._gate.REFUSED_ROWS_KEPT` raised to 10**9 (3,000 refused rows
written, not 1,000).
"""

from __future__ import annotations

import json

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import gwattack as ga
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.slow, pytest.mark.timeout(400)]

FLOOD = 100_000
CONFINED_FLOOD = 3_000
"""Through the egress proxy each connection is a process of the session's bridge (socat
forks one per connection) and a relay of the proxy: fewer, still past the row bound."""
MAX_NAMES = 100
MAX_ROWS = 1000
FINAL_BOUND = 128 * 1024
"""Bytes a final record may take with 101 refusal names of ~170 characters each."""

FLOOD_ATTACK = r'''
import threading
N = int(re.search(r"flood (\d+)", TASK).group(1))
got = {}
lock = threading.Lock()
def worker(k):
    mine = {}
    for n in range(k, N, 8):
        target = "/v1/flood/%d/" % n + "x" * 150
        for s in exchange(request(target), timeout=30) or [0]:
            mine[s] = mine.get(s, 0) + 1
    with lock:
        for s, c in mine.items():
            got[str(s)] = got.get(str(s), 0) + c
threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
REPORT["flood"] = got
REPORT["after"] = exchange(request("/v1/messages?beta=true"))
'''


@pytest.mark.parametrize(("network", "flood"), [("host", FLOOD), ("confined", CONFINED_FLOOD)])
def test_distinct_bad_paths_are_all_counted_and_bounded(network: str, flood: int,
                                                        bwrap: str) -> None:
    with kit.host_dir("hw-gwa-flood-") as root:
        done = ga.run(root, {"FLOOD-1": f"flood {flood} paths now."}, FLOOD_ATTACK, network)
        assert done.returncode == 0, done.stderr
        seen = ga.report(root, "FLOOD-1")
        assert seen["flood"] == {"404": flood}, seen
        assert seen["after"] == [200]
        final = gk.final_of(root / "batch", "FLOOD-1", 1)
        assert final["state"] == "recorded", final.get("reason")
        refused = final["gateway"]["refused"]
        assert sum(refused.values()) == flood
        assert len(refused) <= MAX_NAMES + 1
        assert all(name.startswith("path POST /v1/flood/") or name == "(further refusals)"
                   for name in refused)
        assert final["gateway"]["forwarded"] == 1
        rows = gk.request_rows(root / "batch", "FLOOD-1", 1)
        written = [r for r in rows if r.get("refused") == "path"]
        assert len(written) == MAX_ROWS
        assert final["gateway"].get("refused_rows_not_written", 0) == flood - MAX_ROWS
        assert len([r for r in rows if not r.get("refused")]) == 1
        record = [line for line in (root / "batch" / "ledger.jsonl").read_bytes().splitlines()
                  if json.loads(line).get("kind") == "final"]
        assert len(record) == 1 and len(record[0]) < FINAL_BOUND, len(record[0])
        assert [r["path"] for r in ga.provider_saw(root)] == [ga.ALLOWED_TARGET]
