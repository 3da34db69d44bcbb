"""What the egress proxy reads of a request, and what it refuses in it. Pure: no I/O here.

Rule (`sandbox.network._egress`): a session reaches the provider's ``host:port`` and
nothing else, and *as* that host, not as another one behind it. So besides
the target of the request line, the proxy holds:

* a forwarded plain-HTTP request (``METHOD http://host:port/path``) to exactly
  one ``Host`` header naming the allowed host (its port may be left out only
  when it is the scheme's default), and to a body of ``Content-Length``
  bytes; ``Transfer-Encoding`` is refused, and nothing the client sends after
  that one request is forwarded (`refusal`);
* a ``CONNECT`` tunnel to a ``Host`` header, when it has one, naming the
  target, and to a first record that is a TLS ClientHello whose server name
  (SNI) is the allowed host (`tls_server_name`; no name is accepted only for an
  address, which TLS clients send none for). Inside the TLS the HTTP ``Host``
  cannot be seen without breaking TLS: the provider's own endpoint decides
  what a name it serves may reach.

Each refusal has a name that says what was refused (``127.0.0.1:8080 with
Host evil.example``), counted per session like a refused target. Its parts
that came from the session (a refused target's host, a Host, a TLS name) are
cut to `SHOWN_CHARS`, so 100 names stay small in the ledger; the transcript
renders every denied name as a JSON literal.

The head is read here by hand, not with the gateway's h11: h11 refuses, unnamed and before
any target, heads this module tunnels or names (an HTTP/1.1 request with no ``Host`` or
several, two ``Content-Length`` values); docs/network.md has the measurements.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

__all__ = [
    "SHOWN_CHARS",
    "BadProxyRequest",
    "NotTLS",
    "ProxyRequest",
    "Target",
    "is_address",
    "parse_proxy_request",
    "refusal",
    "target_of_url",
    "tls_server_name",
]

SHOWN_CHARS: Final = 80
"""Characters of a session's value (a Host, a TLS name) kept in a denial's name."""
MAX_RECORD_BYTES: Final = 5 + 16384 + 2048
"""A TLS record: its 5-byte header and at most 2^14 + 2048 bytes (RFC 8446, 5.2)."""
_DROPPED_HEADERS: Final = frozenset(
    {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}
)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class BadProxyRequest(ValueError):
    """The request head is not a proxy request this proxy understands (answered 400)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"not a proxy request: {reason}")
        self.reason = reason


class NotTLS(ValueError):
    """A tunnel's first bytes are not a TLS ClientHello this proxy can read (refused)."""


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

    def host_forms(self, default_port: int) -> frozenset[str]:
        """What a ``Host`` header naming this target may say (lower case)."""
        bare = f"[{self.host}]" if ":" in self.host else self.host
        return frozenset({str(self), bare} if self.port == default_port else {str(self)})


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
        hosts: The values of its ``Host`` headers, in order (stripped).
        content_length: Its ``Content-Length`` (0 when it has none); None when
            it has several that differ or one that is not a number.
        chunked: It has a ``Transfer-Encoding`` header.
    """

    kind: Literal["connect", "forward"]
    target: Target
    upstream_head: bytes
    hosts: tuple[str, ...] = ()
    content_length: int | None = 0
    chunked: bool = False


def parse_proxy_request(head: bytes) -> ProxyRequest:
    r"""Parse a request head (through the blank line) sent to a forward proxy.

    Args:
        head: The bytes up to and including the first ``\r\n\r\n``.

    Returns:
        The request; see `ProxyRequest`. What it may not do is `refusal`'s.

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
    fields = [_field(line) for line in lines[1:] if line]
    hosts = tuple(value.decode("latin-1") for name, value in fields if name == b"host")
    length = _content_length({value for name, value in fields if name == b"content-length"})
    chunked = any(name == b"transfer-encoding" for name, _ in fields)
    if method == b"CONNECT":
        return ProxyRequest("connect", _authority(text), b"", hosts, length, chunked)
    parts = urlsplit(text)
    if parts.scheme != "http" or not parts.hostname:
        raise BadProxyRequest(f"target {text[:80]!r} is not an absolute http:// URI")
    try:
        target = Target(parts.hostname.lower(), parts.port or 80)
    except ValueError as exc:
        raise BadProxyRequest(f"target {text[:80]!r} has a bad port") from exc
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [line for line in lines[1:] if line and _field(line)[0] not in _DROPPED_HEADERS]
    request_line = b" ".join((method, path.encode("ascii"), version))
    upstream = b"\r\n".join([request_line, *kept, b"Connection: close", b"", b""])
    return ProxyRequest("forward", target, upstream, hosts, length, chunked)


