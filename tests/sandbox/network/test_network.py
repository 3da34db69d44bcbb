"""Network confinement: the egress proxy, the bridge, the confined sandbox.

Only loopback is ever targeted. The "provider" and the "public repository"
are two throwaway HTTP servers on host loopback; the sandbox reaches the
first only through the bridge and the egress proxy, and the second not at
all. Expected values come from the rule (the provider's host:port and
nothing else; every denial counted and named), never from the proxy's output.
"""

from __future__ import annotations

import json
import socket
import stat
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox._argv import EGRESS_MOUNT, Confinement, bwrap_argv, bwrap_options
from sandbox._capture import capture
from sandbox._env import session_environment
from sandbox._init import session_init_command
from sandbox._layout import HostLayout, measure_host_layout
from sandbox.confined import ConfinedSpec, open_confined
from sandbox.confined import _command as confined_module
from sandbox.network import connect_unix
from sandbox.network._egress import (
    MALFORMED_NAME,
    BadProxyRequest,
    EgressStats,
    Target,
    open_egress_proxy,
    parse_proxy_request,
    target_of_url,
)
from sandbox.network._network import (
    BRIDGE_FAILED_STATUS,
    BRIDGE_URL,
    network_preflight,
)

from .wire import read_to_the_end

PY = "/usr/bin/python3"  # Debian's, under /usr: visible inside the sandbox (RC-02)
MERGED_USR = HostLayout(symlinks=(("/bin", "usr/bin"), ("/lib", "usr/lib")), directories=())


# --- pure parts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("http://127.0.0.1:8765", Target("127.0.0.1", 8765)),
        ("https://API.Anthropic.com", Target("api.anthropic.com", 443)),
        ("http://gateway.internal/anthropic/v1", Target("gateway.internal", 80)),
        ("http://[::1]:9000/", Target("::1", 9000)),
    ],
)
def test_target_of_url_fills_default_ports(url: str, target: Target) -> None:
    assert target_of_url(url) == target


@pytest.mark.parametrize("url", ["ftp://x:1", "127.0.0.1:80", "http://:80", ""])
def test_target_of_url_refuses_what_names_no_http_host(url: str) -> None:
    with pytest.raises(ValueError, match="provider URL"):
        target_of_url(url)


def test_parse_connect_names_host_and_port() -> None:
    req = parse_proxy_request(b"CONNECT Api.Example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (req.kind, req.target, req.upstream_head) == (
        "connect", Target("api.example.com", 443), b""
    )
    assert str(parse_proxy_request(b"CONNECT [::1]:80 HTTP/1.1\r\n\r\n").target) == "[::1]:80"


def test_parse_forward_rewrites_to_origin_form_and_closes() -> None:
    head = (
        b"POST http://127.0.0.1:9/v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"
        b"Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\n"
        b"Proxy-Authorization: Basic eA==\r\nContent-Length: 2\r\n\r\n"
    )
    req = parse_proxy_request(head)
    assert req.kind == "forward" and req.target == Target("127.0.0.1", 9)
    assert req.upstream_head == (
        b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:9\r\nContent-Length: 2\r\n"
        b"Connection: close\r\n\r\n"
    )


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # origin-form: not meant for a proxy
        b"GET https://x/ HTTP/1.1\r\n\r\n",  # clients CONNECT for https
        b"CONNECT x HTTP/1.1\r\n\r\n",
        b"CONNECT x:0 HTTP/1.1\r\n\r\n",
        b"CONNECT x:99999 HTTP/1.1\r\n\r\n",
        b"GET http://x:99999/ HTTP/1.1\r\n\r\n",
        b"hello\r\n\r\n",
    ],
)
def test_parse_refuses_what_is_not_a_proxy_request(head: bytes) -> None:
    with pytest.raises(BadProxyRequest):
        parse_proxy_request(head)


def _conf(**changes: object) -> Confinement:
    fields: dict[str, object] = {
        "workspace": Path("/srv/b/ws"), "harness": Path("/opt/pinned/claude"),
        "log_dir": Path("/srv/b/log"), "config_dir": Path("/var/tmp/hc/cfg/1-x"),
        "host_layout": MERGED_USR,
    }
    fields.update(changes)
    return Confinement(**fields)  # type: ignore[arg-type]


