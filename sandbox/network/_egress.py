"""The egress proxy: the one way out of a confined session's network namespace.

A session under ``--network confined`` has only a loopback interface. A
bridge inside the sandbox (Debian's ``socat``, see `sandbox.network._network`)
forwards a loopback port to a Unix socket bound into the sandbox (RC-02's
"egress socket"); this proxy listens on that socket, **outside** the
sandbox, in the runner's own event loop. It speaks the two forms an HTTP
client uses with ``HTTPS_PROXY``/``HTTP_PROXY``:

* ``CONNECT host:port`` (a tunnel; what a client does for an ``https://`` URL),
* an absolute-URI request ``METHOD http://host:port/path HTTP/1.1`` (plain
  HTTP forwarding; what the pinned CLI 2.1.197 does for an ``http://`` base
  URL, loopback included: measured, it does not bypass the proxy for
  ``127.0.0.1``).

Exactly one ``host:port`` is allowed, the provider's (compared after
lower-casing the host; ``localhost`` is not ``127.0.0.1``), and only *as*
that host: a forwarded request's ``Host`` header and a tunnel's TLS server
name must name it too, and a forwarded request carries one body of its
``Content-Length`` and nothing after it (`sandbox.network._egress_http`). Everything
else is answered ``403 Forbidden`` (a tunnel whose first bytes are refused is
closed) and **counted and named** (``host:port``, or what was refused of a
request to it: ``127.0.0.1:8080 with Host evil.example``), so the
transcript's prose can list every denied connection; a request that is not a
proxy request at all gets ``400`` and is counted as `MALFORMED_NAME`. Names
are resolved here, outside the sandbox, so the session needs no resolver
(and has none).

The runner's descriptors are shared by every session, so one session may
hold at most ``max_connections`` connections open at once (each costs the
runner two descriptors: the client's and the upstream's): one more is
answered ``503`` and counted (`OVER_CAP_NAME`), and `EgressProxy.limit_hit`
then names the limit, for the sandbox's watch to end the session
``limit-exceeded``. An ``accept`` that fails for want of descriptors
(EMFILE, ENFILE: the runner as a whole is out of them) refuses that one
connection (a descriptor kept in reserve is freed to accept and close it,
counted as `NO_DESCRIPTORS_NAME`) and the proxy goes on; it never takes the
batch down.

Why this is written here and not taken from Debian: the well-kept
allowlisting proxies (tinyproxy, squid) listen on TCP only, so each would
need a second socat outside to reach a Unix socket, plus a config file, a
daemon and its privilege drop per session, and they report denials only in
log lines that the runner would have to parse back into per-session counts.
What is needed is small (one allowed target, two request forms, a byte
relay) and the per-session count is first-class here: one proxy per session,
so every denial belongs to exactly one session without any attribution step.

What this proxy does not do: TLS (a CONNECT tunnel is relayed opaquely once
its ClientHello names the allowed host), authentication, caching. A
forwarded plain-HTTP request is sent upstream with ``Connection: close``, so
one client connection carries one request and cannot be reused for another
host; a tunnel carries whatever the client sends inside its TLS, but only
ever to the allowed target.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import tempfile
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import anyio
from anyio.abc import SocketAttribute
from anyio.streams.buffered import BufferedByteReceiveStream

from .._groups import single_unwrapped
from .._owner import TAG, runner_gone, runner_tag
from .._roots import usable_root
from ..cgroup import LimitHit
from ._egress_http import MAX_RECORD_BYTES as MAX_RECORD_BYTES
from ._egress_http import SHOWN_CHARS, NotTLS, is_address, refusal, tls_server_name
from ._egress_http import BadProxyRequest as BadProxyRequest
from ._egress_http import ProxyRequest as ProxyRequest
from ._egress_http import Target as Target
from ._egress_http import parse_proxy_request as parse_proxy_request
from ._egress_http import target_of_url as target_of_url
from ._egress_relay import answer, forward_once, splice
from ._unix import listen_unix

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from anyio.abc import ByteStream, SocketListener

EGRESS_ROOT: Final = Path("/var/tmp/headwater-campaign/egress")
"""Where per-session socket directories live (short: a socket path has at most 107 bytes)."""
MAX_HEAD_BYTES: Final = 64 * 1024
"""Largest request head (request line, headers, blank line) the proxy takes; more is a 400.

