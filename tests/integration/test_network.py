"""Network confinement end to end: the real CLI, under real bwrap, through the egress proxy.

The scripted provider on host loopback is the one allowed target; a second
loopback server stands in for "the public repository", and a loopback UDP
server for a resolver. The scripted session runs real Bash calls (curl, a
Python socket, a raw DNS query) that write what happened into the
workspace, where the test reads it after the session. Expected values come
from the rule (the provider's host:port and nothing else; every denial
counted and named in the prose; ``--network host`` open and said so).
Only loopback is ever targeted, even when the confinement is weakened.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from campaign.batch import _open
from campaign.batch._options import BatchOptions
from demo import Script, ScriptedProvider, example_paths, load_scripts
from sandbox import Check
from sandbox._errors import PreflightFailed
from tests import contract_check
from tests.integration import kit
from tests.sandbox.network.test_network import FakeResolver, Server

PROBE = "HW-PRB-0001"
KEY = "sk-test-network-not-a-secret"
DNS_QUERY = (  # one A query for public-repository.example, id 0x4857
    "b'\\x48\\x57\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00"
    "\\x11public-repository\\x07example\\x00\\x00\\x01\\x00\\x01'"
)


def _bash(tool_id: str, command: str) -> dict[str, Any]:
    return {"blocks": [{"type": "tool_use", "id": tool_id, "name": "Bash",
                        "input": {"command": command, "description": tool_id}}]}


def _network_script(repo_port: int, dns_port: int) -> Script:
    """HW-PRB-0001's task, played as: curl, direct sockets, a DNS query, then the answer."""
    direct = (
        "import socket\n"
        "for host in ('127.0.0.1', '127.0.0.2'):\n"
        "    try:\n"
        f"        socket.create_connection((host, {repo_port}), timeout=5).close()\n"
        "        print(host, 'connected')\n"
        "    except OSError as e:\n"
        "        print(host, 'failed', e)\n"
    )
    dns = (
        "import socket\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)\n"
        "try:\n"
        f"    s.sendto({DNS_QUERY}, ('127.0.0.1', {dns_port})); s.recv(512); print('answered')\n"
        "except OSError as e:\n"
        "    print('failed', e)\n"
    )
    return Script.model_validate({
        "name": "network",
        "match": "how many times Headwater retries a failed provider call",
        "model": "claude-opus-4-8-20261101",
        "turns": [
            _bash("toolu_net_curl",
                  f"curl -sS -m 10 -o /dev/null -w '%{{http_code}}' "
                  f"http://127.0.0.1:{repo_port}/repo.git > net-curl.txt 2>&1; "
                  "echo \" exit=$?\" >> net-curl.txt"),
            _bash("toolu_net_direct", f"python3 -c \"{direct}\" > net-direct.txt 2>&1"),
            _bash("toolu_net_dns", f"python3 -c \"{dns}\" > net-dns.txt 2>&1"),
            {"blocks": [{"type": "text", "text": "HW-DR-0052 sets the retry budget.\n\n"
                                                 "HW-DR-0052 current"}]},
        ],
    })


@pytest.fixture
def repository() -> Iterator[Server]:
    with Server("public-repository-content") as server:
        yield server


@pytest.fixture
def resolver() -> Iterator[FakeResolver]:
    fake = FakeResolver(port=0)
    yield fake
    fake.close()


@pytest.fixture
def provider(repository: Server, resolver: FakeResolver) -> Iterator[ScriptedProvider]:
    with example_paths() as (_, scripts_dir):
        scripts = [_network_script(repository.port, resolver.port), *load_scripts(scripts_dir)]
        with ScriptedProvider(scripts) as p:
            yield p


