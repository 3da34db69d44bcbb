"""The session's environment (RC-03) and the ``--args FD`` payload that carries it to bwrap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

SESSION_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
"""PATH inside the sandbox: only what the RC-02 mounts provide."""

_FIXED: Final = (
    ("PATH", SESSION_PATH),
    ("LANG", "C.UTF-8"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
)
"""Variables RC-03 sets to the same value in every session."""

KEY_VARIABLES: Final = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"})
"""Where a session may find its provider key: an API key's variable, or a bearer token's
(`sandbox.gateway.KeyVariable`)."""


def session_environment(
    *,
    config_dir: Path,
    log_dir: Path,
    provider_url: str | None,
    provider_key: tuple[str, str] | None,
    egress_proxy: str | None = None,
) -> dict[str, str]:
    """Return exactly the variables RC-03 lets into the sandbox, and nothing else.

    ``HOME`` and ``CLAUDE_CONFIG_DIR`` (both ``config_dir``), ``PATH``,
    ``LANG=C.UTF-8``, ``DISABLE_AUTOUPDATER=1``, ``DISABLE_TELEMETRY=1``,
    ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``, ``HEADWATER_LOG_DIR``
    (``log_dir``); ``ANTHROPIC_BASE_URL`` when ``provider_url`` is given;
    ``provider_key``'s variable (``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``)
    when given; with network confinement, ``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``https_proxy`` and ``http_proxy`` (all ``egress_proxy``: the harness honours
    the upper-case pair, curl reads ``http_proxy`` only in lower case), so clients
    inside go through the egress proxy, where a denied target is counted and named.
    Nothing is read from the runner's own environment.

    A batch's session gets its provider gateway's base URL and placeholder here
    (`sandbox.gateway.Gateway`): no real credential enters the sandbox (RC-03). The
    placeholder is worth nothing outside its own gateway, yet it is one session's
    own: pass the result only to `setenv_payload`, never to an argv, a log or a
    ``repr``.

    Args:
        config_dir: The session's config directory, as mounted (same path inside).
        log_dir: The session's log directory, as mounted.
        provider_url: The Messages API base URL (the session's gateway), or None
            for the harness's default.
        provider_key: ``(variable, value)``: the key the harness presents (a
            gateway's placeholder), or None for none.
        egress_proxy: The bridge's URL inside the sandbox
            (`sandbox.network._network.BRIDGE_URL`), or None with ``--network host``.

    Returns:
        A new dict, name -> value.

    Raises:
        ValueError: ``config_dir`` or ``log_dir`` is relative; ``provider_url``,
            ``egress_proxy`` or the key's value is the empty string (None means
            "not given"); the key's variable is not one of `KEY_VARIABLES`.
    """
    for label, path in (("config_dir", config_dir), ("log_dir", log_dir)):
        if not path.is_absolute():
            raise ValueError(f"{label} must be an absolute path, got {str(path)!r}")
    if provider_url == "":
        raise ValueError("provider_url is empty; pass None to use the harness's default")
    env = {"HOME": str(config_dir), "CLAUDE_CONFIG_DIR": str(config_dir), **dict(_FIXED)}
    env["HEADWATER_LOG_DIR"] = str(log_dir)
    if provider_url is not None:
        env["ANTHROPIC_BASE_URL"] = provider_url
    if provider_key is not None:
        variable, value = provider_key
        if variable not in KEY_VARIABLES:
            raise ValueError(f"the provider key goes in ANTHROPIC_API_KEY or "
                             f"ANTHROPIC_AUTH_TOKEN, not {variable!r}")
        if not value:
            raise ValueError(f"the value for {variable} is empty; pass None for no key")
        env[variable] = value
    if egress_proxy == "":
        raise ValueError("egress_proxy is empty; pass None with --network host")
    if egress_proxy is not None:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            env[name] = egress_proxy
    return env


def setenv_payload(env: Mapping[str, str]) -> bytes:
    r"""Encode ``env`` for bwrap's ``--args FD``: ``--setenv\0NAME\0VALUE\0`` each (RC-03).

    bwrap reads the fd to EOF and splits it at NUL bytes into further
    arguments (bwrap(1), ``--args``). The payload goes on a pipe, so no value
    appears on bwrap's command line, where ``/proc/1/cmdline`` would show it
    to the session. Text is encoded as UTF-8 (``surrogateescape``, as
    ``os.fsencode`` does). An empty mapping gives ``b""``.

    Args:
        env: Name -> value, in the order to set them.

    Returns:
        The payload bytes.

    Raises:
        ValueError: a name is empty or contains ``=`` or NUL, or a value
            contains NUL. The message names the variable, never its value.
    """
    parts: list[bytes] = []
    for name, value in env.items():
        if not name or "=" in name or "\0" in name:
            raise ValueError(f"environment variable name {name!r} is empty or contains '=' or NUL")
        if "\0" in value:
            raise ValueError(f"the value of {name} contains a NUL byte")
        parts += [b"--setenv", _encode(name), _encode(value)]
    return b"".join(part + b"\0" for part in parts)


def args_payload(options: Sequence[str], env: Mapping[str, str]) -> bytes:
    r"""Encode bwrap ``options`` and then ``env`` for the ``--args FD`` pipe (RC-02, RC-03).

    Each option is one NUL-terminated argument, as bwrap's ``--args`` reads
    them; the environment follows as `setenv_payload` gives it. Neither
    appears on bwrap's command line (``/proc/1/cmdline`` inside the sandbox):
    the options hold the mounts' host paths, the environment the session's key.

    Raises:
        ValueError: an option contains NUL; or as `setenv_payload`.
    """
    for option in options:
        if "\0" in option:
            raise ValueError(f"bwrap option {option!r} contains a NUL byte")
    return b"".join(_encode(option) + b"\0" for option in options) + setenv_payload(env)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")
