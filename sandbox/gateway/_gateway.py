"""One session's gateway: a loopback listener that takes only this session's placeholder.

Each request ends in exactly one `ProviderRequest` handed to the attempt's `SpendGate`
(``observed``) once its response has ended, forwarded or refused; a request cut by the
session leaving (the gateway's context exiting) still gets its row, with the status that
was sent (None when none was), but for one cut while it waited for its place at the
provider (below): that one was neither forwarded nor answered, and has none. The checks,
in order, each a refusal of the gateway's own (an Anthropic-shaped JSON error) counted in
`GatewayStats.refused`:

1. ``over-cap`` (503): the session already holds ``max_connections`` connections; answered
   as the connection opens, before any request (its row has no method or path);
2. ``placeholder`` (401 ``authentication_error``): no key, or one that is not this
   session's placeholder (compared in constant time), in ``x-api-key`` or
   ``Authorization: Bearer``; every key the request carries must be it;
3. ``path`` (404 ``not_found_error``): a method and target not in
   `sandbox.gateway._paths.ALLOWED`;
4. ``too-large`` (413 ``request_too_large``): a body declared over ``max_body_bytes``
   (its body is never read);
5. ``budget`` (400 ``invalid_request_error``, a status the harness does not retry):
   `SpendGate.refusal` said no;
6. ``login`` (401 ``authentication_error``, its message says how to log in again): the
   host's login is expired or unreadable; also `GatewayStats.login_failure`.

Checks 5 and 6, and the forwarding after them, are done for at most
`sandbox.gateway._upstream.MAX_IN_FLIGHT` of the session's requests at once; a further one
waits, its body unread, until one of them has ended. A session that leaves its responses
unread therefore holds at most that share of the batch's connections to the provider.

A budget or login refusal is answered once the body is read and dropped, so the connection
stays open for the next request. A request that passed is forwarded
(`sandbox.gateway._forward`) with its body streamed upstream as it arrives, never held
whole, and read on its way for the row's system digest and model
(`sandbox.gateway._scan.BodyScan`, bounded); a body that passes ``max_body_bytes`` as it
arrives is ``too-large`` then, one that breaks off or is not HTTP/1.1 h11 can read is
``malformed`` (400), and neither counts as forwarded. A provider 401 to a login sets
``login_failure`` too; a 529, 5xx or 429 is relayed as it came, so the harness's retries
behave as they would against the provider.
"""

from __future__ import annotations

import errno
import hmac
import logging
import secrets
from collections import Counter
from contextlib import aclosing, asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
from anyio.abc import SocketAttribute, SocketListener

from .._groups import single_unwrapped
from ._forward import Relayed, masked, relay
from ._login import LoginUnusable
from ._paths import ALLOWED, allowed
from ._peer import not_own
from ._scan import BodyScan
from ._server import BodyTooLarge, Incoming, Malformed, ServerConnection, utc_now
from ._types import MAX_TEXT, GatewayStats, KeyVariable, ProviderRequest, Refusal, SpendGate
from ._upstream import MAX_IN_FLIGHT
from ._upstream import Upstream as Upstream
from ._upstream import open_upstream as open_upstream

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from anyio.abc import SocketStream

    from ._login import Credential

MAX_BODY_BYTES: Final = 32 * 1024 * 1024
"""The largest request body forwarded, in bytes (a long session's request is a few MiB)."""
MAX_REFUSED_NAMES: Final = 100
"""Distinct refusal names kept per session; further ones are counted under `OTHER_NAME`."""
OTHER_NAME: Final = "(further refusals)"
"""The name that collects refusals past `MAX_REFUSED_NAMES` distinct names."""
PLACEHOLDER_PREFIX: Final = "headwater-placeholder-"
"""Begins every placeholder, so that one seen anywhere reads as what it is: no secret."""
OVER_CAP_LINGER_S: Final = 1.0
"""Seconds a connection past the cap is drained after its 503, then closed."""
ACCEPT_RETRY_S: Final = 0.05
"""Pause after an accept that failed for want of descriptors, so the loop does not spin."""
logger = logging.getLogger(__name__)