``receive_until``'s bound is on what it buffers before it reads again, so a head whose
last piece comes in one more read may pass it: the head's own length is checked too."""
HEAD_TIMEOUT_S: Final = 30.0
"""Seconds a client has to send its whole request head (or a tunnel's first record)."""
CONNECT_TIMEOUT_S: Final = 30.0
"""Seconds to resolve and connect to the allowed target before answering 502."""
MAX_DENIED_NAMES: Final = 100
"""Distinct denied names kept per session; further ones are counted under `OTHER_NAME`."""
MALFORMED_NAME: Final = "(not a proxy request)"
"""The name a denial gets when the request named no ``host:port``."""
OTHER_NAME: Final = "(further hosts)"
"""The name that collects denials past `MAX_DENIED_NAMES` distinct names."""
OVER_CAP_NAME: Final = "(connections over the session's cap)"
"""The name of a connection refused because the session had its cap open already."""
NO_DESCRIPTORS_NAME: Final = "(refused: the runner was out of descriptors)"
"""The name of a connection refused because the runner could not accept it (EMFILE)."""
ACCEPT_RETRY_S: Final = 0.05
"""Pause after a refused accept, so a runner out of descriptors does not spin."""
logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EgressStats:
    """What one session's proxy saw: a frozen snapshot.

    Attributes:
        allowed_target: The one ``host:port`` that was allowed.
        allowed: Connections relayed to it (tunnels and forwarded requests).
        denied: Denied ``host:port`` (or `MALFORMED_NAME`, or what was refused of
            a request to the allowed target) -> count.
        upstream_failures: Allowed connections whose upstream could not be
            reached (answered 502; not denials).
        most_open: The most connections the session held open at once.
    """

    allowed_target: str
    allowed: int
    denied: dict[str, int]
    upstream_failures: int
    most_open: int = 0

    @property
    def denied_total(self) -> int:
        """Every denied connection, named or not."""
        return sum(self.denied.values())

    def as_record(self) -> dict[str, object]:
        """The JSON-able form kept in the ledger's final record (``egress`` key)."""
        return {
            "allowed_target": self.allowed_target,
            "allowed": self.allowed,
            "denied": dict(sorted(self.denied.items())),
            "upstream_failures": self.upstream_failures,
            "most_open": self.most_open,
        }


