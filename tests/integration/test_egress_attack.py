"""Attacks on the egress proxy from inside a confined session, under real bwrap.

* **connections**: a session opens connections through the bridge until one
  is refused (20,800 of them once exhausted the root runner's descriptors and
  ended the whole batch "unexpected error"). The session's cap (64 open at
  once, the default) refuses one more with 503; the session ends
  ``limit-exceeded`` naming the cap, the ledger counts the refusal, the prose
  says so, and the batch's other session is recorded.
* **Host**: a session asks the allowed provider with a spoofed ``Host:``,
  smuggles a second request after a body of its ``Content-Length``, and
  sends plain bytes through a tunnel to it. None of it reaches the provider
  (a test server on host loopback that keeps every byte it got), and the
  denial counts say what was refused.

Seen red: ``HW_WEAKEN=no-conn-cap`` (the flood runs on until the session's
process limit ends it: no connection cap is named) and ``HW_WEAKEN=no-host-check``
(the proxy as it was: the spoofed Host, the smuggled request and the plain
tunnel bytes all reach the provider).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox.network._egress import OVER_CAP_NAME
from tests.integration import kit
from tests.sandbox.network.test_egress import Upstream

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(240)]

PRELUDE = r'''#!/usr/bin/python3
import json, os, socket, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (egress attack)"); sys.exit(0)
task = sys.argv[-1]
BRIDGE = ("127.0.0.1", int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1]))
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
def stream(done):
    emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
          "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
          "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
    emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1",
          "model": "m", "content": [{"type": "text", "text": "did: " + done + "\nnothing"}]}})
    emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
          "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''
FLOOD = PRELUDE + r'''
if "flood" not in task:
    stream("nothing"); sys.exit(0)
held, done = [], "no refusal in 20800 connections"
for n in range(20800):
    try:
        s = socket.create_connection(BRIDGE, timeout=5)
    except OSError as exc:
        done = "connect %d failed: %s" % (n, exc); break
    held.append(s)
    s.settimeout(0.05)
    try:
        answer = s.recv(64)
    except socket.timeout:
        continue
    if answer.startswith(b"HTTP/1.1 503"):
        done = "refused at connection %d" % (n + 1); break
time.sleep(5)  # the runner ends a session past its cap meanwhile
stream(done)
'''
SPOOF = PRELUDE + r'''
provider = os.environ["ANTHROPIC_BASE_URL"].split("//", 1)[1].rstrip("/")
def ask(data):
    s = socket.create_connection(BRIDGE, timeout=5)
    s.sendall(data)
    s.settimeout(2)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except OSError:
        pass
    s.close()
    return out.decode("latin-1")
seen = {
    "spoofed": ask(("GET http://%s/v1/models HTTP/1.1\r\nHost: evil.example\r\n\r\n"
                    % provider).encode()),
    "smuggled": ask(("POST http://%s/v1/x HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\n"
                     "hello" "GET /secret HTTP/1.1\r\nHost: evil.example\r\n\r\n"
                     % (provider, provider)).encode()),
    "tunnel": ask(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                   "GET /secret HTTP/1.1\r\nHost: evil.example\r\n\r\n"
                   % (provider, provider)).encode()),
}
with open("seen.json", "w") as f:
    json.dump(seen, f)
stream("asked")
'''


def _harness(root: Path, text: str) -> Path:
    harness = root / "claude"
    harness.write_text(text)
    harness.chmod(0o755)
    return harness


def test_a_connection_flood_ends_that_session_at_its_cap_and_the_batch_goes_on(
        bwrap: str) -> None:
    with kit.host_dir("hw-flood-") as root:
        corpus = kit.write_corpus(root / "corpus", {"EGR-FLOOD-1": "flood the proxy now.",
                                                    "EGR-HONEST-1": "be honest now."})
        kit.write_script(root / "scripts", "unused", "no task says this")
        batch = root / "batch"
        proc = kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir", str(batch),
                       "--harness", str(_harness(root, FLOOD)), "--provider", "scripted",
                       "--scripts", str(root / "scripts"), "--network", "confined",
                       "--concurrency", "1", "--retries", "0", env=kit.base_env())  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        finals = {probe: r for (probe, _), r in kit.finals(batch).items()}
        assert finals["EGR-HONEST-1"]["state"] == "recorded"
        flood = finals["EGR-FLOOD-1"]
        assert flood["state"] == "limit-exceeded", flood["reason"]
        assert ("more than 64 connections at once through the egress proxy "
                "(--max-connections)") in flood["reason"]
        assert flood["egress"]["denied"].get(OVER_CAP_NAME, 0) >= 1, flood["egress"]
        prose = (batch / "transcripts" / "present.md").read_text()
        assert "EGR-FLOOD-1/s1 ended limit-exceeded" in prose and OVER_CAP_NAME in prose
        assert kit.processes_under(root) == {}


def test_the_provider_is_reached_only_as_itself(bwrap: str) -> None:
    with Upstream() as provider, kit.host_dir("hw-spoof-") as root:
        corpus = kit.write_corpus(root / "corpus", {"EGR-SPOOF-1": "spoof the provider now."})
        batch = root / "batch"
        proc = kit.cli("record", "--corpus", str(corpus), "--probe", "EGR-SPOOF-1", "--arm",
                       "present", "--tier", "regression", "--batch-dir", str(batch),
                       "--harness", str(_harness(root, SPOOF)), "--network", "confined",
                       "--provider-url", f"http://127.0.0.1:{provider.port}",
                       "--api-key-env", "HW_SPOOF_KEY",
                       env=kit.base_env(HW_SPOOF_KEY="sk-spoof-not-a-secret"))  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (final,) = kit.final_list(batch)
        workspace = batch / "sessions" / "present" / "EGR-SPOOF-1" / final["session"]
        seen = json.loads((workspace / "workspace" / "seen.json").read_text())
        # The proxy's one target is the session's gateway, which alone reaches the provider;
        # the proxy refused the three (the smuggled one for its bytes after its request, which
        # closes the connection: the session reads nothing), and what of the smuggled request
        # may have reached the gateway first carries no placeholder: refused there too. The
        # provider saw not a byte.
        assert b"".join(provider.received) == b""
        assert seen["spoofed"].startswith("HTTP/1.1 403 Forbidden"), seen
        assert seen["smuggled"] == "", seen
        assert seen["tunnel"] == "HTTP/1.1 200 Connection established\r\n\r\n", seen
        assert final["gateway"]["forwarded"] == 0
        assert final["gateway"]["refused"] in ({}, {"placeholder": 1}), final["gateway"]
        target = final["egress"]["allowed_target"]
        assert target != f"127.0.0.1:{provider.port}"
        assert final["egress"]["denied"] == {
            f"{target} with Host evil.example": 1,
            f"{target} with bytes after its request": 1,
            f"{target} with bytes that are not TLS": 1,
        }
        prose = (batch / "transcripts" / "present.md").read_text()
        assert "Denied connections: 3" in prose and "with Host evil.example" in prose
