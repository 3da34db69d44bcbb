"""Unix sockets at any path length: a deep batch or test directory passes the 107 bytes
a socket address holds, and the egress proxy must still listen there."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import pytest

from sandbox.network import UNIX_PATH_MAX, connect_unix, listen_unix
from sandbox.network._egress import Target, open_egress_proxy


def _deep(tmp_path: Path) -> Path:
    directory = tmp_path / ("d" * 60) / ("e" * 60)
    directory.mkdir(parents=True)
    return directory


@pytest.mark.anyio
async def test_a_socket_past_the_address_limit_is_bound_reached_and_given_its_mode(
        tmp_path: Path) -> None:
    path = _deep(tmp_path) / "s.sock"
    assert len(str(path)) > UNIX_PATH_MAX + 1  # the kernel's limit, with its NUL
    listener = await listen_unix(path, mode=0o600)
    async with listener, anyio.create_task_group() as tg:
        async def echo_once() -> None:
            stream = await listener.accept()
            async with stream:
                await stream.send(await stream.receive())
        tg.start_soon(echo_once)
        with anyio.fail_after(10):
            stream = await connect_unix(path)
            async with stream:
                await stream.send(b"ping")
                assert await stream.receive() == b"ping"
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.anyio
async def test_a_short_path_is_bound_by_its_own_name(tmp_path: Path) -> None:
    path = Path("/tmp") / f"hw-unix-{tmp_path.name[:20]}.sock"
    path.unlink(missing_ok=True)
    try:
        listener = await listen_unix(path)
        async with listener:
            assert listener.extra(anyio.abc.SocketAttribute.local_address) == str(path)
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.anyio
async def test_a_taken_name_and_a_name_too_long_on_its_own_are_errors(tmp_path: Path) -> None:
    path = _deep(tmp_path) / "s.sock"
    async with await listen_unix(path):
        with pytest.raises(OSError):
            await listen_unix(path)
    with pytest.raises(OSError):
        await listen_unix(tmp_path / ("n" * 120))
    with pytest.raises(OSError):
        await connect_unix(_deep(tmp_path / "x") / "nothing.sock")


@pytest.mark.anyio
async def test_the_egress_proxy_listens_under_a_root_deeper_than_a_socket_address(
        tmp_path: Path) -> None:
    async with open_egress_proxy(Target("127.0.0.1", 9), root=_deep(tmp_path)) as proxy:
        assert len(str(proxy.socket_path)) > UNIX_PATH_MAX
        with anyio.fail_after(10):
            stream = await connect_unix(proxy.socket_path)
            async with stream:
                await stream.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                assert (await stream.receive()).startswith(b"HTTP/1.1 400")
