"""Helpers of the gateway attack suites: a stand-in harness that attacks its own provider
gateway as a session can, and the batch it ran in read back.

The stand-in is one self-contained file run by Debian's /usr/bin/python3 inside the real
bwrap sandbox (docs/glossary.md RC-02): `PRELUDE` (how a session reaches its gateway, with
raw sockets: through its egress proxy's bridge, ``HTTPS_PROXY``, with absolute-URI targets
when confined, straight to ``ANTHROPIC_BASE_URL``'s port with ``--network host``; its
placeholder from ``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``), then the attack's own
code, which puts what it saw in ``REPORT``; then `EPILOGUE` writes ``REPORT`` to
``attempts/attack.json`` in the workspace and prints a valid stream. The batch is a real
``run --provider scripted`` (the scripted provider in the runner's process, behind each
session's gateway, logging every request it received: ``HEADWATER_SCRIPTED_REQUEST_LOG``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Final

from tests.integration import gatewaykit as gk
from tests.integration import kit

ALLOWED_TARGET: Final = "/v1/messages?beta=true"
"""The one target the gateway forwards (docs/gateway.md)."""

PRELUDE: Final = r'''#!/usr/bin/python3
import json, os, re, socket, sys, time
if sys.argv[1:] == ["--version"]:
    print("0.0.0 (gateway attack)"); sys.exit(0)
TASK = " ".join(sys.argv[1:])
GATEWAY = os.environ["ANTHROPIC_BASE_URL"].split("//", 1)[1].rstrip("/")
PROXY = os.environ.get("HTTPS_PROXY") or ""
if PROXY:  # confined: the bridge to the egress proxy, absolute-URI targets
    ADDR, PREFIX = ("127.0.0.1", int(PROXY.rsplit(":", 1)[1])), "http://" + GATEWAY
else:      # host: the gateway's own port
    ADDR, PREFIX = ("127.0.0.1", int(GATEWAY.rsplit(":", 1)[1])), ""
KEY = os.environ.get("ANTHROPIC_API_KEY") or os.environ["ANTHROPIC_AUTH_TOKEN"]
BODY = json.dumps({"model": "claude-opus-4-8", "max_tokens": 8, "stream": False,
                   "messages": [{"role": "user", "content": "gateway attack"}]}).encode()
REPORT = {"network": "confined" if PROXY else "host"}


def connect(timeout=30.0):
    return socket.create_connection(ADDR, timeout=timeout)


def head(target, *, method="POST", key=KEY, length=None, extra="", version="HTTP/1.1",
         host=None, absolute=True, close=True):
    """One request's head as bytes; ``target`` gets the proxy's absolute form when confined;
    ``close`` asks the gateway to close the connection once it has answered."""
    line_target = (PREFIX + target) if absolute and target.startswith("/") else target
    text = "%s %s %s\r\nHost: %s\r\n" % (method, line_target, version, host or GATEWAY)
    if close:
        text += "Connection: close\r\n"
    if key is not None:
        text += "X-Api-Key: %s\r\n" % key
    text += "Content-Type: application/json\r\n"
    if length is not None:
        text += "Content-Length: %d\r\n" % length
    return (text + extra + "\r\n").encode()


def request(target, body=BODY, **options):
    return head(target, length=len(body), **options) + body


def read_all(sock, timeout=10.0):
    """Everything answered until the peer closes or ``timeout`` seconds pass."""
    sock.settimeout(timeout)
    got = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    return got


def exchange(data, timeout=10.0):
    """``data`` sent on a fresh connection; the statuses answered, in order."""
    sock = connect()
    try:
        sock.sendall(data)
        answer = read_all(sock, timeout)
    except OSError as exc:
        answer = b""
    finally:
        sock.close()
    return statuses(answer)


def statuses(answer):
    return [int(s) for s in re.findall(rb"(?:^|\r\n)HTTP/1\.[01] (\d{3})", answer)]


'''
"""The stand-in's first part: how it reaches its gateway (module docstring)."""

EPILOGUE: Final = r'''

os.makedirs("attempts", exist_ok=True)
with open("attempts/attack.json", "w") as f:
    json.dump(REPORT, f)


def emit(o):
    data = memoryview((json.dumps(o) + "\n").encode())
    while data:
        data = data[os.write(1, data):]


emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Bash"],
      "mcp_servers": [], "model": "m", "permissionMode": "dontAsk", "skills": [],
      "plugins": [], "memory_paths": {}, "claude_code_version": "0.0.0"})
emit({"type": "assistant", "parent_tool_use_id": None, "message": {"id": "m1", "model": "m",
      "content": [{"type": "text", "text": "attacked\nnothing"}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
      "num_turns": 1, "result": "", "total_cost_usd": 0.0})
'''
"""The stand-in's last part: ``REPORT`` into the workspace, then a valid stream."""


def standin(attack: str) -> str:
    """The whole stand-in: `PRELUDE`, ``attack`` (Python filling ``REPORT``), `EPILOGUE`."""
    return PRELUDE + attack + EPILOGUE


def run(root: Path, tasks: dict[str, str], attack: str, network: str, *extra: str,
        timeout: float = kit.CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """A batch of ``tasks`` (probe -> task, the regression tier) whose every session is the
    stand-in of ``attack``, against the scripted provider, no retries; its requests logged at
    ``root/requests.jsonl``."""
    corpus = kit.write_corpus(root / "corpus", tasks, tools=["Bash"])
    harness = kit.write_harness(root / "claude", standin(attack))
    kit.write_script(root / "scripts", "unused", "no task says this")
    return kit.cli("run", str(corpus), "--tier", "regression", "--batch-dir",
                   str(root / "batch"), "--harness", str(harness), "--provider", "scripted",
                   "--scripts", str(root / "scripts"), "--retries", "0", "--network", network,
                   *extra, env=kit.base_env(HEADWATER_SCRIPTED_REQUEST_LOG=str(log(root))),
                   timeout=timeout)  # fmt: skip


def log(root: Path) -> Path:
    """Where the scripted provider of `run` logs each request it received."""
    return root / "requests.jsonl"


def provider_saw(root: Path) -> list[dict[str, Any]]:
    """Each request the scripted provider received (``path``, ``session``, ``body``)."""
    path = log(root)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def report(root: Path, probe: str) -> dict[str, Any]:
    """What ``probe``'s stand-in saw (its ``attempts/attack.json``)."""
    found: dict[str, Any] = json.loads(
        (gk.workspace(root / "batch", probe) / "attempts" / "attack.json").read_text())
    return found
