"""Network confinement: the bridge inside the sandbox, the session's proxy, and its preflight.

With ``--network confined`` (the default where the host supports it) a
session runs in its own network namespace (bwrap ``--unshare-net``; bwrap
0.8.0 brings its ``lo`` up, measured: ``127.0.0.1/8`` and ``::1``, no other
interface, no route, so no resolver is reachable and a name lookup fails).
Its only way out is the egress proxy (`sandbox.network._egress`), outside the
sandbox, whose Unix socket is bound into the sandbox at `EGRESS_MOUNT`.

Inside, Debian's ``socat`` (under ``/usr``, so visible in the sandbox)
bridges ``127.0.0.1:BRIDGE_PORT`` to that socket, and the session's
``HTTPS_PROXY``/``HTTP_PROXY`` name the bridge (`sandbox._env`). The pinned
CLI sends every Messages API request through the proxy, a loopback
``http://`` base URL included (measured with 2.1.197: it does not bypass a
proxy for ``127.0.0.1``, and it sends absolute-URI requests for ``http://``),
so the provider URL the session is given stays the one the runner uses.

The bridge is a step of the session's init shell (`sandbox._init`): the
shell starts socat in the background, waits until its port listens (at
most `BRIDGE_START_TIMEOUT_S`), then ``exec``s the harness, which so keeps
the shell's pid (2, under bwrap's pid 1): bwrap's exit status is the
harness's. socat, left as the harness's child, dies with the session (the
lifeline watcher of `sandbox._init`, or bwrap's pid 1 dying with its
parent). A bridge that does not start ends the sandbox with
`BRIDGE_FAILED_STATUS` and a message on stderr before the harness runs (no
spend).

Rule: the session reaches the provider's ``host:port`` and nothing else, and
every connection the proxy refuses is counted and named per session.
"""

from __future__ import annotations

import http.server
import os
import shlex
import shutil
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from .._argv import NetworkMode
from .._capture import Run, capture
from .._env import SESSION_PATH
from .._errors import PoolBusy, SessionUserUnusable, SpawnFailed
from .._init import BRIDGE_FAILED_STATUS as BRIDGE_FAILED_STATUS
from .._init import BRIDGE_PORT, INIT_FAILED_STATUS, SOCAT
from .._layout import HostLayout, measure_host_layout
from .._report import Check
from .._sync import run_sync
from ..confined import ConfinedSpec, open_confined
from ..users import SessionUser, hold_lease, session_pool
from ._egress import EGRESS_ROOT, EgressProxy, EgressStats, Target, open_egress_proxy, target_of_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

BRIDGE_URL: Final = f"http://127.0.0.1:{BRIDGE_PORT}"
"""The proxy URL a confined session is given (``HTTPS_PROXY`` and friends)."""
DEFAULT_PROVIDER_URL: Final = "https://api.anthropic.com"
"""The harness's own default provider, allowed when the session is given no base URL."""
NETWORK_PROBE_TIMEOUT_S: Final = 30.0
"""The preflight's confined probe takes about a second; more means something hangs."""


@asynccontextmanager
async def open_session_egress(
    network: NetworkMode,
    provider_url: str | None,
    *,
    root: Path = EGRESS_ROOT,
    owner: tuple[int, int] | None = None,
    max_connections: int | None = None,
    directory: Path | None = None,
) -> AsyncIterator[EgressProxy | None]:
    """The egress proxy of one session, or None with ``--network host``.

    Allows exactly the ``host:port`` of ``provider_url`` (of
    `DEFAULT_PROVIDER_URL` when None), at most ``max_connections`` open at
    once. See `sandbox.network._egress.open_egress_proxy` for the socket, its modes
    and ``owner``, ``directory``, the cap, and cancellation.

    Raises:
        ValueError: ``provider_url`` is not an ``http(s)://`` URL with a host.
        OSError: the socket cannot be created.
    """
    if network == "host":
        yield None
        return
    target = target_of_url(provider_url or DEFAULT_PROVIDER_URL)
    async with open_egress_proxy(target, root=root, owner=owner, directory=directory,
                                 max_connections=max_connections) as proxy:  # fmt: skip
        yield proxy