@final
class EgressProxy:
    """A running egress proxy for one session; built by `open_egress_proxy`.

    Args:
        allowed: The provider's ``host:port``.
        socket_path: Its Unix socket.
        max_connections: Most connections open at once (None: no cap).
    """

    def __init__(self, allowed: Target, socket_path: Path,
                 max_connections: int | None = None) -> None:
        self.allowed = allowed
        self.socket_path = socket_path
        self.max_connections = max_connections
        self._allowed_count = 0
        self._upstream_failures = 0
        self._denied: Counter[str] = Counter()
        self._open = 0
        self._most_open = 0
        self._cap_hit: LimitHit | None = None

    def __repr__(self) -> str:
        return (
            f"<EgressProxy {self.socket_path} allows {self.allowed} "
            f"denied={sum(self._denied.values())}>"
        )

    def stats(self) -> EgressStats:
        """A snapshot of the counts so far (final once the session's harness has exited)."""
        return EgressStats(
            allowed_target=str(self.allowed),
            allowed=self._allowed_count,
            denied=dict(self._denied),
            upstream_failures=self._upstream_failures,
            most_open=self._most_open,
        )

    def limit_hit(self) -> LimitHit | None:
        """The connection cap, once the session passed it (a `ConfinedSpec.limit_checks` check)."""
        return self._cap_hit

    def _deny(self, name: str) -> None:
        if name in self._denied or len(self._denied) < MAX_DENIED_NAMES:
            self._denied[name] += 1
        else:
            self._denied[OTHER_NAME] += 1

    async def serve(self, listener: SocketListener) -> None:
        """Accept connections until cancelled, each served in its own task.

        An accept that fails for want of descriptors refuses that one
        connection (module docstring); any other failure of the listener is raised.
        """
        reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            async with anyio.create_task_group() as tg:
                while True:
                    try:
                        client = await listener.accept()
                    except anyio.BrokenResourceError as exc:
                        cause = exc.__cause__
                        if not (isinstance(cause, OSError)
                                and cause.errno in (errno.EMFILE, errno.ENFILE)):  # fmt: skip
                            raise
                        os.close(reserve)
                        self._refuse_pending(listener)
                        reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                        await anyio.sleep(ACCEPT_RETRY_S)
                        continue
                    tg.start_soon(self.handle, client)
        finally:
            with contextlib.suppress(OSError):
                os.close(reserve)

    def _refuse_pending(self, listener: SocketListener) -> None:
        """With the reserve descriptor freed: accept the waiting connection and close it."""
        raw = listener.extra(SocketAttribute.raw_socket)
        with contextlib.suppress(OSError):
            conn, _ = raw.accept()
            conn.close()
            self._deny(NO_DESCRIPTORS_NAME)

    async def handle(self, client: ByteStream) -> None:
        """Serve one client connection to its end. Never raises for a client's fault."""
        async with client:
            if self.max_connections is not None and self._open >= self.max_connections:
                self._deny(OVER_CAP_NAME)
                self._cap_hit = self._cap_hit or LimitHit(
                    "connections", f"the session opened more than {self.max_connections} "
                    "connections at once through the egress proxy")  # fmt: skip
                await answer(client, 503, f"more than {self.max_connections} connections at "
                              "once: the session's cap")  # fmt: skip
                return
            self._open += 1
            self._most_open = max(self._most_open, self._open)
            try:
                await self._exchange(client)
            except Exception:  # one connection's failure never ends the proxy (or the batch)
                logger.exception("egress proxy %s: a connection failed", self.socket_path)
            finally:
                self._open -= 1

    async def _exchange(self, client: ByteStream) -> None:
        reader = BufferedByteReceiveStream(client)
        head: bytes | None = None
        with anyio.move_on_after(HEAD_TIMEOUT_S), contextlib.suppress(Exception):
            head = await reader.receive_until(b"\r\n\r\n", MAX_HEAD_BYTES) + b"\r\n\r\n"
        if head is None or len(head) > MAX_HEAD_BYTES:
            self._deny(MALFORMED_NAME)
            await answer(client, 400, f"no complete request head in {MAX_HEAD_BYTES} bytes")
            return
        try:
            request = parse_proxy_request(head)
        except BadProxyRequest as exc:
            self._deny(MALFORMED_NAME)
            await answer(client, 400, exc.reason)
            return
        refused = refusal(request, self.allowed)
        if refused is not None:
            self._deny(refused)
            await answer(client, 403, f"{refused}: only the provider ({self.allowed}), as "
                          "itself")  # fmt: skip
            return
        await self._relay(client, reader, request)

    async def _relay(
        self, client: ByteStream, reader: BufferedByteReceiveStream, request: ProxyRequest
    ) -> None:
        """Connect the allowed target (502 when it cannot be reached), then relay: a tunnel's
        first record only once it is a ClientHello naming the target, a forwarded request
        once, with its body."""
        upstream: ByteStream | None = None
        with anyio.move_on_after(CONNECT_TIMEOUT_S), contextlib.suppress(OSError):
            upstream = await anyio.connect_tcp(request.target.host, request.target.port)
        if upstream is None:
            self._upstream_failures += 1
            await answer(client, 502, f"cannot reach {request.target}")
            return
        async with upstream:
            try:
                if request.kind == "connect":
                    await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    first = await self._client_hello(reader, request.target)
                    if first is None:
                        return  # refused: the upstream connection closes having had no byte
                    self._allowed_count += 1
                    await upstream.send(first)
                    await splice(reader, client, upstream)
                else:
                    self._allowed_count += 1
                    await upstream.send(request.upstream_head)
                    await forward_once(reader, client, upstream, request.content_length or 0,
                                        lambda: self._deny(f"{request.target} with bytes after "
                                                           "its request"))  # fmt: skip
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream,
                    OSError):  # fmt: skip
                return

    async def _client_hello(self, reader: BufferedByteReceiveStream,
                            target: Target) -> bytes | None:
        """A tunnel's first record, when it is a ClientHello naming the allowed host; else the
        refusal is counted and None returned (the caller closes the tunnel)."""
        record = b""
        with anyio.move_on_after(HEAD_TIMEOUT_S), contextlib.suppress(Exception):
            record = await reader.receive_exactly(5)
            size = int.from_bytes(record[3:5], "big")
            if record[0] == 0x16 and 5 + size <= MAX_RECORD_BYTES:
                record += await reader.receive_exactly(size)
        try:
            name = tls_server_name(record)
        except NotTLS:
            self._deny(f"{target} with bytes that are not TLS")
            return None
        if name is None and not is_address(target.host):
            self._deny(f"{target} with no TLS server name")
            return None
        if name is not None and name != target.host:
            self._deny(f"{target} with TLS name {name[:SHOWN_CHARS]}")
            return None
        return record


