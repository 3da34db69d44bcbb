"""The egress proxy: the one way out of a confined session's network namespace.

A session under ``--network confined`` has only a loopback interface. A
bridge inside the sandbox (Debian's ``socat``, see `sandbox._network`)
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
lower-casing the host; ``localhost`` is not ``127.0.0.1``). Everything else
is answered ``403 Forbidden`` and **counted and named** (``host:port``), so
the transcript's prose can list every denied connection; a request that is
not a proxy request at all gets ``400`` and is counted as
`MALFORMED_NAME`. Names are resolved here, outside the sandbox, so the
session needs no resolver (and has none).

Why this is written here and not taken from Debian: the well-kept
allowlisting proxies (tinyproxy, squid) listen on TCP only, so each would
need a second socat outside to reach a Unix socket, plus a config file, a
daemon and its privilege drop per session, and they report denials only in
log lines that the runner would have to parse back into per-session counts.
What is needed is small (one allowed target, two request forms, a byte
relay) and the per-session count is first-class here: one proxy per session,
so every denial belongs to exactly one session without any attribution step.

What this proxy does not do: TLS (a CONNECT tunnel is relayed opaquely),
authentication, caching. A forwarded plain-HTTP request is sent upstream
with ``Connection: close``, so one client connection carries one request
and cannot be reused for another host; a tunnel carries whatever the client
sends, but only ever to the allowed target.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections import Counter
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, final
from urllib.parse import urlsplit

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from anyio.abc import ByteStream

EGRESS_ROOT: Final = Path("/var/tmp/headwater-campaign/egress")
"""Where per-session socket directories live (short: a socket path has at most 107 bytes)."""
MAX_HEAD_BYTES: Final = 64 * 1024
"""Largest request head (request line + headers) the proxy reads; more is a 400."""
HEAD_TIMEOUT_S: Final = 30.0
"""Seconds a client has to send its whole request head after connecting."""
CONNECT_TIMEOUT_S: Final = 30.0
"""Seconds to resolve and connect to the allowed target before answering 502."""
MAX_DENIED_NAMES: Final = 100
"""Distinct denied names kept per session; further ones are counted under `OTHER_NAME`."""
MALFORMED_NAME: Final = "(not a proxy request)"
"""The name a denial gets when the request named no ``host:port``."""
OTHER_NAME: Final = "(further hosts)"
"""The name that collects denials past `MAX_DENIED_NAMES` distinct names."""
_RELAY_CHUNK_BYTES: Final = 65536
_DROPPED_HEADERS: Final = frozenset(
    {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}
)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class BadProxyRequest(ValueError):
    """The request head is not a proxy request this proxy understands (answered 400)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"not a proxy request: {reason}")
        self.reason = reason


@dataclass(frozen=True, slots=True, order=True)
class Target:
    """A ``host:port`` a client asked for.

    Attributes:
        host: Lower-cased host name or address, IPv6 without brackets.
        port: TCP port, 1..65535.
    """

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def target_of_url(url: str) -> Target:
    """The ``host:port`` a base URL reaches (the provider's), default ports filled in.

    Raises:
        ValueError: the URL is not ``http``/``https`` or names no host.
    """
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"provider URL must be http(s)://host[:port][/path], got {url!r}")
    return Target(parts.hostname.lower(), parts.port or _DEFAULT_PORTS[parts.scheme])


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """One parsed request head.

    Attributes:
        kind: ``connect`` (a tunnel) or ``forward`` (absolute-URI plain HTTP).
        target: Where the client wants to go.
        upstream_head: For ``forward``, the head to send upstream (origin-form
            request line, hop-by-hop headers dropped, ``Connection: close``);
            empty for ``connect``.
    """

    kind: Literal["connect", "forward"]
    target: Target
    upstream_head: bytes


def parse_proxy_request(head: bytes) -> ProxyRequest:
    r"""Parse a request head (through the blank line) sent to a forward proxy. Pure.

    Args:
        head: The bytes up to and including the first ``\r\n\r\n``.

    Returns:
        The request; see `ProxyRequest`.

    Raises:
        BadProxyRequest: an origin-form request (not meant for a proxy), an
            ``https://`` absolute URI (clients CONNECT for those), a missing or
            bad port, or a line that is not ``METHOD TARGET HTTP/1.x``.
    """
    lines = head.split(b"\r\n")
    words = lines[0].split(b" ")
    if len(words) != 3 or not words[2].startswith(b"HTTP/1."):
        raise BadProxyRequest(f"request line {lines[0][:80]!r}")
    method, raw_target, version = words
    try:
        text = raw_target.decode("ascii")
    except UnicodeDecodeError as exc:
        raise BadProxyRequest("a non-ASCII request target") from exc
    if method == b"CONNECT":
        return ProxyRequest("connect", _authority(text), b"")
    parts = urlsplit(text)
    if parts.scheme != "http" or not parts.hostname:
        raise BadProxyRequest(f"target {text[:80]!r} is not an absolute http:// URI")
    try:
        target = Target(parts.hostname.lower(), parts.port or 80)
    except ValueError as exc:
        raise BadProxyRequest(f"target {text[:80]!r} has a bad port") from exc
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [
        line for line in lines[1:]
        if line and line.split(b":", 1)[0].strip().lower() not in _DROPPED_HEADERS
    ]
    request_line = b" ".join((method, path.encode("ascii"), version))
    upstream = b"\r\n".join([request_line, *kept, b"Connection: close", b"", b""])
    return ProxyRequest("forward", target, upstream)


