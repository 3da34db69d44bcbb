"""A session that sends its gateway, with its own placeholder, every target and framing trick
it can think of, from raw sockets inside the real sandbox.

A stand-in (tests/integration/gwattack.py) sends, each on a connection of its own unless
said: other provider paths (``GET /v1/models``, ``POST /v1/messages/count_tokens``,
``GET``/``POST /v1/files``), path tricks on the one allowed target (``//v1/messages``, an
extra query parameter, a dot segment, percent-encoding of the path and of the query, upper
case, a lower-case method), absolute-form targets naming the provider and
another host, ``OPTIONS *``, ``CONNECT`` then ``GET /v1/models`` in what it opens (with
``--network confined`` the egress proxy's tunnel to the gateway: its 200 is the proxy's), a
``Host`` naming the real provider, HTTP/1.0, two
requests pipelined in one write (the allowed one, then ``GET /v1/models``), and two smuggling
framings (``Content-Length`` beside ``Transfer-Encoding: chunked``, and two lengths), whose
bodies hide a second request for ``GET /v1/models``; and a fragment after the allowed
target (the egress proxy drops it before the gateway, which then forwards the allowed
target: no trick, as a fragment never reaches a server).

Rule (docs/gateway.md): the gateway forwards only ``POST /v1/messages?beta=true`` as sent,
with the session's placeholder; anything else is answered by the gateway itself and counted
for the session. So the provider receives only that target, exactly as many times as the
gateway counts forwarded; no trick is answered 2xx; every refusal the gateway counted has
its ``request`` row. (With ``--network confined`` the egress proxy answers some tricks
itself, 403 or 400, before the gateway: that holds too, nothing of them is forwarded.)

Seen red by weakening the gateway: `sandbox.gateway._paths.allowed` comparing the path
with its query replaced by ``?beta=true`` (``target.split("?")[0] + "?beta=true"``): in both
modes ``/v1/messages?beta=true&x=1`` was answered 200, forwarded.
"""

from __future__ import annotations

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import gwattack as ga
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

TRICKS_ATTACK = r'''
OK = "/v1/messages?beta=true"
models = head("/v1/models", method="GET", length=0)
tricks = {
    "models": models,
    "count_tokens": request("/v1/messages/count_tokens?beta=true"),
    "files_get": head("/v1/files", method="GET", length=0),
    "files_post": request("/v1/files"),
    "double_slash": request("//v1/messages?beta=true"),
    "extra_query": request("/v1/messages?beta=true&x=1"),
    "no_query": request("/v1/messages"),
    "dot_segment": request("/v1/messages/../messages?beta=true"),
    "encoded_path": request("/v1/%6Dessages?beta=true"),
    "encoded_query": request("/v1/messages?beta%3Dtrue"),
    "upper_case": request("/V1/MESSAGES?beta=true"),
    "lower_method": request(OK, method="post"),
    "put": request(OK, method="PUT"),
    "absolute_provider": request("https://api.anthropic.com/v1/messages?beta=true"),
    "absolute_other": request("http://evil.example/v1/messages?beta=true"),
    "options_star": head("*", method="OPTIONS", length=0),
    "connect": head(GATEWAY, method="CONNECT") + models,
    "other_key_same_path": request(OK, key="sk-ant-api03-guess"),
    "two_keys": request(OK, extra="Authorization: Bearer sk-ant-guess\r\n"),
}
hidden = models
smuggle_te = (head(OK, length=len(b"0\r\n\r\n" + hidden), close=False,
                   extra="Transfer-Encoding: chunked\r\n") + b"0\r\n\r\n" + hidden)
smuggle_cl = (head(OK, length=len(BODY), close=False,
                   extra="Content-Length: %d\r\n" % (len(BODY) + 3)) + BODY + b"GET")
tricks["smuggle_te_cl"] = smuggle_te
tricks["smuggle_two_lengths"] = smuggle_cl
REPORT["tricks"] = {name: exchange(data) for name, data in tricks.items()}
REPORT["legit"] = {
    "plain": exchange(request(OK)),
    "host_game": exchange(request(OK, host="api.anthropic.com")),
    "http10": exchange(request(OK, version="HTTP/1.0")),
    "pipelined": exchange(request(OK, close=False) + models),
    "fragment": exchange(request("/v1/messages?beta=true#x")),
}
'''


@pytest.mark.parametrize("network", gk.NETWORKS)
def test_no_target_or_framing_trick_reaches_the_provider(network: str, bwrap: str) -> None:
    with kit.host_dir("hw-gwa-paths-") as root:
        done = ga.run(root, {"PATHS-1": "try every path trick now."}, TRICKS_ATTACK, network)
        assert done.returncode == 0, done.stderr
        seen = ga.report(root, "PATHS-1")
        for name, answered in seen["tricks"].items():
            tunnel = name == "connect" and network == "confined"  # the proxy's 200, then
            answered = answered[1:] if tunnel else answered   # what the gateway said inside
            assert answered or tunnel, name  # (the proxy closes a tunnel that is not TLS)
            assert all(not 200 <= s < 300 for s in answered), (name, answered)
        assert seen["legit"]["plain"] == [200]
        final = gk.final_of(root / "batch", "PATHS-1", 1)
        assert final["state"] == "recorded", final.get("reason")
        reached = ga.provider_saw(root)
        assert {r["path"] for r in reached} == {ga.ALLOWED_TARGET}
        assert len(reached) == final["gateway"]["forwarded"]
        rows = gk.request_rows(root / "batch", "PATHS-1", 1)
        forwarded = [r for r in rows if not r.get("refused")]
        assert len(forwarded) == final["gateway"]["forwarded"]
        assert {(r["method"], r["path"]) for r in forwarded} == {("POST", ga.ALLOWED_TARGET)}
        refused = [r for r in rows if r.get("refused")]
        assert len(refused) == sum(final["gateway"]["refused"].values())
        assert len(refused) >= (len(seen["tricks"]) if network == "host" else 1)
