"""Which credential a scripted provider takes: the one it was given, as a real provider.

With ``ScriptedProvider(..., credential=KEY)`` the provider answers only requests that carry
KEY the ways the Messages API takes one: ``x-api-key: KEY`` (an API key), or
``Authorization: Bearer KEY`` with `OAUTH_BETA` among the ``anthropic-beta`` values (a
login's access token; the API refuses a bearer token without it). So a test of the provider
gateway sees from the provider's side that the real credential arrived, and that a session's
placeholder did not.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Final

OAUTH_BETA: Final = "oauth-2025-04-20"
"""The ``anthropic-beta`` value a login's bearer token needs at the Messages API."""


def carries(headers: Mapping[str, str], credential: str) -> bool:
    """Whether ``headers`` (names in any case) carry ``credential`` as ``x-api-key``, or as a
    bearer token with `OAUTH_BETA`; compared in constant time."""
    lower = {name.lower(): value for name, value in headers.items()}
    key = lower.get("x-api-key", "").encode()
    bearer = lower.get("authorization", "").encode()
    betas = {b.strip() for b in lower.get("anthropic-beta", "").split(",")}
    as_key = hmac.compare_digest(key, credential.encode())
    as_bearer = hmac.compare_digest(bearer, b"Bearer " + credential.encode())
    return as_key or (as_bearer and OAUTH_BETA in betas)