class _GateFailed(Exception):
    """`SpendGate.observed` raised ``error``: the batch's own failure, never one connection's."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Gateway:
    """One session's gateway: a loopback listener that takes only this session's placeholder.

    Made by `open_gateway`.
    """

    base_url: str
    """``http://127.0.0.1:<port>``: the session's ``ANTHROPIC_BASE_URL``."""
    placeholder: str
    """The session's random placeholder key (no secret: it is worth nothing elsewhere)."""
    key_variable: KeyVariable
    """The variable the placeholder goes in (`Upstream.key_variable`)."""

    def __init__(self, upstream: Upstream, gate: SpendGate, base_url: str, *,
                 max_connections: int | None, max_body_bytes: int,
                 peer_uids: frozenset[int] | None = None) -> None:
        self.base_url = base_url
        self.placeholder = PLACEHOLDER_PREFIX + secrets.token_urlsafe(32)
        self.key_variable = upstream.key_variable
        self._upstream = upstream
        self._gate = gate
        self._max_connections = max_connections
        self._max_body = max_body_bytes
        self._peer_uids = peer_uids
        self._in_flight = anyio.Semaphore(MAX_IN_FLIGHT)
        self._forwarded = 0
        self._refused: Counter[str] = Counter()
        self._budget_refused = 0
        self._login_failure: str | None = None
        self._open = 0
        self.failure: Exception | None = None
        """What ``gate.observed`` raised, once it did (`open_gateway` raises it at exit)."""
        self.scope: anyio.CancelScope | None = None
        """The gateway's scope, cancelled when the gate fails (set by `open_gateway`)."""

    def __repr__(self) -> str:
        return f"<Gateway {self.base_url} -> {self._upstream.url}>"

    def stats(self) -> GatewayStats:
        """The counts so far (final once the harness has exited)."""
        return GatewayStats(forwarded=self._forwarded, refused=dict(self._refused),
                            budget_refused=self._budget_refused,
                            login_failure=self._login_failure)  # fmt: skip

    async def serve(self, listener: SocketListener) -> None:
        """Accept connections until cancelled, each served in its own task."""
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    client = await listener.accept()
                except anyio.BrokenResourceError as exc:
                    cause = exc.__cause__
                    if not (isinstance(cause, OSError)
                            and cause.errno in (errno.EMFILE, errno.ENFILE)):  # fmt: skip
                        raise
                    await anyio.sleep(ACCEPT_RETRY_S)  # the runner is out of descriptors
                    continue
                tg.start_soon(self._handle, client)

    async def _handle(self, stream: SocketStream) -> None:
        """Serve one connection to its end. The gate's own failure cancels the gateway (and
        the block of `open_gateway`, which raises it); a connection's never does."""
        if self._peer_uids is not None and (refusal := await not_own(stream, self._peer_uids)):
            self._count(refusal)
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            return
        over_cap = self._max_connections is not None and self._open >= self._max_connections
        self._open += 1
        try:
            async with stream:
                conn = ServerConnection(stream)
                if over_cap:
                    await self._over_cap(conn)
                    return
                while await self._next(conn) and conn.next_cycle():
                    pass
        except _GateFailed as exc:
            self.failure = self.failure or exc.error
            if self.scope is not None:
                self.scope.cancel()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the session went away
        except Exception:  # one connection's failure never ends the gateway (or the batch)
            logger.exception("gateway %s: a connection failed", self.base_url)
        finally:
            self._open -= 1

    async def _over_cap(self, conn: ServerConnection) -> None:
        """Answer a connection past the cap 503 at once, before it sends anything: waiting for
        its request would let a session hold any number of the runner's descriptors by
        opening connections and sending nothing. Its input is drained for at most
        `OVER_CAP_LINGER_S`, so a request already sent does not turn the answer into a reset."""
        row = _Row(utc_now(), anyio.current_time(), "", "")
        async with self._ending(conn, row):
            await self._refuse(conn, row, "over-cap", 503, "overloaded_error",
                               f"the session already holds {self._max_connections} connections "
                               "to the gateway, its most at once")  # fmt: skip
        await conn.linger(OVER_CAP_LINGER_S)

    async def _next(self, conn: ServerConnection) -> bool:
        """Read and answer the connection's next request; False once it has no more."""
        try:
            incoming = await conn.next_request()
        except Malformed as exc:
            row = _Row(utc_now(), anyio.current_time(), "", "")
            async with self._ending(conn, row):
                await self._refuse(conn, row, "malformed", 400, "invalid_request_error",
                                   f"not an HTTP/1.1 request the gateway can read: {exc}")
            return False
        if incoming is None:
            return False
        row = _Row(incoming.at, incoming.arrived, incoming.method, incoming.target)
        async with self._ending(conn, row):
            await self._exchange(conn, incoming, row)
        return True

    @asynccontextmanager
    async def _ending(self, conn: ServerConnection, row: _Row) -> AsyncIterator[None]:
        """The request's row goes to the gate however the block ends (cancelled included)."""
        try:
            yield
        finally:
            row.fields["status"] = conn.status
            row.fields["duration_s"] = anyio.current_time() - row.arrived
            if not row.waiting:  # one cut while it waited was neither forwarded nor answered
                with anyio.CancelScope(shield=True):
                    try:
                        await self._gate.observed(row.build())
                    except Exception as exc:
                        raise _GateFailed(exc) from exc

    async def _exchange(self, conn: ServerConnection, incoming: Incoming, row: _Row) -> None:
        if not self._placeholder_ok(incoming):
            await self._refuse(conn, row, "placeholder", 401, "authentication_error",
                               "the gateway takes only this session's own placeholder key (in "
                               "x-api-key or Authorization: Bearer); this request carried "
                               "another key or none")  # fmt: skip
            return
        if not allowed(incoming.method, incoming.target):
            await self._refuse(conn, row, "path", 404, "not_found_error",
                               "the gateway forwards only the provider paths the pinned "
                               f"harness needs ({', '.join(sorted(' '.join(p) for p in ALLOWED))})"
                               f", not {incoming.method[:20]} {incoming.target[:MAX_TEXT]}")
            return
        declared = conn.declared_length(incoming)
        if declared is not None and declared > self._max_body:
            await self._refuse(conn, row, "too-large", 413, "request_too_large",
                               self._too_large())  # its body is never read
            return
        waiting = anyio.current_time()
        row.waiting = True
        async with self._in_flight:  # one of the session's own must end first (the pool's share)
            row.waiting = False
            conn.extend_deadline(anyio.current_time() - waiting)
            await self._admit(conn, incoming, declared, row)

    async def _admit(self, conn: ServerConnection, incoming: Incoming, declared: int | None,
                     row: _Row) -> None:
        """Ask the budget and the login, then forward: one of the session's places at the
        provider (`MAX_IN_FLIGHT`) is held while this runs."""
        why = self._gate.refusal()
        if why is not None:
            self._budget_refused += 1
            await self._refuse_read(conn, row, "budget", 400, "invalid_request_error", why)
            return
        holder = self._upstream.holder
        try:
            credential = holder.current()
        except LoginUnusable as exc:
            self._login_failure = self._login_failure or exc.reason
            await self._refuse_read(conn, row, "login", 401, "authentication_error",
                                    exc.reason)  # fmt: skip
            return
        await self._forward(conn, incoming, declared, credential, row)

    async def _forward(self, conn: ServerConnection, incoming: Incoming, declared: int | None,
                       credential: Credential, row: _Row) -> None:
        """Send the request on, its body streamed as it arrives and scanned on its way; a
        body that passes the bound or breaks off on the way is refused, not forwarded."""
        scan = BodyScan()
        seen = Relayed()
        self._forwarded += 1
        try:
            async with aclosing(self._scanned(conn, scan)) as body:
                status = await relay(self._upstream.client,
                                     self._upstream.url + incoming.target, incoming, body,
                                     declared, credential, conn, seen)  # fmt: skip
        except BodyTooLarge:
            self._forwarded -= 1
            await self._refuse(conn, row, "too-large", 413, "request_too_large",
                               self._too_large())  # fmt: skip
            return
        except Malformed as exc:
            self._forwarded -= 1
            await self._refuse(conn, row, "malformed", 400, "invalid_request_error",
                               f"not an HTTP/1.1 request the gateway can read: {exc}")
            return
        finally:
            row.seen(seen, credential.secret)
            row.fields.update(system_digest=scan.digest, requested_model=scan.model)
        if status is None:
            await conn.error(502, "api_error", "the gateway could not reach the provider",
                             close=False)  # fmt: skip
        elif status == 401 and (reason := self._upstream.holder.refused(credential)):
            self._login_failure = self._login_failure or reason

    async def _scanned(self, conn: ServerConnection,
                       scan: BodyScan) -> AsyncGenerator[bytes, None]:
        """The request's body as it arrives, each piece fed to ``scan`` on its way."""
        async for chunk in conn.body(self._max_body):
            scan.feed(chunk)
            yield chunk
        scan.end()

    def _too_large(self) -> str:
        return f"the request's body passes the gateway's bound of {self._max_body} bytes"

    async def _refuse_read(self, conn: ServerConnection, row: _Row, refusal: Refusal,
                           status: int, kind: str, message: str) -> None:
        """`_refuse` once the request's body is read and dropped, so that the connection
        stays open for the client's next request (the harness re-sends on it); a body that
        passes the bound or breaks off closes it. The refusal is counted and in the row before
        the body is read: a session that leaves meanwhile was refused all the same."""
        self._refused_as(row, refusal)
        try:
            async for _ in conn.body(self._max_body):
                pass
        except (BodyTooLarge, Malformed):
            await self._answer(conn, status, kind, message)
            return
        await self._answer(conn, status, kind, message, close=False)

    async def _refuse(self, conn: ServerConnection, row: _Row, refusal: Refusal, status: int,
                      kind: str, message: str, *, close: bool = True) -> None:
        """Count the refusal, put it in the row, answer it (when a response may still begin)."""
        self._refused_as(row, refusal)
        await self._answer(conn, status, kind, message, close=close)

    def _refused_as(self, row: _Row, refusal: Refusal) -> None:
        """Count the refusal and put it in the row."""
        name = f"path {row.fields['method']} {row.fields['path']}" if refusal == "path" else refusal
        self._count(name)
        row.fields["refused"] = refusal

    async def _answer(self, conn: ServerConnection, status: int, kind: str, message: str, *,
                      close: bool = True) -> None:
        """The gateway's own error, when a response may still begin."""
        if conn.can_answer():
            await conn.error(status, kind, message, close=close)

    def _count(self, name: str) -> None:
        if name in self._refused or len(self._refused) < MAX_REFUSED_NAMES:
            self._refused[name] += 1
        else:
            self._refused[OTHER_NAME] += 1

    def _placeholder_ok(self, incoming: Incoming) -> bool:
        keys = incoming.values(b"x-api-key")
        for value in incoming.values(b"authorization"):
            scheme, _, token = value.partition(b" ")
            keys.append(token.strip() if scheme.lower() == b"bearer" else value)
        expected = self.placeholder.encode()
        return bool(keys) and all(hmac.compare_digest(key, expected) for key in keys)