def _content_length(values: set[bytes]) -> int | None:
    if not values:
        return 0
    only = next(iter(values))
    return int(only) if len(values) == 1 and only.isdigit() else None


def _field(line: bytes) -> tuple[bytes, bytes]:
    name, _, value = line.partition(b":")
    return name.strip().lower(), value.strip()


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


def refusal(request: ProxyRequest, allowed: Target) -> str | None:
    """The denial's name when ``request`` may not pass (module docstring), else None."""
    target = request.target
    if target != allowed:  # a host the session named: cut, as its other values are
        return str(Target(target.host[:SHOWN_CHARS], target.port))
    default = 80 if request.kind == "forward" else 443
    if len(request.hosts) > 1:
        return f"{target} with several Host headers"
    if request.hosts and request.hosts[0].lower() not in target.host_forms(default):
        return f"{target} with Host {request.hosts[0][:SHOWN_CHARS]}"
    if request.kind == "connect":
        return None
    if not request.hosts:
        return f"{target} with no Host"
    if request.chunked or request.content_length is None:
        return f"{target} with a body not of one Content-Length"
    return None


def tls_server_name(record: bytes) -> str | None:
    """The server name (SNI) of the TLS ClientHello that ``record`` holds, or None if it names none.

    ``record`` is one whole TLS record (header and body), as a client sends it
    first in a tunnel.

    Raises:
        NotTLS: it is not a handshake record holding a whole ClientHello, or the
            hello is malformed.
    """
    if len(record) < 5 or record[0] != 0x16 or record[1] != 0x03:
        raise NotTLS("not a TLS handshake record")
    body = record[5 : 5 + int.from_bytes(record[3:5], "big")]
    if len(body) < 4 or body[0] != 0x01:
        raise NotTLS("not a ClientHello")
    hello = body[4 : 4 + int.from_bytes(body[1:4], "big")]
    if len(hello) != int.from_bytes(body[1:4], "big"):
        raise NotTLS("a ClientHello in more than one record")
    try:
        at = 2 + 32  # client version, random
        at += 1 + hello[at]  # session id
        at += 2 + int.from_bytes(hello[at : at + 2], "big")  # cipher suites
        at += 1 + hello[at]  # compression methods
        end = at + 2 + int.from_bytes(hello[at : at + 2], "big")
        at += 2
        while at + 4 <= end:
            kind, size = int.from_bytes(hello[at : at + 2], "big"), int.from_bytes(
                hello[at + 2 : at + 4], "big")  # fmt: skip
            if kind == 0:  # server_name: list length, then name_type 0 (host_name), length
                data = hello[at + 4 : at + 4 + size]
                if len(data) < 5 or data[2] != 0:
                    raise NotTLS("a malformed server_name extension")
                return data[5 : 5 + int.from_bytes(data[3:5], "big")].decode("ascii").lower()
            at += 4 + size
    except (IndexError, UnicodeDecodeError) as exc:
        raise NotTLS("a malformed ClientHello") from exc
    return None


def is_address(host: str) -> bool:
    """Whether ``host`` is an IP address (TLS clients send no server name for one)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
