"""Who is on the other end of a loopback connection: the owner (uid) of the connecting socket.

A session's gateway listens on host loopback, which any process of the host's network may
reach: with ``--network host`` that includes every other session of the batch. The gateway
takes a connection only from the uids it is given (the session's own user, and the runner,
whose egress proxy connects for a confined session), so another session can neither use up
this session's connection cap nor add to its refusals.

The connecting socket is the one whose own address is the accepted connection's remote
address and whose peer is the gateway. Its owner is asked of the kernel of the runner's
network namespace in one exact lookup (sock_diag(7): a ``SOCK_DIAG_BY_FAMILY`` request that
names the socket's four-tuple), which costs the same however many sockets the host holds;
where netlink does not answer for a connection of the runner's own (`diag_answers`), the
IPv4 TCP table (``/proc/net/tcp``, proc(5)) is read instead.
The owner is the user that created the socket, kept while a process holds it. A socket no
process holds any more has no owner: one in ``TIME_WAIT``, and one its client closed before
the gateway asked (orphaned, in ``FIN_WAIT``: a request sent, then ``close``). The kernel
reports uid 0 for either, which must not read as root's (a root runner's own): such a socket
is known by its inode 0 (no socket file), and has no owner here either.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio
from anyio import TypedAttributeLookupError
from anyio.abc import SocketAttribute

if TYPE_CHECKING:
    from anyio.abc import SocketStream

__all__ = ["FOREIGN_NAME", "TCP_TABLE", "UNKNOWN_OWNER_NAME", "diag_answers", "diag_uid",
           "not_own", "owner_of", "peer_uid"]

FOREIGN_NAME: Final = "connection of another user"
"""The name that counts connections closed unread because their socket's owner is known and
is not one of the gateway's ``peer_uids`` (another session's user, with ``--network host``;
`owner_of`)."""
UNKNOWN_OWNER_NAME: Final = "connection whose owner is unknown"
"""The name that counts connections closed unread because their socket's owner cannot be
read: reset before the gateway asked, closed by its client (orphaned), or in ``TIME_WAIT``
(`owner_of` answers None). A session's own connections that it resets land here, so they
are not told as another user's."""
TCP_TABLE: Final = Path("/proc/net/tcp")
"""The kernel's table of IPv4 TCP sockets of this network namespace (proc(5))."""

_TIME_WAIT: Final = 6
"""The kernel's number for the ``TIME_WAIT`` state (``TCP_TIME_WAIT``), as the table and
sock_diag both give it."""

_NETLINK_SOCK_DIAG: Final = 4
_SOCK_DIAG_BY_FAMILY: Final = 20
_NLM_F_REQUEST: Final = 1
_NLMSG_ERROR: Final = 2
_NO_COOKIE: Final = 0xFFFFFFFF
_HEADER: Final = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST: Final = struct.Struct("=BBBBI")  # inet_diag_req_v2: family, protocol, ext, pad, states
_SOCKID: Final = struct.Struct("!HH16s16s")  # ports, then addresses, network order
_TAIL: Final = struct.Struct("=III")  # interface, cookie (two words)
_STATE_AT: Final = _HEADER.size + 1  # inet_diag_msg: family, state, ...
_UID_AT: Final = _HEADER.size + 4 + _SOCKID.size + _TAIL.size + 12  # after expires, queues
_INODE_AT: Final = _UID_AT + 4


def _hex(address: str, port: int) -> str:
    """``127.0.0.1``, 41523 as the table writes it: ``0100007F:A233`` (the address in the
    host's byte order, the port big-endian)."""
    packed = bytes(int(part) for part in address.split("."))
    return f"{int.from_bytes(packed, sys.byteorder):08X}:{port:04X}"


