"""The provider paths a session may ask the gateway for: one frozen set (RC-03).

Observed, not guessed: the pinned CLI (2.1.332) was run through the bundled demo with a
scripted provider that logged every request line it received, under ``--network confined``
and ``--network host``, with an API key (112 requests): every one was
``POST /v1/messages?beta=true``, no ``GET``, no other path (no ``count_tokens``, no model
list, no telemetry: the CLI's telemetry is off in a session's environment); and run outside a
sandbox against a gateway, with ``ANTHROPIC_API_KEY`` and with ``ANTHROPIC_AUTH_TOKEN``, it
sent that one request and nothing the gateway refused. Observe again
when the pin moves (the tests' helper runs the real CLI against the gateway in both key
modes); a path the CLI starts to need shows up as a ``path`` refusal counted per session.
"""

from __future__ import annotations

from typing import Final

ALLOWED: Final[frozenset[tuple[str, str]]] = frozenset({
    ("POST", "/v1/messages?beta=true"),
})
"""``(method, target as sent)`` pairs forwarded; the target is compared whole, query included."""


def allowed(method: str, target: str) -> bool:
    """Whether ``method`` and ``target`` (path and query as sent) are in `ALLOWED`."""
    return (method, target) in ALLOWED
