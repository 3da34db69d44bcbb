"""The batch's one holder of the host's credential: an API key, or the host's login (RC-03).

A login is the host's ``.credentials.json`` (``claudeAiOauth.accessToken``, and
``expiresAt`` in milliseconds since the epoch). The holder reads it once when the batch
opens its upstream and again whenever the file's (inode, size, mtime_ns) change, checked
before each request, so a login renewed on the host (``claude`` run there) is used by the
next request. It never refreshes the login: the token endpoint is not the gateway's to call,
and a refresh token is single use, so a second refresher would break the host's own login.

A login that is expired, unreadable, or that the provider refused (a 401 for its token,
until the file changes) is `LoginUnusable`, whose reason says how to log in again.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from .._config import Credentials
from .._errors import CredentialsMissing
from ._types import KeyVariable

MAX_CREDENTIALS_BYTES: Final = 64 * 1024
"""A ``.credentials.json`` larger than this is not read (a login's is a few hundred bytes)."""
LOGIN_FIX: Final = ("log in again on the host (run `claude` there and `/login`), or run with "
                    "--api-key-env NAME; a batch that outlasts a login needs a login that "
                    "outlasts it, or an API key")
"""How to get a usable login again, ending every login failure's reason."""


def header_safe(secret: str) -> bool:
    """Whether ``secret`` is visible ASCII only (``!`` to ``~``), as an API key and a login's
    token are: a header cannot carry anything else, and httpx's error for one that tries
    quotes the header whole (the secret would land in a row's ``upstream_error``)."""
    return all("!" <= char <= "~" for char in secret)


class LoginUnusable(Exception):
    """The host's login cannot be used for a request; ``reason`` says why and how to fix it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Credential:
    """The secret one request is sent with, and how it goes on the wire.

    Attributes:
        kind: ``api-key`` (sent as ``x-api-key``) or ``login`` (``Authorization: Bearer``,
            with the OAuth beta the provider asks of a login's token).
        secret: The key or the access token; never in ``repr``.
        version: Which reading of the login it came from (the file's identity), so a
            provider's 401 refuses that reading only; None for an API key.
    """

    kind: Literal["api-key", "login"]
    secret: str = field(repr=False)
    version: tuple[int, int, int] | None = None


class CredentialHolder:
    """Holds the batch's credential; `current` gives the one to send a request with.

    Args:
        credentials: The host's (`sandbox.host_credentials`): an API key, or the login file.
        clock: Seconds since the epoch (tests pass their own to expire a login).

    Raises:
        CredentialsMissing: neither a key nor a file, a key a header cannot carry
            (`header_safe`), or the login file cannot be read or holds no access token it
            could carry (named, never its content).
    """

    def __init__(self, credentials: Credentials, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._key = credentials.api_key
        self._file = credentials.credentials_file
        self._read: tuple[tuple[int, int, int], str, int | None] | None = None
        self._refused: tuple[int, int, int] | None = None
        if self._key is not None and not header_safe(self._key):
            raise CredentialsMissing(
                f"the API key in ${credentials.api_key_env} holds a space, a newline or a "
                "character that is not ASCII, which no request header can carry (a line "
                "read with its newline?): set the key alone")
        if self._key is None:
            if self._file is None:
                raise CredentialsMissing("neither an API key nor a login file was given")
            try:
                self._reread()
            except LoginUnusable as exc:
                raise CredentialsMissing(exc.reason) from None

    @property
    def key_variable(self) -> KeyVariable:
        """``ANTHROPIC_API_KEY`` for an API key, ``ANTHROPIC_AUTH_TOKEN`` for a login."""
        return "ANTHROPIC_API_KEY" if self._key is not None else "ANTHROPIC_AUTH_TOKEN"

    @property
    def kind(self) -> Literal["api-key", "login"]:
        """``api-key`` or ``login``."""
        return "api-key" if self._key is not None else "login"

    def current(self) -> Credential:
        """The credential to send the next request with.

        Raises:
            LoginUnusable: the login is expired, unreadable, or was refused by the provider
                and the file has not changed since.
        """
        if self._key is not None:
            return Credential("api-key", self._key)
        version = self._identity()
        if self._read is None or self._read[0] != version:
            self._reread()
        assert self._read is not None
        version, token, expires_ms = self._read
        if self._refused == version:
            raise LoginUnusable(f"the provider refused the host's login in {self._file} "
                                f"(a 401): {LOGIN_FIX}")
        if expires_ms is not None and self._clock() * 1000 >= expires_ms:
            try:
                when = (datetime.fromtimestamp(expires_ms / 1000, UTC)
                        .strftime("%Y-%m-%d %H:%M:%S UTC"))
            except (ValueError, OverflowError, OSError):  # before any date Python can show
                when = f"{expires_ms} ms since the epoch"
            raise LoginUnusable(f"the host's login in {self._file} expired at {when} (the "
                                f"gateway never refreshes a login): {LOGIN_FIX}")
        return Credential("login", token, version)

    def refused(self, credential: Credential) -> str | None:
        """The provider answered 401 to ``credential``: a login's reading is refused from now
        until its file changes. Returns the login failure's reason, None for an API key."""
        if credential.kind != "login":
            return None
        self._refused = credential.version
        return f"the provider refused the host's login in {self._file} (a 401): {LOGIN_FIX}"

    def _identity(self) -> tuple[int, int, int]:
        assert self._file is not None
        try:
            st = os.stat(self._file)
        except OSError as exc:
            raise LoginUnusable(f"the host's login {self._file} cannot be read "
                                f"({exc.strerror}): {LOGIN_FIX}") from None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _reread(self) -> None:
        assert self._file is not None
        version = self._identity()
        token, expires_ms = _parse_login(self._file)
        self._read = (version, token, expires_ms)


def _parse_login(path: Path) -> tuple[str, int | None]:
    """``(accessToken, expiresAt)`` of a ``.credentials.json``; LoginUnusable when it has none."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CREDENTIALS_BYTES + 1)
    except OSError as exc:
        raise LoginUnusable(f"the host's login {path} cannot be read ({exc.strerror}): "
                            f"{LOGIN_FIX}") from None
    try:
        data = json.loads(raw) if len(raw) <= MAX_CREDENTIALS_BYTES else None
    except ValueError:
        data = None
    oauth = data.get("claudeAiOauth") if isinstance(data, Mapping) else None
    token = oauth.get("accessToken") if isinstance(oauth, Mapping) else None
    if not isinstance(token, str) or not token:
        raise LoginUnusable(f"the host's login {path} holds no claudeAiOauth.accessToken: "
                            f"{LOGIN_FIX}")
    if not header_safe(token):
        raise LoginUnusable(f"the host's login {path} holds a claudeAiOauth.accessToken with a "
                            "space, a newline or a character that is not ASCII, which no "
                            f"request header can carry: {LOGIN_FIX}")
    assert isinstance(oauth, Mapping)
    expires = oauth.get("expiresAt")
    if expires is None:  # a login that names no expiry: used until the provider refuses it
        return token, None
    if isinstance(expires, bool) or not isinstance(expires, int | float) or not math.isfinite(
            expires):  # fail closed: an expiry that cannot be read is not "never"
        raise LoginUnusable(f"the host's login {path} holds a claudeAiOauth.expiresAt that is "
                            f"not a number of milliseconds: {LOGIN_FIX}")
    return token, math.floor(expires)


def login_problem(credentials: Credentials, *,
                  clock: Callable[[], float] = time.time) -> str | None:
    """Why the batch's gateway could not use ``credentials`` now, or None when it could.

    An API key always can; a login can while its file holds an access token that has not
    expired (the gateway never refreshes one, so a batch started on an expired login would
    end every session ``harness-error``). For `doctor` and the commands that run sessions,
    before anything is started.

    Raises:
        CredentialsMissing: neither a key nor a readable login file.
    """
    try:
        CredentialHolder(credentials, clock=clock).current()
    except LoginUnusable as exc:
        return exc.reason
    return None