class _Row:
    """A `ProviderRequest` being filled in, built once its response has ended."""

    def __init__(self, at: str, arrived: float, method: str, target: str) -> None:
        self.arrived = arrived
        self.waiting = False
        """Whether the request waits for one of the session's places at the provider: cut
        then (its session left), it was neither forwarded nor answered and has no row."""
        self.fields: dict[str, Any] = {"at": at, "method": method[:MAX_TEXT],
                                       "path": target[:MAX_TEXT], "status": None}

    def seen(self, seen: Relayed, secret: str) -> None:
        """What the relay saw of the provider's response, ``secret`` (the real credential)
        masked in every text: the provider may echo it, an error may quote its bytes."""
        self.fields.update(request_id=masked(seen.request_id, secret), latency_s=seen.latency_s,
                           upstream_error=masked(seen.upstream_error, secret))
        if (observer := seen.observer) is not None:
            self.fields.update(message_id=masked(observer.message_id, secret),
                               model=masked(observer.model, secret), usage=observer.usage,
                               stop_reason=masked(observer.stop_reason, secret))

    def build(self) -> ProviderRequest:
        """The row."""
        return ProviderRequest(**self.fields)


@asynccontextmanager
async def open_gateway(upstream: Upstream, gate: SpendGate, *,
                       max_connections: int | None = None,
                       max_body_bytes: int = MAX_BODY_BYTES,
                       peer_uids: frozenset[int] | None = None) -> AsyncIterator[Gateway]:
    """One session's `Gateway` on host loopback (``127.0.0.1``, a port of the kernel's),
    listening until exit.

    Args:
        upstream: The batch's (`open_upstream`).
        gate: The attempt's budget and ledger side.
        max_connections: Most connections the session may hold at once; one more has its
            request answered 503 (``over-cap``). None is no cap.
        max_body_bytes: The largest request body forwarded (`MAX_BODY_BYTES`).
        peer_uids: The users whose sockets may connect (`sandbox.gateway._peer.not_own`): a
            connection of any other is closed unread and counted under the name ``not_own``
            gives (another user's, or an owner unknown), never toward the cap or a row. None
            takes every connection.

    **Cancellation:** on exit, however it comes, the listener and every connection are
    closed, an upstream response in flight is closed, and each request cut so still has
    its row handed to ``gate.observed``; no task outlives the block. Should
    ``gate.observed`` raise, the block is cancelled and the error raised at its exit.

    Raises:
        OSError: the listener cannot be bound.
        Exception: whatever ``gate.observed`` raised (the batch's own failure).
    """
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    gateway = Gateway(upstream, gate, f"http://127.0.0.1:{port}",
                      max_connections=max_connections, max_body_bytes=max_body_bytes,
                      peer_uids=peer_uids)  # fmt: skip
    with single_unwrapped():
        async with listener, anyio.create_task_group() as tg:
            gateway.scope = tg.cancel_scope
            for one in listener.listeners:
                tg.start_soon(gateway.serve, cast(SocketListener, one))
            try:
                yield gateway
            finally:
                tg.cancel_scope.cancel()
    if gateway.failure is not None:
        raise gateway.failure