@pytest.fixture
def corpus() -> Iterator[Path]:
    with example_paths() as (root, _):
        yield root


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HW_NET_KEY": KEY}
    return subprocess.run([sys.executable, "-m", "campaign", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


def _finals(batch: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return kit.finals(batch)


def _workspace_file(batch: Path, session: str, name: str) -> str:
    return (batch / "sessions" / "present" / PROBE / session / "workspace" / name).read_text()


def _prose(batch: Path) -> str:
    text = (batch / "transcripts" / "present.md").read_text()
    assert contract_check.violations(text) == []
    return text.split("## Run identity")[0]


def _run(corpus: Path, batch: Path, provider: ScriptedProvider, harness: Path,
         *extra: str) -> subprocess.CompletedProcess[str]:
    return _cli("run", str(corpus), "--tier", "regression", "--batch-dir", str(batch),
                "--provider-url", provider.url, "--api-key-env", "HW_NET_KEY",
                "--harness", str(harness), *extra)


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.timeout(300)
def test_run_is_confined_by_default_and_reaches_only_the_provider(
    tmp_path: Path, corpus: Path, provider: ScriptedProvider, repository: Server,
    resolver: FakeResolver, bwrap: str, harness: Path,
) -> None:
    batch = tmp_path / "b"
    proc = _run(corpus, batch, provider, harness)  # no --network: the default
    assert proc.returncode == 0, proc.stderr
    config = YAML(typ="safe", pure=True).load((batch / "config.yaml").read_text())
    assert config["facts"]["network"] == "confined"
    finals = _finals(batch)
    assert {r["state"] for r in finals.values()} == {"recorded"}
    assert {r["network"] for r in finals.values()} == {"confined"}
    ours = finals[(PROBE, "s1")]
    denied = f"127.0.0.1:{repository.port}"
    assert ours["egress"]["denied"] == {denied: 1}  # curl honoured http_proxy: refused, named
    assert ours["egress"]["allowed"] >= 4  # four model turns, each through the proxy
    # The one target is the session's own gateway on host loopback, never the provider: the
    # gateway alone reaches it (docs/gateway.md), and forwarded each model turn.
    gateway = ours["egress"]["allowed_target"]
    assert gateway.startswith("127.0.0.1:") and gateway != provider.url.removeprefix("http://")
    assert ours["gateway"]["forwarded"] >= 4 and ours["gateway"]["refused"] == {}
    assert ours["event"]["answer"] == "current HW-DR-0052"
    assert all(r["egress"]["denied"] == {} for k, r in finals.items() if k != (PROBE, "s1"))
    # What the session's own calls saw, and what the outside saw of them.
    assert _workspace_file(batch, "s1", "net-curl.txt") == "403 exit=0\n"
    direct = _workspace_file(batch, "s1", "net-direct.txt").splitlines()
    assert [line.split()[:2] for line in direct] == [["127.0.0.1", "failed"],
                                                      ["127.0.0.2", "failed"]]
    assert _workspace_file(batch, "s1", "net-dns.txt").startswith("failed")
    assert repository.hits == 0 and resolver.queries == 0
    prose = _prose(batch)
    assert "Network mode `confined`: each session ran in its own network namespace" in prose
    assert f'Denied connections: 1: "{denied}" x1 ({PROBE}/s1).' in prose  # a JSON literal
    assert "allowed only the provider, through each session's own provider gateway (" in prose


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.timeout(300)
def test_run_with_network_host_leaves_the_channel_open_and_says_so(
    tmp_path: Path, corpus: Path, provider: ScriptedProvider, repository: Server,
    resolver: FakeResolver, bwrap: str, harness: Path,
) -> None:
    batch = tmp_path / "b"
    proc = _run(corpus, batch, provider, harness, "--network", "host")
    assert proc.returncode == 0, proc.stderr
    config = YAML(typ="safe", pure=True).load((batch / "config.yaml").read_text())
    assert config["facts"]["network"] == "host"
    ours = _finals(batch)[(PROBE, "s1")]
    assert ours["state"] == "recorded" and ours["network"] == "host" and "egress" not in ours
    assert _workspace_file(batch, "s1", "net-curl.txt") == "200 exit=0\n"
    assert "127.0.0.1 connected" in _workspace_file(batch, "s1", "net-direct.txt")
    assert _workspace_file(batch, "s1", "net-dns.txt").startswith("answered")
    assert repository.hits == 1 and resolver.queries == 1  # curl's GET; the raw query
    prose = _prose(batch)
    assert "Network mode `host`" in prose and "(the channel was open)" in prose
    assert "Denied connections" not in prose


@pytest.mark.bwrap
@pytest.mark.harness
@pytest.mark.timeout(300)
def test_record_with_network_confined_names_the_denial_of_its_session(
    tmp_path: Path, corpus: Path, provider: ScriptedProvider, repository: Server,
    bwrap: str, harness: Path,
) -> None:
    batch = tmp_path / "b"
    proc = _cli("record", "--corpus", str(corpus), "--probe", PROBE, "--arm", "present",
                "--batch-dir", str(batch), "--provider-url", provider.url,
                "--api-key-env", "HW_NET_KEY", "--harness", str(harness), "--network", "confined")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _finals(batch)[(PROBE, "r1")]["network"] == "confined"
    assert "127.0.0.1 connected" not in _workspace_file(batch, "r1", "net-direct.txt")
    assert f'Denied connections: 1: "127.0.0.1:{repository.port}" x1 ({PROBE}/r1).' in _prose(batch)
    assert repository.hits == 0


def _options(network: str | None) -> BatchOptions:
    return BatchOptions(command="run", corpus="/c", tier="campaign", seed=0,
                        harness_path="/h", network=network)


@pytest.mark.parametrize("verdict", ["broken", "unverified"])
def test_network_mode_falls_back_to_host_by_default_and_refuses_when_asked(
    monkeypatch: pytest.MonkeyPatch, verdict: str
) -> None:
    failing = Check("network", verdict, "no netns here", "a fix")  # type: ignore[arg-type]
    monkeypatch.setattr(_open, "network_preflight", lambda **_: failing)
    notes: list[str] = []
    mode, note = _open._network(_options(None), notes.append)
    assert mode == "host" and "fell back" in note and "no netns here" in note
    assert len(notes) == 1 and notes[0].startswith("warning: network confinement is not available")
    with pytest.raises(PreflightFailed, match="no netns here"):  # exit 12 upstream
        _open._network(_options("confined"), notes.append)
    assert _open._network(_options("host"), notes.append) == ("host", "asked: --network host")


def test_network_mode_is_confined_when_the_preflight_verifies_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_open, "network_preflight", lambda **_: Check("network", "ok", "x"))
    assert _open._network(_options(None), print)[0] == "confined"
    assert _open._network(_options("confined"), print)[0] == "confined"
