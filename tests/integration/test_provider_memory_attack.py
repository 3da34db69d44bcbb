"""A session that sends the scripted provider 400 MiB of tool_results leaves the runner small.

Under real bwrap, through ``record --provider scripted`` (the provider runs inside the
runner's process): a stand-in sends one small request, waits, then 50 requests of 8 MiB
tool_result text each through its egress proxy to its provider gateway (as the CLI
reaches it: ``HTTPS_PROXY``, ``ANTHROPIC_BASE_URL``, its placeholder key, the one allowed
path ``POST /v1/messages?beta=true``; docs/gateway.md), which forwards them to the provider,
then 20 more of 8 MiB with a key that is not its placeholder (refused at their heads, their
bodies unread), then prints a valid stream. The test samples the
runner's resident memory (``/proc/<pid>/status`` ``VmRSS``) from the moment the provider
logged the first request (``HEADWATER_SCRIPTED_REQUEST_LOG``) to the runner's end.

Rule (docs/provider.md "Bounds"): the provider holds no more of what sessions send than its
bounded tables (demo/_held.py), so the runner's growth stays under 64 MiB however much is
sent (24 requests of 60 MiB once took it from 58 MB to 1.57 GB for the rest of the batch);
the gateway, in the same process, holds no body whole (`GROWTH_BOUND`).

Seen red with the bound removed (`demo._held.ToolResults.note` neither cutting nor
dropping, the provider keeping each text whole): the runner grew by about 400 MiB.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from campaign.supervisor._streams import FINAL_TEXT_NAME
from tests.integration import kit

pytestmark = [pytest.mark.bwrap, pytest.mark.timeout(300)]

MiB = 1024 * 1024
REQUESTS = 50
TEXT_BYTES = 8 * MiB
REFUSED = 20
"""Requests of the same size with a key that is not the session's placeholder: the gateway
refuses each at its head (401, counted) and reads none of its body."""
GROWTH_BOUND = 64 * MiB + 2 * TEXT_BYTES
"""The provider's bound (docs/provider.md, "Bounds") plus the provider's own read of the one
body it answers at a time (the bytes, and the text it takes of them). The session's gateway,
in the same process, streams each body upstream as it arrives and holds none of it whole
(docs/gateway.md, "Bounds"; that it streams is held by the gateway's own mechanism test,
tests/sandbox/gateway/test_gateway.py): measured, the runner grew by about 31 MiB; with the
gateway reading each body whole before forwarding it, by 65 to 115 MiB, which this bound
does not always tell from the provider's own."""
STANDIN = r'''#!/usr/bin/python3
import json, os, socket, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (provider memory attack)"); sys.exit(0)
BRIDGE = ("127.0.0.1", int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1]))
PROVIDER = os.environ["ANTHROPIC_BASE_URL"].split("//", 1)[1].rstrip("/")
KEY = os.environ.get("ANTHROPIC_API_KEY") or os.environ["ANTHROPIC_AUTH_TOKEN"]
def emit(o): os.write(1, (json.dumps(o) + "\n").encode())
def post(n, text_bytes, key=KEY):
    head = json.dumps({"model": "m", "stream": False, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "memory attack"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "t"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_%d" % n,
                                      "content": "@"}]}]}).encode()
    before, after = head.split(b'"@"')
    body = before + b'"' + b"r" * text_bytes + b'"' + after
    s = socket.create_connection(BRIDGE, timeout=60)
    s.sendall(("POST http://%s/v1/messages?beta=true HTTP/1.1\r\nHost: %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\nX-Api-Key: %s\r\n"
               "X-Claude-Code-Session-Id: attack\r\n\r\n" % (PROVIDER, PROVIDER, len(body), key)
               ).encode())
    answer = b""
    try:  # a refused request is answered at its head and its connection closed, body unread
        s.sendall(body)
        del body
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    s.close()
    return answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "none"
statuses = [post(0, 16)]
time.sleep(2)  # the test takes the runner's baseline now
statuses += [post(n, TEXT_BYTES) for n in range(1, REQUESTS + 1)]
statuses += [post(n, TEXT_BYTES, key="not-the-placeholder") for n in range(REFUSED)]
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
      "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": "statuses: " + " ".join(statuses) + "\nnothing"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 1, "result": "", "total_cost_usd": 0.01})
'''.replace("TEXT_BYTES", str(TEXT_BYTES)).replace("REQUESTS", str(REQUESTS)).replace(
    "REFUSED", str(REFUSED))


def _rss(pid: int) -> int | None:
    """The resident memory of ``pid`` in bytes, None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def _logged(log: Path) -> int:
    try:
        return len(log.read_bytes().splitlines())
    except OSError:
        return 0


def test_400_mib_of_tool_results_leave_the_runner_under_64_mib_more(bwrap: str) -> None:
    with kit.host_dir("hw-provmem-") as root:
        kit.write_corpus(root / "corpus", {"MEM-1": "send big requests now."}, tools=["Bash"])
        kit.write_harness(root / "claude", STANDIN)
        kit.write_script(root / "scripts", "unused", "no task says this")
        log = root / "requests.jsonl"
        runner = kit.start_cli(
            "record", "--corpus", str(root / "corpus"), "--tier", "regression", "--probe",
            "MEM-1", "--arm", "present", "--batch-dir", str(root / "batch"), "--harness",
            str(root / "claude"), "--provider", "scripted", "--scripts", str(root / "scripts"),
            "--network", "confined", env=kit.base_env(HEADWATER_SCRIPTED_REQUEST_LOG=str(log)))
        baseline: int | None = None
        peak = 0
        try:
            deadline = time.monotonic() + 240
            while runner.poll() is None and time.monotonic() < deadline:
                rss = _rss(runner.pid)
                if rss is not None:
                    if baseline is None and _logged(log) >= 1:
                        baseline = rss
                    elif baseline is not None:
                        peak = max(peak, rss)
                time.sleep(0.02)
            out, err = runner.communicate(timeout=60)
        finally:
            if runner.poll() is None:
                kit.kill_group(runner)
        assert runner.returncode == 0, out + err
        (final,) = kit.final_list(root / "batch")
        assert final["state"] == "recorded", final["reason"]
        lines = [json.loads(line) for line in log.read_bytes().splitlines()]
        big = [r for r in lines if r.get("session") == "attack" and r.get("body") is None]
        assert len(big) == REQUESTS, lines[:3]  # every large request reached the provider
        text = (root / "batch" / final["stream"]).parent / FINAL_TEXT_NAME
        said = text.read_text().split("statuses: ", 1)[1].split("\n", 1)[0].split()
        assert said[:REQUESTS + 1] == ["200"] * (REQUESTS + 1), said
        assert set(said[REQUESTS + 1:]) <= {"401", "none"} and len(said) == REQUESTS + 1 + REFUSED
        assert final["gateway"]["forwarded"] == REQUESTS + 1
        assert final["gateway"]["refused"] == {"placeholder": REFUSED}
        assert baseline is not None
        growth = peak - baseline
        print(f"runner baseline {baseline / MiB:.0f} MiB, grew {growth / MiB:.1f} MiB")
        assert growth < GROWTH_BOUND, f"the runner grew {growth / MiB:.0f} MiB"