_PROBE_SCRIPT: Final = """\
echo ==allowed
printf 'GET http://127.0.0.1:%s/headwater-preflight HTTP/1.1\\r\\n' "$1" > /tmp/request
printf 'Host: 127.0.0.1:%s\\r\\n\\r\\n' "$1" >> /tmp/request
{socat} -t 10 -T 10 - TCP:127.0.0.1:{bridge} < /tmp/request
echo; echo ==denied
printf 'CONNECT %s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' "$2" \
| {socat} -t 10 -T 10 - TCP:127.0.0.1:{bridge}
echo; echo ==spoofed
printf 'GET http://127.0.0.1:%s/headwater-preflight HTTP/1.1\\r\\n' "$1" > /tmp/spoofed
printf 'Host: headwater-spoofed.invalid\\r\\n\\r\\n' >> /tmp/spoofed
{socat} -t 10 -T 10 - TCP:127.0.0.1:{bridge} < /tmp/spoofed
echo; echo ==direct
if {socat} -T 3 -u TCP:127.0.0.1:"$1",connect-timeout=3 - </dev/null >/dev/null 2>&1
then echo open; else echo closed; fi
"""
_TOKEN: Final = "headwater-network-preflight-ok"
SPOOFED_HOST: Final = "headwater-spoofed.invalid"
"""The ``Host`` the probe sends the allowed server, which the proxy must refuse."""
_NETWORK_FIX: Final = (
    "allow unprivileged network namespaces for bwrap (the user-namespace settings of the "
    "sandbox check; in a container, allow unshare(CLONE_NEWNET) and netlink for `lo`), "
    "or run with --network host, which leaves the session's network open"
)


def network_preflight(
    *,
    bwrap: str = "bwrap",
    layout: HostLayout | None = None,
    socat: str = SOCAT,
    timeout_s: float = NETWORK_PROBE_TIMEOUT_S,
    egress_root: Path = EGRESS_ROOT,
    user: SessionUser | Literal["auto"] | None = "auto",
    lease_wait_s: float | None = None,
) -> Check:
    """Can this host confine a session's network? One preflight answer, named ``network``.

    Runs, under a session's exact confined argv (``--unshare-net``, the egress
    socket, the bridge): a plain-HTTP request through the bridge and the
    egress proxy to a throwaway server on host loopback (must arrive), a
    ``CONNECT`` to another loopback address (must be answered 403 and counted
    by the proxy), the server asked for with another ``Host`` (must be answered
    403 and counted: the provider only as itself), and a direct connection to
    the server's port (must fail: the namespace is private). Every subprocess starts with an empty
    environment and is killed (its process group) after ``timeout_s``. As
    for a session, bwrap runs as a session user (a root runner's: one of its
    pool, leased for the probe, `sandbox.users._lease`, dropped to with setpriv),
    who is given the scratch directories and the egress socket.

    Args:
        bwrap: The bwrap executable, a name looked up on PATH or a path.
        layout: The host layout; None measures ``/``.
        socat: The bridge's socat; must exist on the host under ``/usr``.
        timeout_s: Bound on the confined probe, in seconds.
        egress_root: Parent of the proxy's socket directory.
        user: Who bwrap runs as: ``"auto"`` as a session would (a lease of
            `sandbox.users._pool.session_pool`'s, held for the probe); a given user
            (the caller holds its lease); None the runner itself.
        lease_wait_s: Seconds to wait at most for a free pool user with ``"auto"``
            (then ``unverified``); None waits as long as it takes.

    Returns:
        ``ok`` (verified), ``broken`` (verified not to work; ``fix`` says what
        to do) or ``unverified`` (could not tell: bwrap missing, a timeout).
        Never raises for a host problem.
    """
    if not (os.path.isfile(socat) and os.access(socat, os.X_OK)):
        return Check("network", "broken", f"{socat} is missing (the bridge inside the sandbox)",
                     "install Debian's socat (`apt-get install socat`; `make` does it as root), "
                     "or run with --network host, which leaves the session's network open")
    executable = shutil.which(bwrap)
    if executable is None:
        return Check("network", "unverified", f"not run: {bwrap!r} not found (see the bwrap check)")
    try:
        layout = layout or measure_host_layout()
    except OSError as exc:
        return Check("network", "unverified", f"not run: cannot measure the host layout: {exc}")
    try:
        pool = session_pool() if user == "auto" else None
        with hold_lease(pool, timeout_s=lease_wait_s) as leased:
            who = leased if user == "auto" else user
            return _probed(executable, layout, socat, timeout_s, egress_root, who)
    except PoolBusy as exc:
        return Check("network", "unverified", f"not run: {exc.detail}")
    except SessionUserUnusable as exc:
        return Check("network", "unverified", f"not run: {exc} (see the session-user check)")


