"""The network side of the confinement: what the runner binds and reaches for a session.

Owns:

* the egress proxy (`EgressProxy`; ``_egress``): the only way out of a session whose
  network is confined, a Unix socket bound into its sandbox that forwards to the one
  allowed host and counts and refuses the rest; its HTTP/TLS parsing
  (``_egress_http``: the request line, the TLS server name, the refusal) and its byte
  relays (``_egress_relay``) are its own modules;
* a session's egress as the batch settles it (`open_session_egress`, `BRIDGE_URL`) and the
  network preflight, which proves in a real sandbox that the bridge reaches the provider and
  nothing else (`network_preflight`; ``_network``);
* Unix sockets at a path of any length (`listen_unix`, `connect_unix`; ``_unix``): the
  kernel's limit for a socket's address is 107 bytes (`UNIX_PATH_MAX`), and a batch or a
  test directory deep enough passes it.

Re-exports what `sandbox/__init__` needs. This package sits above the confined recipe
(`sandbox.confined`, which its preflight runs a probe in), `sandbox.users` (the probe's
lease) and `sandbox.cgroup` (the proxy's connection cap is a limit, `LimitHit`); nothing
else in sandbox imports it.
"""

from __future__ import annotations

from ._egress import EgressProxy as EgressProxy
from ._network import BRIDGE_URL as BRIDGE_URL
from ._network import network_preflight as network_preflight
from ._network import open_session_egress as open_session_egress
from ._unix import UNIX_PATH_MAX as UNIX_PATH_MAX
from ._unix import connect_unix as connect_unix
from ._unix import listen_unix as listen_unix
