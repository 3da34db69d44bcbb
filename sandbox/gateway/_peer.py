"""Who is on the other end of a loopback connection: the owner (uid) of the connecting socket.

A session's gateway listens on host loopback, which any process of the host's network may
reach: with ``--network host`` that includes every other session of the batch. The gateway
takes a connection only from the uids it is given (the session's own user, and the runner,
whose egress proxy connects for a confined session), so another session can neither use up
this session's connection cap nor add to its refusals.

The owner is read from the kernel's table of the runner's network namespace's TCP sockets
(``/proc/net/tcp``, IPv4: the gateway listens on ``127.0.0.1`` only): the connecting socket
is the row whose local address is the connection's remote one and whose remote address is
the gateway's. Its ``uid`` is the user that created the socket, kept while the socket lives
(a client that sent its request and closed is still in ``FIN_WAIT``, its uid kept).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

__all__ = ["TCP_TABLE", "peer_uid"]

TCP_TABLE: Final = Path("/proc/net/tcp")
"""The kernel's table of IPv4 TCP sockets of this network namespace (proc(5))."""


def _hex(address: str, port: int) -> str:
    """``127.0.0.1``, 41523 as the table writes it: ``0100007F:A233`` (the address in the
    host's byte order, the port big-endian)."""
    packed = bytes(int(part) for part in address.split("."))
    return f"{int.from_bytes(packed, sys.byteorder):08X}:{port:04X}"


def peer_uid(local: tuple[str, int], remote: tuple[str, int], *,
             table: Path = TCP_TABLE) -> int | None:
    """The uid owning the socket that connected from ``remote`` to ``local``, or None.

    Args:
        local: The accepted connection's own address, ``(IPv4 text, port)``.
        remote: Its peer's address, the same form.
        table: The socket table to read (`TCP_TABLE`; a test gives its own).

    Returns:
        The owner's uid; None when no row is that socket (it is already gone, or not IPv4).

    Raises:
        OSError: the table cannot be read (no ``/proc``).
    """
    try:
        needle = f" {_hex(*remote)} {_hex(*local)} "
    except ValueError:
        return None  # not an IPv4 address
    text = table.read_text(encoding="ascii", errors="replace")
    at = text.find(needle)
    if at < 0:
        return None
    end = text.find("\n", at)
    fields = text[at:end if end >= 0 else len(text)].split()
    # local, remote, st, tx:rx, tr:when, retrnsmt, uid
    try:
        return int(fields[6])
    except (IndexError, ValueError):
        return None