def _probed(bwrap: str, layout: HostLayout, socat: str, timeout_s: float, egress_root: Path,
            who: SessionUser | None) -> Check:
    """The probe as ``who`` (its lease held), against a throwaway server."""
    owner = (who.uid, who.gid) if who else None
    with _TokenServer() as port:
        try:
            run, stats = run_sync(_check, bwrap, layout, socat, egress_root, owner, port,
                                  timeout_s, who)  # fmt: skip
        except SessionUserUnusable as exc:
            return Check("network", "unverified", f"not run: {exc}")
    return _verdict(run, stats.denied, stats.allowed, port)


async def _check(
    bwrap: str, layout: HostLayout, socat: str, egress_root: Path, owner: tuple[int, int] | None,
    port: int, timeout_s: float, user: SessionUser | None,
) -> tuple[Run, EgressStats]:
    """The proxy and the confined probe, on one event loop; the proxy's counts after it."""
    async with open_egress_proxy(Target("127.0.0.1", port), root=egress_root,
                                 owner=owner) as proxy:  # fmt: skip
        script = _PROBE_SCRIPT.format(socat=shlex.quote(socat), bridge=BRIDGE_PORT)
        spec = ConfinedSpec(
            command=["/bin/sh", "-c", script, "probe", str(port), f"127.0.0.2:{port}"],
            executable=Path(socat), network="confined", egress_socket=proxy.socket_path,
            env={"PATH": SESSION_PATH}, bwrap=bwrap, layout=layout, user=user, socat=socat,
            bridge_port=BRIDGE_PORT, name="netcheck",
        )  # fmt: skip
        try:
            async with open_confined(spec) as sandbox:
                run = await capture(sandbox.child, timeout_s=timeout_s)
        except SpawnFailed as exc:
            run = Run(None, "", str(exc))
        return run, proxy.stats()


def _sections(stdout: str) -> dict[str, str]:
    found: dict[str, str] = {}
    current = ""
    for line in stdout.splitlines():
        if line.startswith("=="):
            current = line[2:]
            found[current] = ""
        elif current:
            found[current] += line + "\n"
    return found


def _verdict(run: Run, denied: dict[str, int], allowed: int, port: int) -> Check:
    if run.timed_out:
        return Check("network", "unverified",
                     f"the confined probe timed out (bound: {NETWORK_PROBE_TIMEOUT_S} s)")
    message = run.stderr.strip()[-1000:]
    if run.returncode == INIT_FAILED_STATUS:
        return Check("network", "broken", f"the probe's sandbox refused to start: {message}",
                     "bwrap must give the sandbox its own pid namespace (--unshare-pid); see "
                     "the sandbox check")
    if run.returncode != 0:
        return Check("network", "broken",
                     f"a sandbox with --unshare-net and the egress bridge exited "
                     f"{run.returncode}: {message or '(no message)'}", _NETWORK_FIX)
    parts = _sections(run.stdout)
    problems: list[str] = []
    if _TOKEN not in parts.get("allowed", "") or allowed != 1:
        problems.append("a loopback server was not reached through the bridge and the proxy "
                        f"(proxy relayed {allowed}; stderr: {message or 'empty'})")
    name = f"127.0.0.2:{port}"
    spoofed = f"127.0.0.1:{port} with Host {SPOOFED_HOST}"
    if " 403 " not in parts.get("denied", "") or denied.get(name) != 1:
        problems.append(f"a CONNECT to {name} was not refused and counted (counted: {denied})")
    if " 403 " not in parts.get("spoofed", "") or denied.get(spoofed) != 1:
        problems.append(f"a request to the provider with Host {SPOOFED_HOST} was not refused "
                        f"and counted (counted: {denied})")
    if parts.get("direct", "").strip() != "closed":
        problems.append("the host's loopback port was reachable directly from inside: "
                        "the network namespace is not private")
    if problems:
        return Check("network", "broken", "; ".join(problems), _NETWORK_FIX)
    return Check("network", "ok",
                 "own network namespace (only lo); socat bridge to the egress socket; a loopback "
                 f"server reached through the egress proxy; {name} refused (403) and counted; "
                 f"the server asked for as another host (Host {SPOOFED_HOST}) refused and "
                 "counted; a direct connection to host loopback failed")


class _TokenServer:
    """A throwaway HTTP server on host loopback that answers every GET with `_TOKEN`."""

    def __enter__(self) -> int:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TokenHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="network-preflight-server", daemon=True)
        self._thread.start()
        return int(self._server.server_address[1])

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


class _TokenHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = _TOKEN.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True
