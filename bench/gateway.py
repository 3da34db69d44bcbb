"""Benchmark (not a test): what one session's provider gateway adds to each request.

Three processes, as in a batch: the session's side (this driver: an httpx client that sends
what the pinned CLI sends, bench/_gateway_wire.py), the runner (a child that imported the
whole runner, ``campaign.cli``, and holds one upstream and its sessions' gateways through
the public `open_upstream`, `open_gateway` and `Credentials`, on trio), and the provider (a
child serving the scripted provider, `demo.ScriptedProvider`, which takes only the host's key,
so every request it answers through a gateway shows the key was swapped in).

* Latency: the same typical request (about 85 KB) sent directly to the provider (A, with the
  real key) and through one gateway (B, with its placeholder), for a JSON response and for a
  streamed one of 40 events, in interleaved rounds (A then B, each ``requests`` times, per
  round and kind). Each request's time runs from its send to the last byte of its response.
  Per round: the added median and p90 milliseconds (B's less A's) and the throughput of the
  sequential requests, B's over A's; the figures are the medians over rounds.
* Memory: the runner's peak RSS (``VmHWM`` of its child) while one gateway relays one body of
  1 MiB, one of 16 MiB, and while 8 sessions' gateways each relay one 4 MiB body at once
  (each case a fresh runner child; its baseline is its ``VmHWM`` after one typical request
  per gateway). Figures only: no target.

A bench that saw a request refused, answered other than 200, or not swapped stops with an
error rather than print figures of something else.

Usage::

    .venv/bin/python bench/gateway.py [--variant smoke|quick|full] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import _figures  # noqa: E402  (bench/, beside this script)
import _gateway_wire as wire  # noqa: E402  (bench/, beside this script)

if TYPE_CHECKING:
    from collections.abc import Iterator

MIB = 1024 * 1024
CHILD_WAIT_S = 30.0
"""Seconds a child may take to start, or to exit once its stdin is closed."""


@dataclass(frozen=True)
class Variant:
    rounds: int
    requests: int
    """Requests per round, kind and path."""
    bodies_mib: tuple[int, ...]
    """Single bodies relayed by one gateway, MiB each (a fresh runner child each)."""
    sessions: int
    session_body_mib: int
    """Each of ``sessions`` gateways relays one body of this many MiB, all at once."""


VARIANTS = {
    "smoke": Variant(rounds=1, requests=3, bodies_mib=(1,), sessions=2, session_body_mib=1),
    "quick": Variant(rounds=10, requests=50, bodies_mib=(1, 16), sessions=8, session_body_mib=4),
    "full": Variant(rounds=20, requests=200, bodies_mib=(1, 16, 32), sessions=8,
                    session_body_mib=4),
}
"""``quick`` is what ``make bench`` runs; ``smoke`` is the mechanism test's."""


# --- the children ------------------------------------------------------------------------


def serve_provider() -> int:
    """The provider child: print its URL, serve until stdin ends, print its counts."""
    from demo import Script, ScriptedProvider

    with ScriptedProvider([Script.model_validate(wire.SCRIPT)], credential=wire.KEY) as served:
        print(json.dumps({"url": served.url}), flush=True)
        sys.stdin.read()
        counts = {"unmatched": served.unmatched, "refused": served.refused_credentials,
                  "errors": served.errors, "requests": sum(served.requests.values())}
    print(json.dumps(counts), flush=True)
    return 0


class _Gate:
    """A `sandbox.gateway.SpendGate` without a budget that counts the statuses it saw."""

    def __init__(self) -> None:
        self.statuses: dict[str, int] = {}

    def refusal(self) -> str | None:
        return None

    async def observed(self, request: Any) -> None:
        key = f"{request.status} {request.refused or 'forwarded'}"
        self.statuses[key] = self.statuses.get(key, 0) + 1


def serve_gateways(url: str, count: int) -> int:
    """The runner child: one upstream to ``url``, ``count`` gateways; print their URLs and
    placeholders, serve until stdin ends, print what each counted."""
    import anyio

    import campaign.cli  # the runner's whole import baseline, as in a batch
    from sandbox import Credentials
    from sandbox.gateway import open_gateway, open_upstream

    del campaign.cli
    credentials = Credentials(credentials_file=None, api_key_env=wire.KEY_ENV, api_key=wire.KEY)

    async def go() -> None:
        from contextlib import AsyncExitStack

        gates = [_Gate() for _ in range(count)]
        async with open_upstream(url, credentials) as upstream, AsyncExitStack() as stack:
            gateways = [await stack.enter_async_context(open_gateway(upstream, gate))
                        for gate in gates]
            print(json.dumps({"gateways": [[g.base_url, g.placeholder] for g in gateways]}),
                  flush=True)
            await anyio.to_thread.run_sync(sys.stdin.read)
            stats = [{"forwarded": g.stats().forwarded, "refused": g.stats().refused}
                     for g in gateways]
        print(json.dumps({"stats": stats, "rows": [g.statuses for g in gates]}), flush=True)

    anyio.run(go, backend="trio")
    return 0


