"""The provider gateway: the session's only provider, outside every sandbox (RC-03).

A session is given a loopback base URL and a random placeholder key; the gateway, in the
runner, takes only that placeholder and only the provider paths the pinned harness needs,
puts the real credential in its place, forwards to the provider over TLS and streams each
response back as it arrives, observing the provider's own metadata on the way (served
model, usage, request id, a digest of the system prompt): docs/gateway.md.

Owns the gateway's server side (h11; ``_server``), the checks and refusals of one session's
gateway (``_gateway``), its upstream (httpx; ``_upstream``) and one request's forwarding and
relay (``_forward``), the host's credential as the batch's one holder (``_login``), what it
reads of a response (``_sse``) and of a request (``_digest``), the paths it forwards
(``_paths``), doctor's ``gateway`` check (``_check``), and what it reports
(`ProviderRequest`, `GatewayStats`; ``_types``); prices, budgets and the ledger are the
campaign's (`SpendGate`).
"""

from __future__ import annotations

from ._check import gateway_check as gateway_check
from ._gateway import Gateway as Gateway
from ._gateway import Upstream as Upstream
from ._gateway import open_gateway as open_gateway
from ._gateway import open_upstream as open_upstream
from ._login import LOGIN_FIX as LOGIN_FIX
from ._login import login_problem as login_problem
from ._types import MAX_TEXT as MAX_TEXT
from ._types import GatewayStats as GatewayStats
from ._types import KeyVariable as KeyVariable
from ._types import ProviderRequest as ProviderRequest
from ._types import Refusal as Refusal
from ._types import SpendGate as SpendGate
from ._types import Usage as Usage
