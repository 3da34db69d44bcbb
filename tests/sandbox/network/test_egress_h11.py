"""Why the egress proxy reads its request heads itself, not with h11 (docs/network.md).

The provider gateway speaks HTTP with h11 (server role). The proxy could share it only if
h11 handed it every head its rules decide on. It does not: an HTTP/1.1 request with no
``Host`` or with several, two ``Content-Length`` values that differ and a
``Transfer-Encoding`` other than ``chunked`` are errors to h11 before it gives any target,
where the proxy tunnels the first (a ``CONNECT`` to the provider) and names the others by
what was refused. Each case holds both sides on the same bytes: the proxy's answer (from its
rule) and h11's. A case that goes red means h11 changed: the choice is worth another look.
"""

from __future__ import annotations

import h11
import pytest

from sandbox.network._egress import MAX_HEAD_BYTES, Target, parse_proxy_request
from sandbox.network._egress_http import refusal

ALLOWED = Target("127.0.0.1", 8080)


def _h11_events(data: bytes, *, read_bytes: int | None = None) -> list[object]:
    """What h11's server side makes of ``data`` (fed ``read_bytes`` at a time), up to the
    first event that is not a request's part, as the gateway configures it."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    events: list[object] = []
    step = read_bytes or len(data) or 1
    for at in range(0, len(data), step):
        conn.receive_data(data[at : at + step])
        while (event := conn.next_event()) not in (h11.NEED_DATA, h11.PAUSED):
            events.append(event)
        if event is h11.PAUSED:
            events.append(conn.trailing_data[0])
            break
    return events


@pytest.mark.parametrize(
    ("head", "proxy_says", "h11_says"),
    [
        (b"CONNECT 127.0.0.1:8080 HTTP/1.1\r\n\r\n", None, "Missing mandatory Host"),
        (b"CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n", "10.0.0.1:443", "Missing mandatory Host"),
        (b"GET http://127.0.0.1:8080/ HTTP/1.1\r\n\r\n", "127.0.0.1:8080 with no Host",
         "Missing mandatory Host"),
        (b"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nHost: evil\r\n\r\n",
         "127.0.0.1:8080 with several Host headers", "multiple Host"),
        (b"POST http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
         b"Content-Length: 2\r\nContent-Length: 9\r\n\r\n",
         "127.0.0.1:8080 with a body not of one Content-Length", "conflicting Content-Length"),
        (b"POST http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
         b"Transfer-Encoding: gzip\r\n\r\n",
         "127.0.0.1:8080 with a body not of one Content-Length", "Only Transfer-Encoding"),
    ],
    ids=["connect-no-host", "connect-elsewhere-no-host", "forward-no-host", "two-hosts",
         "two-lengths", "te-gzip"],
)
def test_h11_refuses_unnamed_what_the_proxy_tunnels_or_names(
        head: bytes, proxy_says: str | None, h11_says: str) -> None:
    assert refusal(parse_proxy_request(head), ALLOWED) == proxy_says
    with pytest.raises(h11.RemoteProtocolError, match=h11_says):
        _h11_events(head)


def test_h11_reads_both_proxy_forms_and_stops_where_the_proxy_does() -> None:
    """What sharing it would have kept: both targets as sent, and what follows a tunnel's head
    or one request's body held back (``trailing_data``), not read as another request."""
    tunnel = _h11_events(b"CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\n"
                         b"\x16\x03\x01")  # fmt: skip
    assert isinstance(tunnel[0], h11.Request) and tunnel[0].target == b"api.example:443"
    assert tunnel[-1] == b"\x16\x03\x01"
    smuggled = _h11_events(b"POST http://127.0.0.1:8080/v1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                           b"Content-Length: 5\r\n\r\nhello"
                           b"GET /secret HTTP/1.1\r\n\r\n")  # fmt: skip
    assert isinstance(smuggled[0], h11.Request)
    assert smuggled[0].target == b"http://127.0.0.1:8080/v1"
    assert [type(e) for e in smuggled[1:3]] == [h11.Data, h11.EndOfMessage]
    assert smuggled[-1] == b"GET /secret HTTP/1.1\r\n\r\n"


def test_h11_bounds_what_it_buffers_not_the_head() -> None:
    """``max_incomplete_event_size`` is checked only while a head is incomplete: fed the bound
    at a time, a head of twice the bound is read. The proxy checks its head's own length."""
    start = b"GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Pad: "
    head = start + b"a" * (2 * MAX_HEAD_BYTES - len(start) - 4) + b"\r\n\r\n"
    events = _h11_events(head, read_bytes=MAX_HEAD_BYTES)
    assert isinstance(events[0], h11.Request)