def test_confined_argv_unshares_the_network_and_binds_only_the_egress_socket() -> None:
    sock = Path("/var/tmp/headwater-campaign/egress/1-a/egress.sock")
    conf = _conf(network="confined", egress_socket=sock)
    argv = bwrap_argv(conf, ["/x"], args_fd=3)
    assert argv.count("--unshare-net") == 1
    assert argv.index("--unshare-net") < argv.index("--clearenv")  # a namespace flag
    options = bwrap_options(conf)
    i = options.index(str(sock))
    assert options[i - 1 : i + 2] == ["--ro-bind", str(sock), EGRESS_MOUNT]
    assert [a for a in argv if a not in bwrap_argv(_conf(), ["/x"], args_fd=3)] == [
        "--unshare-net"]
    assert [a for a in options if a not in bwrap_options(_conf())] == [str(sock), EGRESS_MOUNT]


def test_confinement_pairs_network_mode_and_egress_socket() -> None:
    with pytest.raises(ValueError, match="egress_socket"):
        _conf(network="confined")
    with pytest.raises(ValueError, match="egress_socket"):
        _conf(egress_socket=Path("/var/tmp/e.sock"))
    with pytest.raises(ValueError, match="egress_socket must be an absolute"):
        _conf(network="confined", egress_socket=Path("e.sock"))


def test_confined_environment_names_the_bridge_as_proxy_in_both_cases() -> None:
    common = {"config_dir": Path("/c"), "log_dir": Path("/l"), "provider_url": "http://h:1",
              "provider_key": None}
    env = session_environment(**common, egress_proxy=BRIDGE_URL)  # type: ignore[arg-type]
    names = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
    assert {n: env[n] for n in names} == dict.fromkeys(names, BRIDGE_URL)
    assert "NO_PROXY" not in env and "no_proxy" not in env
    plain = session_environment(**common)  # type: ignore[arg-type]
    assert not any(n in plain for n in names)
    with pytest.raises(ValueError, match="egress_proxy"):
        session_environment(**common, egress_proxy="")  # type: ignore[arg-type]


def test_the_bridge_step_starts_socat_and_waits_for_its_port_then_execs() -> None:
    command = ["/opt/harness/claude", "-p", "--", "-a task; with $(words) and 'quotes'"]
    argv = session_init_command(command, lifeline=False, bridge=True, port=4321)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3:] == ["headwater-init", *command]
    script = argv[2]
    assert f"TCP-LISTEN:4321,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:{EGRESS_MOUNT}" in script
    assert ":10E1 00000000:0000 0A" in script  # 4321 = 0x10E1, state LISTEN
    assert script.rstrip().endswith('exec "$@"')
    with pytest.raises(ValueError, match="empty"):
        session_init_command([], lifeline=False, bridge=True)


# --- the proxy on its own (real sockets, no sandbox) -----------------------------------------


class Server:
    """A loopback HTTP server that answers every request with ``body`` and counts them."""

    def __init__(self, body: str) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.hits += 1
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.hits = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def provider() -> Iterator[Server]:
    with Server("provider-ok") as server:
        yield server


@pytest.fixture
def repository() -> Iterator[Server]:
    with Server("public-repository-content") as server:
        yield server


async def _ask(sock: Path, request: bytes) -> bytes:
    with anyio.fail_after(10):
        stream = await connect_unix(sock)
        async with stream:
            await stream.send(request)
            return await read_to_the_end(stream)