def diag_uid(local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """The uid owning the socket that connected from ``remote`` to ``local``, asked of the
    kernel by sock_diag(7) (one exact lookup, no table read), or None.

    Args:
        local: The accepted connection's own address, ``(IPv4 text, port)``.
        remote: Its peer's address, the same form.

    Returns:
        The owner's uid; None when no socket is that one (it is gone, or the address is not
        IPv4) or no process holds it (``TIME_WAIT``, or closed by its client: inode 0).

    Raises:
        OSError: netlink's sock_diag cannot be asked here (then read the table: `peer_uid`).
    """
    try:
        source, target = socket.inet_aton(remote[0]), socket.inet_aton(local[0])
    except OSError:
        return None  # not an IPv4 address
    request = (_REQUEST.pack(socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
               + _SOCKID.pack(remote[1], local[1], source.ljust(16, b"\0"),
                              target.ljust(16, b"\0"))
               + _TAIL.pack(0, _NO_COOKIE, _NO_COOKIE))
    header = _HEADER.pack(_HEADER.size + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST,
                          1, 0)  # fmt: skip
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                       _NETLINK_SOCK_DIAG) as link:  # fmt: skip
        link.send(header + request)
        answer = link.recv(8192)
    if len(answer) < _HEADER.size:
        raise OSError(errno.EPROTO, "sock_diag answered nothing")
    kind = _HEADER.unpack_from(answer)[1]
    if kind == _NLMSG_ERROR:
        (code,) = struct.unpack_from("=i", answer, _HEADER.size)
        if -code == errno.ENOENT:
            return None  # no such socket: it is gone
        raise OSError(-code, "sock_diag refused the lookup")
    if kind != _SOCK_DIAG_BY_FAMILY or len(answer) < _INODE_AT + 4:
        raise OSError(errno.EPROTO, "sock_diag answered something else")
    uid, inode = struct.unpack_from("=II", answer, _UID_AT)
    if answer[_STATE_AT] == _TIME_WAIT or inode == 0:
        return None  # no process holds it: the kernel's uid 0 is nobody's
    return int(uid)


def peer_uid(local: tuple[str, int], remote: tuple[str, int], *,
             table: Path = TCP_TABLE) -> int | None:
    """The uid owning the socket that connected from ``remote`` to ``local``, or None, read
    from the kernel's TCP table (the fallback of `diag_uid`, which it answers the same).

    Args:
        local: The accepted connection's own address, ``(IPv4 text, port)``.
        remote: Its peer's address, the same form.
        table: The socket table to read (`TCP_TABLE`; a test gives its own).

    Returns:
        The owner's uid; None when no row is that socket (it is already gone, or not
        IPv4) or no process holds it (``TIME_WAIT``, or closed by its client: inode 0).

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
    # local, remote, st, tx:rx, tr:when, retrnsmt, uid, timeout, inode
    try:
        if int(fields[2], 16) == _TIME_WAIT or int(fields[8]) == 0:
            return None  # no process holds it: the table's uid 0 is nobody's
        return int(fields[6])
    except (IndexError, ValueError):
        return None


@functools.cache
def diag_answers() -> bool:
    """Whether `diag_uid` knows a connection of this process's own: a kernel without its TCP
    diagnostics (``tcp_diag`` not loaded and not loadable) answers every lookup "no such
    socket", which would read as every connection gone. Asked once per process, of a
    loopback connection made for it.
    """
    try:
        with socket.create_server(("127.0.0.1", 0)) as server, \
                socket.create_connection(server.getsockname(), timeout=5.0):
            accepted, remote = server.accept()
            with accepted:
                return diag_uid(accepted.getsockname(), remote) == os.geteuid()
    except OSError:
        return False


async def owner_of(local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """`diag_uid` at once (a lookup that does not block), or, where sock_diag does not answer
    (`diag_answers`), `peer_uid` in a worker thread (a table read that may be long).

    Raises:
        OSError: neither netlink nor the table can be read.
    """
    if diag_answers():
        try:
            return diag_uid(local, remote)
        except OSError:
            pass
    return await anyio.to_thread.run_sync(peer_uid, local, remote)


async def not_own(stream: SocketStream, peer_uids: frozenset[int]) -> str | None:
    """None when the socket that connected ``stream`` is owned by one of ``peer_uids``
    (`owner_of`); otherwise the name its refusal is counted under: `FOREIGN_NAME` for an
    owner that is known and another, `UNKNOWN_OWNER_NAME` for one that cannot be read (the
    connection already gone, reset before it was accepted: its peer's address cannot be
    asked, ``ENOTCONN``; or a socket no process holds)."""
    try:
        local = stream.extra(SocketAttribute.local_address)
        remote = stream.extra(SocketAttribute.remote_address)
    except (TypedAttributeLookupError, OSError):
        return UNKNOWN_OWNER_NAME
    if not isinstance(local, tuple) or not isinstance(remote, tuple):
        return UNKNOWN_OWNER_NAME
    try:
        uid = await owner_of((local[0], local[1]), (remote[0], remote[1]))
    except OSError:
        return UNKNOWN_OWNER_NAME
    if uid is None:
        return UNKNOWN_OWNER_NAME
    return None if uid in peer_uids else FOREIGN_NAME
