"""The egress proxy reaches the provider only as itself, and one session cannot exhaust it.

Rules (sandbox/network/_egress.py, sandbox/network/_egress_http.py): a forwarded request
names the allowed host in its one ``Host`` header and carries one body of its
``Content-Length``, nothing after it; a tunnel starts with a TLS ClientHello
naming the allowed host; each refusal is counted with what was refused. A
session holds at most its cap of connections open at once (one more is
answered 503 and the limit named), and an ``accept`` the runner has no
descriptor for refuses that connection only. The upstream here is a raw TCP
server that keeps every byte it received, so "nothing reached it" is seen,
not assumed.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox.network import connect_unix
from sandbox.network._egress import (
    MALFORMED_NAME,
    MAX_HEAD_BYTES,
    NO_DESCRIPTORS_NAME,
    OVER_CAP_NAME,
    Target,
    open_egress_proxy,
    parse_proxy_request,
)
from sandbox.network._egress_http import NotTLS, refusal, tls_server_name

from .wire import read_to_the_end

pytestmark = [pytest.mark.timeout(30)]


class Upstream:
    """A TCP server on host loopback: answers each connection with a fixed reply once the
    client has sent a blank line (or closed), and keeps every byte it received."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = int(self.sock.getsockname()[1])
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                        data += chunk
                    conn.settimeout(0.3)
                    while chunk := conn.recv(65536):  # whatever else the proxy passes on
                        data += chunk
                except OSError:
                    pass
                self.received.append(data)
                with contextlib.suppress(OSError):
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def wait_for(self, connections: int, timeout: float = 10) -> None:
        """Wait until ``connections`` connections were served (the last may still close)."""
        deadline = time.monotonic() + timeout
        while len(self.received) < connections and time.monotonic() < deadline:
            time.sleep(0.01)

    def __enter__(self) -> Upstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


async def _ask(sock: Path, request: bytes, *, half_close: bool = False) -> bytes:
    with anyio.fail_after(10):
        stream = await connect_unix(sock)
        async with stream:
            await stream.send(request)
            if half_close:
                await stream.send_eof()
            return await read_to_the_end(stream)


async def _ask_in_two(sock: Path, request: bytes, first_bytes: int) -> bytes:
    """Send ``request`` in two pieces, the first read by the proxy on its own."""
    with anyio.fail_after(10):
        stream = await connect_unix(sock)
        async with stream:
            await stream.send(request[:first_bytes])
            await anyio.sleep(0.2)  # the proxy has read the first piece alone
            await stream.send(request[first_bytes:])
            return await read_to_the_end(stream)


def _hello(server_hostname: str | None) -> bytes:
    """A genuine first TLS record, as Python's TLS client sends it."""
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


# --- what a request may not do (pure) ----------------------------------------------------------

ALLOWED = Target("127.0.0.1", 8080)


@pytest.mark.parametrize(
    ("head", "refused"),
    [
        (b"POST http://127.0.0.1:8080/v1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
         b"Content-Length: 2\r\n\r\n", None),
        (b"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: EVIL.example\r\n\r\n",
         "127.0.0.1:8080 with Host EVIL.example"),
        (b"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
         "127.0.0.1:8080 with Host 127.0.0.1"),  # no port: 80, not the provider's 8080
        (b"GET http://127.0.0.1:8080/ HTTP/1.1\r\n\r\n", "127.0.0.1:8080 with no Host"),
        (b"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nhost: evil\r\n\r\n",
         "127.0.0.1:8080 with several Host headers"),
        (b"POST http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n",
         "127.0.0.1:8080 with a body not of one Content-Length"),
        (b"POST http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
         b"Content-Length: 2\r\nContent-Length: 9\r\n\r\n",
         "127.0.0.1:8080 with a body not of one Content-Length"),
        (b"CONNECT 127.0.0.1:8080 HTTP/1.1\r\nHost: evil:443\r\n\r\n",
         "127.0.0.1:8080 with Host evil:443"),
        (b"CONNECT 127.0.0.1:8080 HTTP/1.1\r\n\r\n", None),
        (b"GET http://10.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n", "10.0.0.1:8080"),
    ],
    ids=["ok", "spoofed", "portless", "no-host", "two-hosts", "chunked", "two-lengths",
         "connect-host", "connect-ok", "other-target"],
)
def test_a_request_passes_only_to_the_provider_as_itself(head: bytes, refused: str | None) -> None:
    assert refusal(parse_proxy_request(head), ALLOWED) == refused