@pytest.mark.anyio
async def test_proxy_relays_the_provider_and_denies_and_names_the_rest(
    tmp_path: Path, provider: Server, repository: Server
) -> None:
    allowed = Target("127.0.0.1", provider.port)
    async with open_egress_proxy(allowed, root=tmp_path / "egress") as proxy:
        sock = proxy.socket_path
        assert stat.S_IMODE((await anyio.Path(sock).stat()).st_mode) == 0o600
        assert stat.S_IMODE((await anyio.Path(sock.parent).stat()).st_mode) == 0o700
        forward = await _ask(sock, f"GET http://127.0.0.1:{provider.port}/v1 HTTP/1.1\r\n"
                                   f"Host: 127.0.0.1:{provider.port}\r\n\r\n".encode())
        # A tunnel carries TLS to the provider, never plain bytes (sandbox/network/_egress_http.py).
        tunnel = await _ask(sock, f"CONNECT 127.0.0.1:{provider.port} HTTP/1.1\r\n\r\n"
                                  f"GET /v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                                  .encode())
        denied_forward = await _ask(sock, f"GET http://127.0.0.1:{repository.port}/ HTTP/1.1"
                                          f"\r\n\r\n".encode())
        denied_tunnel = await _ask(sock, f"CONNECT 127.0.0.1:{repository.port} HTTP/1.1\r\n\r\n"
                                         .encode())
        by_name = await _ask(sock, f"CONNECT localhost:{provider.port} HTTP/1.1\r\n\r\n".encode())
        malformed = await _ask(sock, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        stats = proxy.stats()
    assert forward.startswith(b"HTTP/1.0 200") and forward.endswith(b"provider-ok")
    assert tunnel == b"HTTP/1.1 200 Connection established\r\n\r\n"  # then closed
    for answer in (denied_forward, denied_tunnel, by_name):
        assert answer.startswith(b"HTTP/1.1 403 Forbidden"), answer
    assert malformed.startswith(b"HTTP/1.1 400 Bad Request")
    assert repository.hits == 0 and provider.hits == 1
    assert stats == EgressStats(
        allowed_target=f"127.0.0.1:{provider.port}", allowed=1, upstream_failures=0,
        denied={f"127.0.0.1:{repository.port}": 2, f"localhost:{provider.port}": 1,
                MALFORMED_NAME: 1, f"127.0.0.1:{provider.port} with bytes that are not TLS": 1},
        most_open=1,
    )
    assert stats.denied_total == 5
    assert not sock.parent.exists()  # removed on exit


@pytest.mark.anyio
async def test_proxy_answers_502_when_the_provider_is_down_and_denies_nothing(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with open_egress_proxy(Target("127.0.0.1", port), root=tmp_path) as proxy:
        answer = await _ask(proxy.socket_path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"
                            .encode())
        stats = proxy.stats()
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway")
    assert (stats.allowed, stats.upstream_failures, stats.denied) == (0, 1, {})


@pytest.mark.anyio
async def test_proxy_is_gone_after_cancellation_with_a_tunnel_open(
    tmp_path: Path, provider: Server
) -> None:
    with anyio.move_on_after(0.5):
        async with open_egress_proxy(Target("127.0.0.1", provider.port), root=tmp_path) as proxy:
            stream = await connect_unix(proxy.socket_path)
            await stream.send(f"CONNECT 127.0.0.1:{provider.port} HTTP/1.1\r\n\r\n".encode())
            await anyio.sleep_forever()
    await stream.aclose()
    assert [p async for p in anyio.Path(tmp_path).iterdir()] == []


@pytest.mark.anyio
async def test_proxy_passes_the_callers_own_error_through_unwrapped(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="mine"):
        async with open_egress_proxy(Target("127.0.0.1", 9), root=tmp_path):
            raise KeyError("mine")


# --- the confined sandbox, real bwrap ---------------------------------------------------------

STAND_IN = r"""
import json, os, socket, subprocess, sys, urllib.error, urllib.request
provider, repo = int(sys.argv[1]), int(sys.argv[2])
out = {"pid": os.getpid(), "ppid": os.getppid()}
def fetch(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/x", timeout=10) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
    except Exception as e:
        return [None, repr(e)]
def direct(host, port):
    try:
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    except OSError as e:
        return f"failed: {e}"
def curl(*args):
    run = subprocess.run(["curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                          *args], capture_output=True, text=True)
    return [run.returncode, run.stdout, run.stderr.strip()]
out["provider_via_proxy"] = fetch(provider)
out["repo_via_proxy"] = fetch(repo)
out["repo_direct"] = direct("127.0.0.1", repo)
out["repo_direct_other_loopback"] = direct("127.0.0.2", repo)
out["provider_direct"] = direct("127.0.0.1", provider)
try:
    out["dns"] = "resolved " + socket.getaddrinfo("public-repository.example", 443)[0][4][0]
except OSError as e:
    out["dns"] = f"failed: {e}"
out["interfaces"] = sorted(name for _, name in socket.if_nameindex())
out["curl_repo"] = curl(f"http://127.0.0.1:{repo}/repo.git")
out["curl_tunnel_provider"] = curl("-p", f"http://127.0.0.1:{provider}/x")
out["curl_tunnel_repo"] = curl("-p", f"http://127.0.0.1:{repo}/repo.git")
print(json.dumps(out))
sys.exit(int(sys.argv[3]))
"""


class FakeResolver:
    """A DNS server on host loopback UDP (port 53 by default) answering A queries with 127.0.0.9.

    Inside the sandbox, ``/etc/resolv.conf`` is replaced (test only) by
    ``nameserver 127.0.0.1``, so a lookup that escapes the namespace lands
    here, on loopback, and would succeed: the test never queries a real resolver.
    """

    def __init__(self, port: int = 53) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind(("127.0.0.1", port))
        except OSError as exc:
            self.sock.close()
            pytest.skip(f"cannot bind the fake resolver to 127.0.0.1:{port}: {exc}")
        self.port = int(self.sock.getsockname()[1])
        self.sock.settimeout(0.1)
        self.queries = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                query, peer = self.sock.recvfrom(512)
            except (TimeoutError, OSError):
                continue
            self.queries += 1
            qend = 12 + query[12:].index(b"\0") + 5
            qtype = struct.unpack("!H", query[qend - 4 : qend - 2])[0]
            answers = 1 if qtype == 1 else 0
            head = query[:2] + b"\x81\x80" + struct.pack("!HHHH", 1, answers, 0, 0)
            body = query[12:qend]
            if answers:
                body += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + bytes([127, 0, 0, 9])
            self.sock.sendto(head + body, peer)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


@pytest.fixture
def resolver() -> Iterator[FakeResolver]:
    fake = FakeResolver()
    yield fake
    fake.close()


def _spec(tmp_path: Path, sock: Path, command: list[str], **changes: Any) -> ConfinedSpec:
    """A confined sandbox (`open_confined`) for ``command``, run as the runner, env PATH only."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    fields: dict[str, Any] = {
        "command": command, "executable": Path(PY), "network": "confined", "egress_socket": sock,
        "env": {"PATH": "/usr/bin:/bin"}, "workspace": ws, "layout": measure_host_layout(),
    }
    fields.update(changes)
    return ConfinedSpec(**fields)


def _with_loopback_resolver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Test only: name a resolver on loopback, so an escaped lookup is seen without leaving it."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")

    def with_resolver(*args: Any, **kwargs: Any) -> list[str]:
        options = bwrap_options(*args, **kwargs)
        i = options.index("--chdir")  # after /etc's bind, which would hide it
        return [*options[:i], "--ro-bind", str(resolv), "/etc/resolv.conf", *options[i:]]

    monkeypatch.setattr(confined_module, "bwrap_options", with_resolver)


def _bridge_processes(port: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if f"TCP-LISTEN:{port},".encode() in cmdline:
                found.append(int(entry.name))
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.bwrap
@pytest.mark.anyio
@pytest.mark.timeout(90)
async def test_confined_sandbox_reaches_only_the_provider_through_the_proxy(
    bwrap: str, tmp_path: Path, provider: Server, repository: Server, resolver: FakeResolver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bridge_port = _free_port()  # unique, so the bridge's processes can be found by cmdline
    env = {"PATH": "/usr/bin:/bin", **dict.fromkeys(
        ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"), f"http://127.0.0.1:{bridge_port}"
    )}
    command = [PY, "-c", STAND_IN, str(provider.port), str(repository.port), "7"]
    allowed = Target("127.0.0.1", provider.port)
    _with_loopback_resolver(monkeypatch, tmp_path)
    async with open_egress_proxy(allowed, root=tmp_path / "eg") as proxy:
        spec = _spec(tmp_path, proxy.socket_path, command, env=env, bridge_port=bridge_port)
        async with open_confined(spec) as sandbox:
            run = await capture(sandbox.child, timeout_s=60)
        stats = proxy.stats()
    assert run.returncode == 7, run.stderr  # the command's own status: it was exec'd
    out = json.loads(run.stdout)
    assert (out["pid"], out["ppid"]) == (2, 1)  # the command took the shell's pid under bwrap
    assert out["interfaces"] == ["lo"]
    assert out["provider_via_proxy"] == [200, "provider-ok"]
    assert out["repo_via_proxy"][0] == 403
    assert out["repo_direct"].startswith("failed:")
    assert out["repo_direct_other_loopback"].startswith("failed:")
    assert out["provider_direct"].startswith("failed:")  # only through the proxy
    assert out["dns"].startswith("failed:") and resolver.queries == 0
    assert out["curl_repo"][:2] == [0, "403"]
    # A tunnel to the provider that carries plain HTTP, not TLS naming it, is closed.
    assert out["curl_tunnel_provider"][0] != 0, out["curl_tunnel_provider"]
    assert out["curl_tunnel_repo"][0] != 0 and "403" in out["curl_tunnel_repo"][2]
    assert repository.hits == 0 and provider.hits == 1
    assert stats.denied == {f"127.0.0.1:{repository.port}": 3,
                            f"127.0.0.1:{provider.port} with bytes that are not TLS": 1}
    assert stats.allowed == 1
    for _ in range(100):  # the pid namespace ends with bwrap's pid 1, a moment after bwrap
        if not _bridge_processes(bridge_port):
            break
        await anyio.sleep(0.02)
    assert _bridge_processes(bridge_port) == []  # socat died with the sandbox


@pytest.mark.bwrap
@pytest.mark.anyio
async def test_bridge_that_cannot_start_ends_the_sandbox_before_the_command(
    bwrap: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ws" / "ran"
    async with open_egress_proxy(Target("127.0.0.1", 9), root=tmp_path / "eg") as proxy:
        spec = _spec(tmp_path, proxy.socket_path, ["/bin/sh", "-c", f"touch {marker}"],
                     socat="/usr/bin/no-socat")  # fmt: skip
        async with open_confined(spec) as sandbox:
            run = await capture(sandbox.child, timeout_s=60)
    assert run.returncode == BRIDGE_FAILED_STATUS
    assert "egress bridge (/usr/bin/no-socat) did not start" in run.stderr
    assert not marker.exists()


@pytest.mark.bwrap
@pytest.mark.timeout(60)
def test_network_preflight_is_ok_on_this_host(bwrap: str, tmp_path: Path) -> None:
    check = network_preflight(bwrap=bwrap, egress_root=tmp_path)
    assert (check.name, check.verdict, check.fix) == ("network", "ok", ""), check
    assert list(tmp_path.iterdir()) == []


@pytest.mark.bwrap
@pytest.mark.timeout(60)
def test_network_preflight_sees_a_namespace_that_is_not_private(
    bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sandbox.network._network as network

    def shared(*args: Any, **kwargs: Any) -> list[str]:
        return [a for a in bwrap_argv(*args, **kwargs) if a != "--unshare-net"]

    monkeypatch.setattr(confined_module, "bwrap_argv", shared)
    port = _free_port()
    monkeypatch.setattr(network, "BRIDGE_PORT", port)  # no clash with anything on host loopback
    check = network.network_preflight(bwrap=bwrap, egress_root=tmp_path)
    assert check.verdict == "broken", check
    assert "not private" in check.detail and "--network host" in check.fix


def test_network_preflight_without_socat_is_broken_with_the_fix() -> None:
    check = network_preflight(socat="/usr/bin/hw-no-such-socat")
    assert check.verdict == "broken"
    assert "apt-get install socat" in check.fix


def test_network_preflight_without_bwrap_is_unverified() -> None:
    check = network_preflight(bwrap="hw-no-such-bwrap")
    assert check.verdict == "unverified"