def _authority(text: str) -> Target:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise BadProxyRequest(f"CONNECT target {text[:80]!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    number = int(port)
    if not 0 < number < 65536:
        raise BadProxyRequest(f"CONNECT target {text[:80]!r} has a bad port")
    return Target(host.lower(), number)


@dataclass(frozen=True, slots=True)
class EgressStats:
    """What one session's proxy saw: a frozen snapshot.

    Attributes:
        allowed_target: The one ``host:port`` that was allowed.
        allowed: Connections relayed to it (tunnels and forwarded requests).
        denied: Denied ``host:port`` (or `MALFORMED_NAME`) -> count.
        upstream_failures: Allowed connections whose upstream could not be
            reached (answered 502; not denials).
    """

    allowed_target: str
    allowed: int
    denied: dict[str, int]
    upstream_failures: int

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
        }


@final
class EgressProxy:
    """A running egress proxy for one session; built by `open_egress_proxy`."""

    def __init__(self, allowed: Target, socket_path: Path) -> None:
        self.allowed = allowed
        self.socket_path = socket_path
        self._allowed_count = 0
        self._upstream_failures = 0
        self._denied: Counter[str] = Counter()

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
        )

    def _deny(self, name: str) -> None:
        if name in self._denied or len(self._denied) < MAX_DENIED_NAMES:
            self._denied[name] += 1
        else:
            self._denied[OTHER_NAME] += 1

    async def handle(self, client: ByteStream) -> None:
        """Serve one client connection to its end. Never raises for a client's fault."""
        async with client:
            reader = BufferedByteReceiveStream(client)
            head: bytes | None = None
            with anyio.move_on_after(HEAD_TIMEOUT_S), contextlib.suppress(Exception):
                head = await reader.receive_until(b"\r\n\r\n", MAX_HEAD_BYTES) + b"\r\n\r\n"
            if head is None:
                self._deny(MALFORMED_NAME)
                await _answer(client, 400, "no complete request head")
                return
            try:
                request = parse_proxy_request(head)
            except BadProxyRequest as exc:
                self._deny(MALFORMED_NAME)
                await _answer(client, 400, exc.reason)
                return
            if request.target != self.allowed:
                self._deny(str(request.target))
                await _answer(client, 403, f"{request.target} is not the provider ({self.allowed})")
                return
            await self._relay(client, reader, request)

    async def _relay(
        self, client: ByteStream, reader: BufferedByteReceiveStream, request: ProxyRequest
    ) -> None:
        upstream: ByteStream | None = None
        with anyio.move_on_after(CONNECT_TIMEOUT_S), contextlib.suppress(OSError):
            upstream = await anyio.connect_tcp(request.target.host, request.target.port)
        if upstream is None:
            self._upstream_failures += 1
            await _answer(client, 502, f"cannot reach {request.target}")
            return
        self._allowed_count += 1
        async with upstream:
            try:
                if request.kind == "connect":
                    await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:
                    await upstream.send(request.upstream_head)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return
            await _splice(reader, client, upstream)


async def _splice(
    reader: BufferedByteReceiveStream, client: ByteStream, upstream: ByteStream
) -> None:
    """Relay both ways; when the upstream side ends, the exchange is over."""
    async with anyio.create_task_group() as tg:

        async def client_to_upstream() -> None:
            with contextlib.suppress(Exception):
                while True:
                    try:
                        chunk = await reader.receive(_RELAY_CHUNK_BYTES)
                    except anyio.EndOfStream:
                        await upstream.send_eof()
                        return
                    await upstream.send(chunk)
            tg.cancel_scope.cancel()  # a send or receive failed: nothing more can pass

        async def upstream_to_client() -> None:
            with contextlib.suppress(Exception):
                while True:
                    await client.send(await upstream.receive(_RELAY_CHUNK_BYTES))
            tg.cancel_scope.cancel()  # EOF or failure: nothing more can come back

        tg.start_soon(client_to_upstream)
        tg.start_soon(upstream_to_client)


_REASONS: Final = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}


async def _answer(client: ByteStream, status: int, message: str) -> None:
    body = f"headwater egress proxy: {message}\n".encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(Exception):
        await client.send(head + body)


@asynccontextmanager
async def open_egress_proxy(
    allowed: Target, *, root: Path = EGRESS_ROOT, owner: tuple[int, int] | None = None
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

    Yields:
        The proxy; read `EgressProxy.stats` after the session's harness exited.

    Raises:
        OSError: the directory or socket cannot be created.
    """
    directory = await anyio.to_thread.run_sync(_new_socket_dir, root)
    try:
        path = directory / "egress.sock"
        listener = await anyio.create_unix_listener(path, mode=0o600)
        if owner is not None:
            os.chown(directory, *owner)
            os.chown(path, *owner)
        proxy = EgressProxy(allowed, path)
        try:
            async with listener, anyio.create_task_group() as tg:
                tg.start_soon(listener.serve, proxy.handle)
                try:
                    yield proxy
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # trio's strict task groups wrap the caller's own exception: hand it back as
            # it was raised (handlers never raise, so it is the only one).
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _new_socket_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    _sweep(root)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))


def _sweep(root: Path) -> None:
    """Remove socket directories whose runner pid is gone (left by a killed runner)."""
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            pid = entry.name.split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