def test_a_default_port_may_be_left_out_of_host() -> None:
    head = b"GET http://api.example/ HTTP/1.1\r\nHost: API.example\r\n\r\n"
    assert refusal(parse_proxy_request(head), Target("api.example", 80)) is None


def test_what_a_denial_names_of_the_sessions_values_is_cut_to_80_characters() -> None:
    long_host = "h" * 200 + ".example"
    spoofed = f"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: {long_host}\r\n\r\n".encode()
    assert refusal(parse_proxy_request(spoofed), ALLOWED) == "127.0.0.1:8080 with Host " + "h" * 80
    for head in (f"CONNECT {long_host}:443 HTTP/1.1\r\n\r\n".encode(),
                 f"GET http://{long_host}:8080/ HTTP/1.1\r\nHost: x\r\n\r\n".encode()):
        port = 443 if head.startswith(b"CONNECT") else 8080
        assert refusal(parse_proxy_request(head), ALLOWED) == "h" * 80 + f":{port}"


def test_the_server_name_of_a_genuine_client_hello_is_read() -> None:
    assert tls_server_name(_hello("api.anthropic.com")) == "api.anthropic.com"
    assert tls_server_name(_hello(None)) is None  # no name (an address)


@pytest.mark.parametrize("data", [b"GET / HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x00", b""])
def test_bytes_that_are_not_a_client_hello_are_not_tls(data: bytes) -> None:
    with pytest.raises(NotTLS):
        tls_server_name(data)