@asynccontextmanager
async def open_egress_proxy(
    allowed: Target, *, root: Path = EGRESS_ROOT, owner: tuple[int, int] | None = None,
    max_connections: int | None = None, directory: Path | None = None,
) -> AsyncIterator[EgressProxy]:
    """Listen on a new Unix socket that relays to ``allowed`` only; remove it on exit.

    The socket is ``<root>/<pid>-<random>/egress.sock``: the directory 0700
    and the socket 0600, owned by ``owner`` (uid, gid) when given (the user
    bwrap runs as, if that is not the runner's), so no other local user can
    use it. Directories left by a runner that was killed are removed here
    when their pid is no longer alive.

    **Cancellation:** on exit, however it comes, the listener and every open
    relay are cancelled and the directory removed; no task outlives the block.

    Args:
        allowed: The provider's ``host:port`` (`target_of_url`).
        root: Parent of the socket directories; `EGRESS_ROOT` in production.
        owner: ``(uid, gid)`` for the directory and socket, or None for the runner's.
        max_connections: Most connections the session may hold open at once
            (`sandbox.cgroup._limits.Limits.connections`); None is no cap.
        directory: Make the socket's directory exactly here instead (0700; it must
            not exist): a session's in its own store, whose mounts show no host path
            (RC-02 blind sessions); ``root`` is then unused.

    Yields:
        The proxy; read `EgressProxy.stats` after the session's harness exited.

    Raises:
        OSError: the directory or socket cannot be created.
    """
    if directory is None:
        directory = await anyio.to_thread.run_sync(_new_socket_dir, root)
    else:
        directory.mkdir(mode=0o700)
    try:
        path = directory / "egress.sock"
        listener = await listen_unix(path, mode=0o600)  # a deep root passes 107 bytes
        if owner is not None:
            os.chown(directory, *owner)
            os.chown(path, *owner)
        proxy = EgressProxy(allowed, path, max_connections)
        with single_unwrapped():  # handlers never raise: a group of one is the caller's
            async with listener, anyio.create_task_group() as tg:
                tg.start_soon(proxy.serve, listener)
                try:
                    yield proxy
                finally:
                    tg.cancel_scope.cancel()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _new_socket_dir(root: Path) -> Path:
    root = usable_root(root, root.name)  # another user's root: the runner's own
    root.mkdir(parents=True, exist_ok=True)
    _sweep(root)
    return Path(tempfile.mkdtemp(prefix=f"{runner_tag()}-", dir=root))


def _sweep(root: Path) -> None:
    """Remove socket directories whose runner is known dead (left by a killed runner).

    Named ``<runner tag>-<random>`` (an older runner's ``<pid>-<random>``); a runner of
    another pid namespace is not known dead (`sandbox._owner.runner_gone`): its directory
    is left."""
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            tag = entry.name.split("-", 1)[0]
            if TAG.fullmatch(tag) and runner_gone(tag, entry=str(entry)):
                shutil.rmtree(entry, ignore_errors=True)

