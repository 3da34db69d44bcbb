"""Who connected: the owner of the connecting socket, asked of the kernel (sock_diag, or its
TCP table), and a gateway that takes only its own users' connections
(sandbox/gateway/_peer.py; RC-03)."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import sys
import time
from typing import TYPE_CHECKING

import anyio
import httpx
import pytest

from sandbox._config import Credentials
from sandbox.gateway import open_gateway, open_upstream
from sandbox.gateway._peer import (
    FOREIGN_NAME,
    UNKNOWN_OWNER_NAME,
    diag_answers,
    diag_uid,
    owner_of,
    peer_uid,
)

from .conftest import Gate

if TYPE_CHECKING:
    from pathlib import Path

    from .provider import LoopbackProvider

MESSAGES = "/v1/messages?beta=true"


def _hex(address: str, port: int) -> str:
    # proc(5): the IPv4 address as the host's 32-bit number, in hex; the port in hex
    return f"{int.from_bytes(socket.inet_aton(address), sys.byteorder):08X}:{port:04X}"


def table(tmp_path: Path, rows: list[tuple[str, str, int]], state: str = "01") -> Path:
    lines = ["  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
             "   uid  timeout inode"]
    for n, (local, remote, uid) in enumerate(rows):
        lines.append(f"{n:4}: {local} {remote} {state} 00000000:00000000 00:00000000 00000000 "
                     f"{uid:5}        0 {1000 + n} 1 0000000000000000 20 4 30 10 -1")
    path = tmp_path / "tcp"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_owner_is_the_row_of_the_connecting_socket_not_the_accepted_one(
        tmp_path: Path) -> None:
    gateway, client = ("127.0.0.1", 41000), ("127.0.0.1", 52000)
    path = table(tmp_path, [
        (_hex(*gateway), _hex(*client), 0),        # the accepted socket: the runner's
        (_hex(*client), _hex(*gateway), 1234),     # the connecting socket: its owner
        (_hex("127.0.0.1", 52001), _hex(*gateway), 999)])  # another connection
    assert peer_uid(gateway, client, table=path) == 1234
    assert peer_uid(gateway, ("127.0.0.1", 52001), table=path) == 999
    assert peer_uid(gateway, ("127.0.0.1", 52002), table=path) is None  # gone
    assert peer_uid(("::1", 1), ("::1", 2), table=path) is None  # not IPv4


def test_a_socket_in_time_wait_has_no_owner_in_the_table(tmp_path: Path) -> None:
    # proc(5)/tcp_states.h: state 06 is TIME_WAIT, whose uid column the kernel writes as 0
    gateway, client = ("127.0.0.1", 41000), ("127.0.0.1", 52000)
    path = table(tmp_path, [(_hex(*client), _hex(*gateway), 0)], state="06")
    assert peer_uid(gateway, client, table=path) is None


def test_a_real_loopback_connection_is_owned_by_this_process_s_user() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server, \
            socket.create_connection(server.getsockname()) as client:
        accepted, remote = server.accept()
        with accepted:
            assert peer_uid(accepted.getsockname(), remote) == os.getuid()
            assert diag_uid(accepted.getsockname(), remote) == os.getuid()
            assert remote == client.getsockname()
            assert diag_uid(accepted.getsockname(), ("127.0.0.1", 1)) is None  # no such socket
    assert diag_uid(("::1", 1), ("::1", 2)) is None  # not IPv4


def test_a_closed_connection_in_time_wait_has_no_owner_not_root() -> None:
    # the side that closes first keeps TIME_WAIT; the kernel reports its uid as 0, which a
    # runner that is root would otherwise take for its own
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, remote = server.accept()
        local = accepted.getsockname()
        client.close()
        accepted.recv(1)  # the client's FIN has arrived
        accepted.close()
        assert diag_uid(local, remote) is None
        assert peer_uid(local, remote) is None



def test_a_client_that_sent_and_closed_before_the_accept_has_no_owner_not_root() -> None:
    # a client that sends its request and closes its socket before the gateway asks: the
    # socket is orphaned (FIN_WAIT2, no process holds it, inode 0) and the kernel reports its
    # uid as 0 in both sock_diag and the table; with --network host another session's
    # connection made so read as a root runner's own, and was taken
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        client.sendall(b"POST / HTTP/1.1\r\n\r\n")
        client.close()
        accepted, remote = server.accept()
        with accepted:
            local = accepted.getsockname()
            assert diag_uid(local, remote) is None
            assert peer_uid(local, remote) is None

@pytest.mark.anyio
async def test_a_connection_of_another_user_is_closed_unread_and_counted(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    provider.mode = "json"
    others = frozenset({os.getuid() + 4242})  # a user this process is not
    async with open_upstream(provider.url, api_key) as upstream:
        async with open_gateway(upstream, gate, peer_uids=others) as gateway:
            host, port = gateway.base_url.removeprefix("http://").split(":")
            async with await anyio.connect_tcp(host, int(port)) as raw:
                body = b'{"model": "m"}'
                with contextlib.suppress(anyio.BrokenResourceError):
                    await raw.send(b"POST " + MESSAGES.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                                   b"x-api-key: " + gateway.placeholder.encode() + b"\r\n"
                                   b"content-length: %d\r\n\r\n" % len(body) + body)
                answer = b""
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError,
                                         ConnectionResetError):
                    while True:
                        answer += await raw.receive()
            assert answer == b""  # closed without a word
            closed = gateway.stats()
        async with open_gateway(upstream, gate,
                                peer_uids=frozenset({os.getuid()})) as own, \
                httpx.AsyncClient(base_url=own.base_url, trust_env=False,
                                  timeout=10.0) as session:
            answered = await session.post(MESSAGES, json={"model": "m"},
                                          headers={"x-api-key": own.placeholder})
    assert closed.refused == {FOREIGN_NAME: 1}
    assert closed.forwarded == 0
    assert answered.status_code == 200
    assert len(provider.requests) == 1  # only the own user's request reached the provider
    assert [row.refused for row in gate.rows] == [None]  # no row for the closed ones


@pytest.mark.anyio
async def test_without_netlink_the_owner_is_read_from_the_table(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_netlink(*_: object) -> None:
        raise OSError(93, "Protocol not supported")  # EPROTONOSUPPORT: no sock_diag here

    monkeypatch.setattr("sandbox.gateway._peer.diag_uid", no_netlink)
    assert not diag_answers.__wrapped__()
    with socket.create_server(("127.0.0.1", 0)) as server, \
            socket.create_connection(server.getsockname()):
        accepted, remote = server.accept()
        with accepted:
            assert await owner_of(accepted.getsockname(), remote) == os.getuid()


@pytest.mark.anyio
async def test_a_kernel_whose_diag_finds_nothing_is_not_believed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # no tcp_diag: every lookup answers "no such socket", which must not close every
    # connection as gone; the table answers instead
    monkeypatch.setattr("sandbox.gateway._peer.diag_uid", lambda *_: None)
    assert not diag_answers.__wrapped__()
    monkeypatch.setattr("sandbox.gateway._peer.diag_answers", lambda: False)
    with socket.create_server(("127.0.0.1", 0)) as server, \
            socket.create_connection(server.getsockname()):
        accepted, remote = server.accept()
        with accepted:
            assert await owner_of(accepted.getsockname(), remote) == os.getuid()


def test_this_kernel_s_diag_answers() -> None:
    assert diag_answers.__wrapped__()  # where it does not, the table is used: say so here


@pytest.mark.anyio
async def test_a_connection_reset_before_its_owner_is_asked_is_not_taken_and_ends_nothing(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    # a client that connects and resets at once (SO_LINGER 0): by the time the gateway asks
    # who connected, the accepted socket has no peer (getpeername: ENOTCONN); any process of
    # the host's network can do this to any gateway, so it must end only that connection
    provider.mode = "json"
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate, peer_uids=frozenset({os.getuid()})) as gateway:
        host, port = gateway.base_url.removeprefix("http://").split(":")
        for _ in range(RESETS):
            with socket.create_connection((host, int(port))) as raw:
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_ZERO)
        await anyio.sleep(0.5)  # the gateway has accepted each by now
        async with httpx.AsyncClient(base_url=gateway.base_url, trust_env=False,
                                     timeout=10.0) as session:
            answered = await session.post(MESSAGES, json={"model": "m"},
                                          headers={"x-api-key": gateway.placeholder})
        refused = gateway.stats().refused
    assert answered.status_code == 200
    assert gateway.stats().forwarded == 1
    assert [row.refused for row in gate.rows] == [None]  # no row for the reset ones
    # those the gateway accepted after they were gone are counted, but not as another
    # user's: their owner is not known (the runner's own made them)
    assert set(refused) <= {UNKNOWN_OWNER_NAME}, refused


RESETS = 20
LINGER_ZERO = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on, 0 s: ``close`` resets the connection."""


