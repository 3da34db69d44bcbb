"""No credential in any sandbox: a canary key appears nowhere a session can read, nor in the batch.

The real CLI under real bwrap, against the scripted provider over TLS (a trustme certificate,
``--provider-ca``) that takes the canary credential only. The session's scripted turns look
for the credential everywhere a session could: its environment (``env``, also printed into the
kept stream and the provider's request), every ``/proc/*/environ`` it sees, its home (the
config directory: ``ls -la``, every file's text) and ``$HOME/.credentials.json``. Held
(docs/gateway.md, "What crosses into a sandbox now"):

* the session ran: every request reached the provider with the canary (it refuses any other
  credential), none with the placeholder;
* inside, the provider variable is the gateway's loopback address and the key variable holds a
  placeholder that is not the canary; the other variable is not set; no credentials file;
* the canary (and a login's refresh token) appears in no file of the whole batch directory,
  kept streams decompressed; the placeholder does (the dump is there).

Once per network mode and per kind of host credential (an API key named by
``--api-key-env``, or the host's login in ``.credentials.json``).

Seen red against the product before the gateway (its TLS and ``--provider-ca`` left out, which
it lacked): the session's ``ANTHROPIC_API_KEY`` was the canary itself; and against the gateway
with its placeholder made the real key (the same assertion).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration import gatewaykit as gk
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.harness, pytest.mark.slow,
              pytest.mark.timeout(400)]  # fmt: skip

PROBE = "GW-DUMP"
TASK = "gateway canary: show me everything you hold"
LOOKS = [
    kit.bash("t1", "mkdir -p attempts; env | tee attempts/env.txt"),
    kit.bash("t2", kit.evidence("for f in /proc/[0-9]*/environ; do echo \"== $f\"; "
                                "tr '\\0' '\\n' < $f; done", "proc_environ.txt")),
    kit.bash("t3", kit.evidence('ls -la "$HOME"', "home.txt")),
    kit.bash("t4", kit.evidence('cat "$HOME/.credentials.json"', "credentials.txt")),
    kit.bash("t5", kit.evidence('grep -r -a . "$HOME" 2>/dev/null | head -c 4000000',
                                "home_files.txt")),
]


@pytest.mark.parametrize("kind", ["api-key", "login"])
@pytest.mark.parametrize("network", gk.NETWORKS)
def test_the_canary_is_nowhere_and_the_placeholder_is_what_the_session_holds(
        network: str, kind: gk.CredentialKind, harness: Path, bwrap: str) -> None:
    with kit.host_dir("hw-gw-canary-") as root, gk.host(root, kind) as h:
        corpus = kit.write_corpus(root / "corpus", {PROBE: TASK})
        kit.write_script(root / "scripts", PROBE, TASK, LOOKS)
        batch = root / "batch"
        with gk.provider(h, root / "scripts") as served:
            done = gk.run(h, served, corpus, batch, harness, network, "--retries", "0")
            assert done.returncode == 0, done.stderr
            assert served.refused_credentials == 0  # never the placeholder, never nothing
            assert served.requests == {PROBE: 2} and served.unmatched == 0
            sent_back, provider_url = served.tool_results, served.url
        final = gk.final_of(batch, PROBE, 1)
        assert final["state"] == "recorded"
        rows = gk.request_rows(batch, PROBE, 1)  # the one target the pinned harness sends
        assert [(r["method"], r["path"], r["status"]) for r in rows] == [
            ("POST", "/v1/messages?beta=true", 200)] * 2
        assert final["gateway"]["forwarded"] == 2 and final["gateway"]["refused"] == {}

        attempts = gk.workspace(batch, PROBE) / "attempts"
        env = gk.dumped_env((attempts / "env.txt").read_text())
        placeholder = env[h.key_variable]
        other = {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} - {h.key_variable}
        assert not other & set(env), env.keys()
        assert placeholder and placeholder != h.secret and len(placeholder) >= 20
        assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
        assert env["ANTHROPIC_BASE_URL"] != provider_url  # the gateway, not the provider
        assert ".credentials.json" not in (attempts / "home.txt").read_text()
        assert "No such file" in (attempts / "credentials.txt").read_text()
        assert "rc=1" in (attempts / "credentials.txt").read_text()

        canaries = [h.secret, *([h.refresh] if h.refresh else [])]
        for needle in canaries:
            assert gk.holding(batch, needle) == []
            assert not any(needle in text for _, text in sent_back.values())
        assert placeholder in sent_back["t1"][1]  # what the provider was sent: the dump
        found = {p.relative_to(batch).as_posix() for p in gk.holding(batch, placeholder)}
        assert f"sessions/present/{PROBE}/s1/workspace/attempts/env.txt" in found
        assert f"sessions/present/{PROBE}/s1/attempt-1/stdout.jsonl.zst" in found