@dataclass
class Child:
    process: subprocess.Popen[str]
    hello: dict[str, Any]
    bye: dict[str, Any] | None = None

    def hwm_mib(self) -> float:
        """The child's peak RSS so far, MiB (``VmHWM``)."""
        with open(f"/proc/{self.process.pid}/status") as fp:
            for line in fp:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError(f"no VmHWM for child {self.process.pid}")


@contextmanager
def child(*argv: str) -> Iterator[Child]:
    """A child of this script (``--serve ...``), its first stdout line read; at exit its
    stdin is closed and its last line read into ``bye``; killed if it does not exit."""
    process = subprocess.Popen([sys.executable, __file__, *argv], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the child {' '.join(argv)} exited {process.wait()} at start")
        running = Child(process, json.loads(line))
        yield running
        process.stdin.close()
        running.bye = json.loads(process.stdout.readline() or "null")
        process.wait(CHILD_WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# --- the session's side --------------------------------------------------------------------


def send(client: httpx.Client, url: str, key: str, body: bytes, *, stream: bool) -> float:
    """One request, its response read to its end; seconds from its send to its last byte.

    Raises:
        RuntimeError: not answered 200, or the response is not the scripted turn whole.
    """
    started = time.perf_counter()
    with client.stream("POST", url + wire.PATH, content=body,
                       headers=wire.headers(key, stream=stream)) as response:
        data = response.read()
    seconds = time.perf_counter() - started
    whole = data.count(b"event: ") == 40 and data.rstrip().endswith(b'{"type": "message_stop"}') \
        if stream else json.loads(data).get("stop_reason") == "tool_use"
    if response.status_code != 200 or not whole:
        raise RuntimeError(f"{url}: status {response.status_code}, {data[:300]!r}")
    return seconds


def latency_rounds(variant: Variant, provider: str, gateway: list[str]) -> list[dict[str, Any]]:
    """Interleaved rounds, per kind: ``requests`` direct (A), then as many through the
    gateway (B); each round's per-request seconds of both."""
    bodies = {kind: wire.typical_body(stream=kind == "sse") for kind in ("json", "sse")}
    direct = (provider, wire.KEY)
    through = (gateway[0], gateway[1])
    rows: list[dict[str, Any]] = []
    with httpx.Client(trust_env=False, timeout=60.0) as a, \
            httpx.Client(trust_env=False, timeout=60.0) as b:
        for kind, body in bodies.items():  # warm-up: connections, caches, the first parse
            for client, (url, key) in ((a, direct), (b, through)):
                for _ in range(3):
                    send(client, url, key, body, stream=kind == "sse")
        for n in range(variant.rounds):
            for kind, body in bodies.items():
                row: dict[str, Any] = {"round": n, "kind": kind}
                for side, client, (url, key) in (("A", a, direct), ("B", b, through)):
                    row[side] = [send(client, url, key, body, stream=kind == "sse")
                                 for _ in range(variant.requests)]
                rows.append(row)
                print(f"round {n + 1} {kind}: direct {_ms(row['A'], 50):6.2f} ms, gateway "
                      f"{_ms(row['B'], 50):6.2f} ms (medians)", file=sys.stderr, flush=True)
    return rows


def relay_case(provider: str, sessions: int, body_bytes: int) -> dict[str, Any]:
    """A fresh runner child with ``sessions`` gateways; each relays one body of
    ``body_bytes`` at once. Its ``VmHWM`` before and after, the seconds of the slowest
    relay, and the seconds of the same body sent directly (once warm, alone)."""
    body = wire.sized_body(body_bytes)
    small = wire.typical_body(stream=True)
    with child("--serve", "gateways", provider, str(sessions)) as runner:
        gateways = runner.hello["gateways"]
        with httpx.Client(trust_env=False, timeout=120.0) as client:
            for url, key in gateways:
                send(client, url, key, small, stream=True)
            send(client, provider, wire.KEY, body, stream=True)  # the provider's heap grown
            direct_s = send(client, provider, wire.KEY, body, stream=True)
        baseline = runner.hwm_mib()
        seconds = [0.0] * sessions
        barrier = threading.Barrier(sessions)

        def one(i: int) -> None:
            with httpx.Client(trust_env=False, timeout=120.0) as client:
                barrier.wait()
                seconds[i] = send(client, *gateways[i], body, stream=True)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if not all(seconds):
            raise RuntimeError("a relay failed (its error is above)")
        peak = runner.hwm_mib()
    _check_forwarded(runner, 2)
    return {"sessions": sessions, "body_mib": body_bytes / MIB, "baseline_mib": baseline,
            "peak_mib": peak, "relay_s": max(seconds), "direct_s": direct_s}


def _check_forwarded(runner: Child, each: int) -> None:
    """Every gateway of ``runner`` forwarded ``each`` requests and refused none, all 200."""
    bye = runner.bye or {}
    for stats, rows in zip(bye.get("stats", []), bye.get("rows", []), strict=True):
        if stats != {"forwarded": each, "refused": {}} or rows != {"200 forwarded": each}:
            raise RuntimeError(f"a gateway did not forward every request: {stats} {rows}")
    if not bye.get("stats"):
        raise RuntimeError(f"the runner child said nothing at its exit: {bye}")


# --- figures -------------------------------------------------------------------------------


def _ms(values: list[float], percent: int) -> float:
    """The ``percent`` quantile of ``values`` (seconds), in ms (inclusive method)."""
    if percent == 50:
        return statistics.median(values) * 1000
    return statistics.quantiles(values, n=100, method="inclusive")[percent - 1] * 1000


def latency_figures(rows: list[dict[str, Any]]) -> list[_figures.Figure]:
    figures = []
    for kind, what in (("json", "json"), ("sse", "sse (40 events)")):
        mine = [r for r in rows if r["kind"] == kind]
        added = [_ms(r["B"], 50) - _ms(r["A"], 50) for r in mine]
        added_p90 = [_ms(r["B"], 90) - _ms(r["A"], 90) for r in mine]
        speed = [sum(r["A"]) / sum(r["B"]) for r in mine]
        figures += [
            _figures.at_most(f"gateway {what}: added median latency per request",
                             statistics.median(added), 10, "ms"),
            _figures.info(f"gateway {what}: added p90 latency per request",
                          statistics.median(added_p90), "ms"),
            _figures.info(f"gateway {what}: sequential requests per second, gateway / direct",
                          statistics.median(speed)),
        ]
    return figures


def relay_figures(cases: list[dict[str, Any]]) -> list[_figures.Figure]:
    figures = []
    for case in cases:
        what = (f"{case['sessions']} gateways x one {case['body_mib']:.0f} MiB body at once"
                if case["sessions"] > 1 else f"one {case['body_mib']:.0f} MiB body")
        figures += [
            _figures.info(f"gateway, {what}: runner peak RSS", case["peak_mib"], "MiB"),
            _figures.info(f"gateway, {what}: runner peak RSS over its baseline",
                          case["peak_mib"] - case["baseline_mib"], "MiB"),
        ]
    return figures


def report(variant: Variant, rows: list[dict[str, Any]], cases: list[dict[str, Any]],
           body_bytes: int) -> list[_figures.Figure]:
    print(f"\nthe provider gateway: {variant.rounds} interleaved rounds of {variant.requests} "
          f"requests per kind, direct (A) then through one session's gateway (B); a typical "
          f"request of {body_bytes / 1000:.0f} KB; milliseconds per request, send to last byte")
    print(f"{'kind':>5} {'A median':>9} {'B median':>9} {'A p90':>7} {'B p90':>7}")
    for kind in ("json", "sse"):
        a = [v for r in rows if r["kind"] == kind for v in r["A"]]
        b = [v for r in rows if r["kind"] == kind for v in r["B"]]
        print(f"{kind:>5} {_ms(a, 50):9.2f} {_ms(b, 50):9.2f} {_ms(a, 90):7.2f} "
              f"{_ms(b, 90):7.2f}")
    print("request bodies relayed (runner VmHWM: its baseline after one typical request per "
          "gateway, and its peak)")
    for c in cases:
        print(f"  {c['sessions']} x {c['body_mib']:>4.0f} MiB: baseline {c['baseline_mib']:6.1f} "
              f"MiB, peak {c['peak_mib']:6.1f} MiB (+{c['peak_mib'] - c['baseline_mib']:.1f}); "
              f"{c['relay_s']:.3f} s through the gateway (the slowest), {c['direct_s']:.3f} s "
              "direct (one alone)")
    figures = latency_figures(rows) + relay_figures(cases)
    print("figures: the median over rounds of each round's own figure")
    print(_figures.table(figures))
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="quick")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        if args.serve[0] == "provider":
            return serve_provider()
        return serve_gateways(args.serve[1], int(args.serve[2]))
    variant = VARIANTS[args.variant]
    with child("--serve", "provider") as provider:
        url = provider.hello["url"]
        with child("--serve", "gateways", url, "1") as runner:
            rows = latency_rounds(variant, url, runner.hello["gateways"][0])
        _check_forwarded(runner, 2 * (3 + variant.rounds * variant.requests))
        cases = [relay_case(url, 1, mib * MIB) for mib in variant.bodies_mib]
        cases.append(relay_case(url, variant.sessions, variant.session_body_mib * MIB))
    counts = provider.bye or {}
    if counts.get("unmatched") or counts.get("refused") or counts.get("errors"):
        raise RuntimeError(f"the scripted provider saw requests it could not answer: {counts}")
    figures = report(variant, rows, cases, len(wire.typical_body(stream=True)))
    if args.json is not None:
        args.json.write_text(json.dumps({"figures": _figures.to_json(figures),
                                         "rounds": rows, "relays": cases}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