@pytest.mark.skipif(os.geteuid() != 0, reason="a runner that is root: its own uid is 0")
@pytest.mark.anyio
async def test_another_user_s_request_sent_and_closed_before_the_accept_is_not_taken(
        provider: LoopbackProvider, api_key: Credentials, gate: Gate) -> None:
    # with --network host another session (another user) connects, sends a request and
    # closes before the gateway asks who it is: its orphaned socket's uid reads 0, a root
    # runner's own; it must be closed unread, not counted or rowed as this session's
    provider.mode = "json"
    async with open_upstream(provider.url, api_key) as upstream, \
            open_gateway(upstream, gate, peer_uids=frozenset({0, OTHER_UID + 1})) as gateway:
        host, port = gateway.base_url.removeprefix("http://").split(":")
        child = _orphan_of_another_user(host, int(port))
        await anyio.sleep(0.5)  # the gateway has accepted it by now
        stats = gateway.stats()
        _reap(child)
    assert stats.refused == {UNKNOWN_OWNER_NAME: 1}  # its owner can no longer be read
    assert gate.rows == []


OTHER_UID = 54321
"""A user no process of the test is."""
ORPHAN_S = 1.0
"""Seconds the other user's process lives on after it closed its socket."""


def _orphan_of_another_user(host: str, port: int) -> int:
    """Fork a process of `OTHER_UID` that connects to ``host:port``, sends a request with a
    guessed key and closes; return once it has closed (this process, and its event loop,
    held meanwhile: nothing is accepted before), its pid."""
    host.encode("idna")  # the codec, loaded while this process may still read it
    child = os.fork()
    if child == 0:
        try:
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            with socket.create_connection((host, port)) as raw:
                raw.sendall(b"POST " + MESSAGES.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                            b"x-api-key: guess\r\ncontent-length: 0\r\n\r\n")
            time.sleep(ORPHAN_S)  # closed, not exited: the socket goes on to FIN_WAIT2
        finally:
            os._exit(0)
    time.sleep(ORPHAN_S / 2)
    return child


def _reap(child: int) -> None:
    os.waitpid(child, 0)
