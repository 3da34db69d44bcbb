"""What a sandbox runs and how: `ConfinedSpec`, validated when made, and its `ConfinedDirs`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from .._argv import HARNESS_MOUNT, SandboxNetwork
from .._init import BRIDGE_PORT, SOCAT
from .._layout import HostLayout
from ..cgroup import CgroupHost, LimitHit, Limits
from ..users import SessionPool, SessionUser

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = ["ConfinedDirs", "ConfinedSpec"]


@dataclass(frozen=True, slots=True)
class ConfinedDirs:
    """The host directories a sandbox binds read-write (each at its own path)."""

    workspace: Path
    """The working directory; read-only inside with ``workspace_read_only``."""
    log_dir: Path
    """The session's own log directory (``HEADWATER_LOG_DIR``)."""
    config_dir: Path
    """The session's config directory (``HOME``, ``CLAUDE_CONFIG_DIR``)."""


def _no_env(dirs: ConfinedDirs) -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfinedSpec:
    """What to run in a sandbox and how (`sandbox.confined`). Frozen; validated when made.

    Attributes:
        command: The command inside; ``command[0]`` an absolute path in the
            sandbox (e.g. ``mount``).
        executable: Host path of the file bound read-only at ``mount`` (the
            harness, the checker, a probe's tool); resolved here.
        network: `SandboxNetwork`: ``confined`` needs ``egress_socket`` (the
            bridge starts first), ``none`` has no way out, ``host`` shares the
            host's network (RC-05's one admitted exception).
        env: The whole environment inside, or a function of the directories
            (a scratch directory's path is known only once it is made). It
            travels on ``--args FD``, never on the command line (RC-03).
        mount: Where ``executable`` appears inside.
        bwrap: The bwrap executable, a name on PATH or a path.
        layout: How the host has /bin, /lib, /lib64, /sbin; None measures ``/``.
        user: Who the sandbox runs as: a root runner's pool (`sandbox.users._pool`),
            of which it leases a user for its life; a session user whose lease
            the caller holds (a session's, for its findings checker too;
            `sandbox.users._lease.lease_user`); or None for the runner itself (a
            runner that is not root).
        workspace, log_dir, config_dir: Host directories; None makes a scratch
            one, removed on exit. Given ones are the caller's to keep.
        workspace_mount, log_mount, config_mount: Where each appears inside;
            None: at its host path. A session's are fixed paths that name
            nothing of it (RC-02, blind sessions); ``env`` must then name the
            inside paths.
        extra_ro_binds: Further read-only binds, ``(host path, inside path)`` each
            (`sandbox._argv.Confinement`): none for a session; the census's replayed
            situations mount their fixtures so. Each source must be readable by the user
            (a file also executable: `sandbox.users.hand_over`'s reach).
        workspace_read_only: Bind the workspace read-only (and do not hand it
            over: it stays the session's).
        egress_socket: The session's egress proxy socket (`sandbox.network._egress`).
        reclaim_log: Replace a given log directory by the runner's copy of its
            regular files on exit (False: the caller copies it elsewhere, as a
            session from its store does, `sandbox.storage._reclaim.copy_regular`).
        socat: The bridge's socat (with ``network="confined"``).
        bridge_port: The bridge's loopback port inside (the namespace is
            private; tests pick a unique one to find the bridge by its argv).
        limits: Resource limits (`sandbox.cgroup._limits.Limits`): ``pids`` and
            ``memory_bytes`` in its cgroups, ``tmp_bytes`` as bwrap ``--size``,
            ``open_files`` as ``RLIMIT_NOFILE``, ``write_bytes`` watched over
            the workspace, log and config directories (`sandbox.cgroup._watch`);
            ``connections`` is the egress proxy's (`sandbox.network._egress`).
        file_bytes: ``RLIMIT_FSIZE`` (soft and hard, bytes, rounded up to 512) of every
            process in it, set by the join shell before bwrap starts, or None for the
            runner's own: a runner that is not root sets it to bound each file its
            session writes, since no store of its own bounds them (docs/storage.md).
        limit_checks: The caller's own limit checks, polled by the watch while
            it runs (each returns a `LimitHit` once passed: the egress proxy's
            connection cap).
        cgroups: This host's cgroup hierarchies; None finds them (once per process).
        name: A short label for the scratch directory's and the cgroup's names.

    Raises:
        ValueError: ``command`` is empty or relative, ``egress_socket`` is
            missing with ``network="confined"`` or given without it.
    """

    command: Sequence[str]
    executable: Path
    network: SandboxNetwork
    env: Mapping[str, str] | Callable[[ConfinedDirs], Mapping[str, str]] = _no_env
    mount: str = HARNESS_MOUNT
    bwrap: str = "bwrap"
    layout: HostLayout | None = None
    user: SessionUser | SessionPool | None = None
    workspace: Path | None = None
    workspace_read_only: bool = False
    log_dir: Path | None = None
    config_dir: Path | None = None
    workspace_mount: str | None = None
    log_mount: str | None = None
    config_mount: str | None = None
    extra_ro_binds: Sequence[tuple[Path, str]] = ()
    egress_socket: Path | None = None
    socat: str = SOCAT
    bridge_port: int = BRIDGE_PORT
    reclaim_log: bool = True
    limits: Limits = field(default_factory=Limits)
    limit_checks: Sequence[Callable[[], LimitHit | None]] = ()
    file_bytes: int | None = None
    cgroups: CgroupHost | None = None
    name: str = "probe"

    def __post_init__(self) -> None:
        if not self.command or not self.command[0].startswith("/"):
            raise ValueError(f"command[0] must be an absolute path, got {list(self.command[:1])}")
        if (self.network == "confined") != (self.egress_socket is not None):
            raise ValueError("network 'confined' needs an egress_socket, and only it takes one")
