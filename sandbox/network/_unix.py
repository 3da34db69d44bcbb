"""Unix sockets at paths longer than a socket address may be.

A socket address (``sockaddr_un.sun_path``) holds 107 bytes and a NUL; a
path longer than that cannot be bound or reached by name. Both functions
here then name the socket through its directory instead: the directory is
opened (``O_PATH``) and the socket named ``/proc/self/fd/<fd>/<name>``, which
the kernel resolves like any path, so only the file's own name must fit.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import SocketListener, UNIXSocketStream

__all__ = ["UNIX_PATH_MAX", "connect_unix", "listen_unix"]

UNIX_PATH_MAX: Final = 107
"""Most bytes of a path a socket address holds (``sun_path`` is 108 with its NUL)."""


async def listen_unix(path: Path, *, mode: int = 0o600, backlog: int = 128) -> SocketListener:
    """Bind and listen on a new Unix stream socket at ``path``, of any length.

    Args:
        path: Where the socket goes; its directory must exist and the name not.
            Only ``path.name`` must fit a socket address when the whole does not.
        mode: The socket file's permission bits, set before the first accept.
        backlog: Connections the kernel queues before they are accepted.

    Returns:
        The listener (anyio's; closing it closes the socket, not the file).

    Raises:
        OSError: the socket cannot be made or bound (``EADDRINUSE`` when the
            name is taken, ``ENAMETOOLONG`` when even the name alone is too long).
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        await anyio.to_thread.run_sync(_through_directory, path, sock.bind)
        os.chmod(path, mode)
        sock.listen(backlog)
        sock.setblocking(False)
        return await SocketListener.from_socket(sock)
    except BaseException:
        sock.close()
        raise


async def connect_unix(path: Path) -> UNIXSocketStream:
    """Connect to the Unix stream socket at ``path``, of any length.

    Returns:
        The connected stream.

    Raises:
        OSError: nothing listens there (``ECONNREFUSED``, ``ENOENT``), or the
            socket's mode refuses the caller (``EACCES``).
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        await anyio.to_thread.run_sync(_through_directory, path, sock.connect)
        sock.setblocking(False)
        return await UNIXSocketStream.from_socket(sock)
    except BaseException:
        sock.close()
        raise


def _through_directory(path: Path, act: Callable[[str], None]) -> None:
    """Call ``act`` (a socket's bind or connect) with an address that names ``path``."""
    if len(os.fsencode(path)) <= UNIX_PATH_MAX:
        act(os.fspath(path))
        return
    directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        act(f"/proc/self/fd/{directory}/{path.name}")
    finally:
        os.close(directory)
