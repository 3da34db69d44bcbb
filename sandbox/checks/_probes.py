"""The preflight's confined probes: a command run like a session, in throwaway directories.

A probe runs under a session's exact recipe (`open_confined`: the RC-02
mounts, the ``--args FD`` environment, the init shell with its lifeline, the
privilege drop of `sandbox.users._privileges`) in scratch directories handed to the
session user, so what would fail a session fails here first (BC-16). Its
output is captured bounded (`sandbox._capture`); from synchronous code it
runs through the sync shim (`run_sync`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .._argv import HARNESS_MOUNT
from .._capture import Run, capture
from .._env import session_environment
from .._errors import SpawnFailed
from .._sync import run_sync
from ..confined import ConfinedDirs, ConfinedSpec, open_confined

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from .._layout import HostLayout
    from ..users import SessionUser

__all__ = ["PROBE_PYTHON", "STDERR_TAIL_CHARS", "Run", "probe_spec", "run_confined"]

PROBE_PYTHON: Final = "/usr/bin/python3"
"""The interpreter the preflight's Python probes run with inside (Debian's, under /usr: mounted)."""

STDERR_TAIL_CHARS: Final = 2000
"""How much of bwrap's own message a check quotes."""


def probe_spec(
    *,
    bwrap: str,
    layout: HostLayout,
    executable: Path,
    command: Sequence[str],
    user: SessionUser | None,
    provider_url: str | None = None,
    api_key: str | None = None,
) -> ConfinedSpec:
    """A session's spec for ``command`` with ``executable`` at the harness mount, in scratch dirs.

    The environment is a session's (`session_environment` of the scratch
    config and log directories), naming ``provider_url`` and ``api_key`` when
    given (the skills probe passes a dead loopback port and a placeholder:
    nothing is spent). The network is the host's, as for ``--network host``
    (the network check probes a confined one).
    """

    def env(dirs: ConfinedDirs) -> Mapping[str, str]:
        return session_environment(
            config_dir=dirs.config_dir, log_dir=dirs.log_dir, provider_url=provider_url,
            provider_key=None if api_key is None else ("ANTHROPIC_API_KEY", api_key))

    return ConfinedSpec(command=list(command), executable=executable, mount=HARNESS_MOUNT,
                        network="host", env=env, bwrap=bwrap, layout=layout, user=user,
                        name="preflight")  # fmt: skip


def run_confined(spec: ConfinedSpec, *, timeout_s: float) -> Run:
    """Run ``spec`` to its end (at most ``timeout_s`` seconds) and capture its output.

    Synchronous: for the preflight (`run_sync`; never from a thread running a loop).

    Returns:
        The `Run`; bwrap that cannot be started is a `Run` without status and
        the reason in ``stderr``.

    Raises:
        SessionUserUnusable: ``spec.executable`` cannot be made reachable for the user.
    """

    async def run() -> Run:
        try:
            async with open_confined(spec) as sandbox:
                return await capture(sandbox.child, timeout_s=timeout_s)
        except SpawnFailed as exc:
            return Run(returncode=None, stdout="", stderr=str(exc))

    return run_sync(run)