def test_a_client_hello_cut_short_is_not_tls() -> None:
    hello = _hello("api.anthropic.com")
    with pytest.raises(NotTLS):
        tls_server_name(hello[: len(hello) // 2])


# --- the proxy ---------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_a_spoofed_host_and_bytes_after_the_request_never_reach_the_provider(
        tmp_path: Path, upstream: Upstream) -> None:
    port = upstream.port
    async with open_egress_proxy(Target("127.0.0.1", port), root=tmp_path) as proxy:
        spoofed = await _ask(proxy.socket_path, f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n"
                             "Host: evil.example\r\n\r\n".encode())  # fmt: skip
        smuggled = await _ask(proxy.socket_path, (
            f"POST http://127.0.0.1:{port}/v1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Length: 5\r\n\r\nhello"
            "GET /secret HTTP/1.1\r\nHost: evil.example\r\n\r\n").encode())
        honest = await _ask(proxy.socket_path, (
            f"POST http://127.0.0.1:{port}/v1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Length: 5\r\n\r\nhello").encode(), half_close=True)
        stats = proxy.stats()
    assert spoofed.startswith(b"HTTP/1.1 403 Forbidden")
    assert honest.endswith(b"ok")
    received = b"".join(upstream.received)
    assert b"evil.example" not in received and b"/secret" not in received
    assert received.count(b"hello") == 2 and smuggled in (b"", b"HTTP/1.0 200 OK\r\n"
                                                          b"Content-Length: 2\r\n\r\nok")
    assert stats.denied == {f"127.0.0.1:{port} with Host evil.example": 1,
                            f"127.0.0.1:{port} with bytes after its request": 1}


@pytest.mark.anyio
async def test_a_head_over_its_bound_is_refused_however_it_arrives(tmp_path: Path,
                                                                   upstream: Upstream) -> None:
    """A head (through its blank line) of more than MAX_HEAD_BYTES is a 400, also when a first
    piece under the bound arrived alone and the rest came in one more read; one of exactly
    the bound is relayed."""
    port = upstream.port

    def head(size: int) -> bytes:
        start = f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: "
        return start.encode() + b"a" * (size - len(start) - 4) + b"\r\n\r\n"

    async with open_egress_proxy(Target("127.0.0.1", port), root=tmp_path) as proxy:
        over = await _ask_in_two(proxy.socket_path, head(MAX_HEAD_BYTES + 1), 60_000)
        at_bound = await _ask(proxy.socket_path, head(MAX_HEAD_BYTES), half_close=True)
        stats = proxy.stats()
    upstream.wait_for(1)
    assert over.startswith(b"HTTP/1.1 400 Bad Request")
    assert at_bound.endswith(b"ok")
    assert stats.denied == {MALFORMED_NAME: 1} and stats.allowed == 1
    assert len(upstream.received) == 1  # the head over its bound never reached it


@pytest.mark.anyio
async def test_a_tunnel_passes_only_tls_naming_the_provider(tmp_path: Path,
                                                            upstream: Upstream) -> None:
    port = upstream.port
    connect = f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode()
    async with open_egress_proxy(Target("localhost", port), root=tmp_path) as proxy:
        right = await _ask(proxy.socket_path, connect + _hello("localhost"), half_close=True)
        other = await _ask(proxy.socket_path, connect + _hello("evil.example"))
        plain = await _ask(proxy.socket_path, connect + b"GET / HTTP/1.1\r\nHost: evil\r\n\r\n")
        stats = proxy.stats()
    upstream.wait_for(3)
    established = b"HTTP/1.1 200 Connection established\r\n\r\n"
    assert right.startswith(established) and right.endswith(b"ok")
    assert other == established and plain == established  # then closed, nothing relayed
    # the refused tunnels' upstream connections closed having had no byte
    assert sorted(upstream.received, key=len)[:2] == [b"", b""]
    assert len(upstream.received) == 3 and b"localhost" in max(upstream.received, key=len)
    assert stats.allowed == 1
    assert stats.denied == {f"localhost:{port} with TLS name evil.example": 1,
                            f"localhost:{port} with bytes that are not TLS": 1}


@pytest.mark.anyio
async def test_a_tunnel_to_a_name_needs_its_tls_name_which_a_denial_cuts_to_80(
        tmp_path: Path, upstream: Upstream) -> None:
    port = upstream.port
    connect = f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode()
    long_name = "a" * 60 + "." + "b" * 60 + ".example"
    async with open_egress_proxy(Target("localhost", port), root=tmp_path) as proxy:
        nameless = await _ask(proxy.socket_path, connect + _hello(None))
        long = await _ask(proxy.socket_path, connect + _hello(long_name))
        stats = proxy.stats()
    upstream.wait_for(2)
    established = b"HTTP/1.1 200 Connection established\r\n\r\n"
    assert nameless == established and long == established  # then closed, nothing relayed
    assert upstream.received == [b"", b""] and stats.allowed == 0
    assert stats.denied == {f"localhost:{port} with no TLS server name": 1,
                            f"localhost:{port} with TLS name {long_name[:80]}": 1}


@pytest.mark.anyio
async def test_one_connection_past_the_cap_is_refused_and_names_the_limit(tmp_path: Path) -> None:
    async with open_egress_proxy(Target("127.0.0.1", 9), root=tmp_path,
                                 max_connections=3) as proxy:  # fmt: skip
        held = [await connect_unix(proxy.socket_path) for _ in range(3)]
        await anyio.sleep(0.2)  # each is being served (waiting for its head)
        assert proxy.limit_hit() is None
        refused = await _ask(proxy.socket_path, b"")
        hit = proxy.limit_hit()
        stats = proxy.stats()
        for stream in held:
            await stream.aclose()
    assert refused.startswith(b"HTTP/1.1 503 Service Unavailable")
    assert hit is not None and hit.limit == "connections"
    assert "more than 3 connections at once" in hit.detail
    assert stats.denied == {OVER_CAP_NAME: 1} and stats.most_open == 3


@pytest.mark.anyio
async def test_a_runner_out_of_descriptors_refuses_that_connection_only(
        tmp_path: Path, upstream: Upstream) -> None:
    """EMFILE at accept refuses the connection waiting; the proxy (and the batch) go on."""
    port = upstream.port
    async with open_egress_proxy(Target("127.0.0.1", port), root=tmp_path) as proxy:
        clients = [socket.socket(socket.AF_UNIX) for _ in range(12)]  # made while fds last
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
        fillers = []  # every lower number taken, so that exactly 3 are left under the limit
        while (fd := os.open(os.devnull, os.O_RDONLY)) < highest:
            fillers.append(fd)
        fillers.append(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd + 4, hard))
        try:
            for client in clients:  # more than the runner has left: some accepts get EMFILE
                client.connect(str(proxy.socket_path))
            await anyio.sleep(0.5)
        finally:
            for client in clients:
                client.close()
            for fd in fillers:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        await anyio.sleep(0.2)
        after = await _ask(proxy.socket_path, (
            f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").encode(),
            half_close=True)  # fmt: skip
        stats = proxy.stats()
    assert stats.denied.get(NO_DESCRIPTORS_NAME, 0) >= 1, stats
    assert after.endswith(b"ok")  # the proxy still serves
