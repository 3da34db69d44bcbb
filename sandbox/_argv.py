"""The bubblewrap argv of one session: mounts (RC-02), namespaces, cleared environment (RC-03).

Pure: nothing here reads a file or the environment, so tests compare lists.
Flags checked against bubblewrap 0.8.0 (``bwrap --help``, bwrap(1)).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Final, Literal

from ._layout import TOP_LEVEL_DIRS, HostLayout

if TYPE_CHECKING:
    from collections.abc import Sequence

HARNESS_MOUNT: Final = "/opt/harness/claude"
"""Where the harness executable appears inside the sandbox: a path of its own (RC-02)."""
EGRESS_MOUNT: Final = "/run/headwater/egress.sock"
"""Where the egress proxy's Unix socket appears inside a confined sandbox (RC-02)."""
NetworkMode = Literal["confined", "host"]
"""A session's network (``--network``): ``confined``, a private network namespace whose
only way out is the egress socket; ``host``, the host's network, shared (RC-05's one
admitted exception)."""
SandboxNetwork = Literal["confined", "host", "none"]
"""`NetworkMode`, plus ``none``: a private network namespace with no way out at all (a
loopback interface only), for what needs no network (the findings checker)."""

NAMESPACE_FLAGS: Final = (
    # SIGKILL the sandbox when the spawning *thread* dies (DESIGN.md, RC-05 block, BC-17)
    "--die-with-parent",
    "--new-session",  # setsid(): the session cannot push keystrokes into our terminal (TIOCSTI)
    "--unshare-user",
    # No user namespace inside (bwrap 0.8.0): every session of a root runner is the one user
    # headwater-session, and the kernel counts that user's namespaces host-wide
    # (user.max_user_namespaces): a session holding them all made every other session of
    # the host fail to start (bwrap: ENOSPC) while it ran. Without a user namespace a session,
    # which has no capability, can make no namespace of any kind.
    "--disable-userns",
    "--unshare-pid",  # pid 1 inside is bwrap itself, hence the empty environment and --args (RC-03)
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",  # skipped, not failed, on kernels without cgroup namespaces
)
"""Namespaces and process flags. ``--unshare-net`` is added unless ``network="host"``,
where the network namespace is shared, the one exception RC-05 admits."""

_SYSTEM_MOUNTS: Final = frozenset({"/", "/usr", "/etc", "/proc", "/dev", "/tmp", "/opt"})
"""Paths a session mount must never replace: binding a workspace here would hide the system."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Confinement:
    """What one session may see (RC-02). Host facts arrive measured; nothing is read here.

    Attributes:
        workspace: Host path of the sealed workspace; bound read-write at the
            same path, and the working directory of the command.
        harness: Host path of the harness executable, already resolved by the
            caller (``Path.resolve()``); bound read-only at ``harness_mount``.
        harness_mount: Absolute path of the harness inside the sandbox.
        log_dir: This session's own log directory, bound read-write at its path.
        config_dir: This session's config directory (`session_config_dir`),
            bound read-write at its path.
        host_layout: How the host has /bin, /lib, /lib64, /sbin (`measure_host_layout`).
        network: ``"confined"``: ``--unshare-net`` (only a loopback interface
            inside) and ``egress_socket`` bound read-only at `EGRESS_MOUNT`;
            the caller runs the bridge (`sandbox._init.session_init_command`).
            ``"none"``: ``--unshare-net`` and nothing bound: no way out.
            ``"host"``: the network namespace is shared (RC-05's one
            admitted exception).
        workspace_read_only: Bind the workspace read-only (``--ro-bind``):
            for what reads a session's workspace after it and must not change it.
        egress_socket: Host path of the session's egress proxy socket
            (`sandbox._egress.open_egress_proxy`); required with
            ``"confined"``, refused with ``"host"``.
        tmp_bytes: Size of the private ``/tmp`` in bytes (bwrap ``--size``), or
            None for tmpfs's own default (half the host's memory).

    Raises:
        ValueError: a path is relative, contains ``..``, or is a system mount
            point (``/``, ``/usr``, ``/etc``, ``/proc``, ``/dev``, ``/tmp``, ...);
            or ``network`` is not one of `SandboxNetwork`, or
            ``egress_socket`` is missing with ``"confined"`` or given with ``"host"``.
    """

    workspace: Path
    harness: Path
    harness_mount: str = HARNESS_MOUNT
    log_dir: Path
    config_dir: Path
    host_layout: HostLayout
    network: SandboxNetwork = "host"
    egress_socket: Path | None = None
    workspace_read_only: bool = False
    tmp_bytes: int | None = None

    def __post_init__(self) -> None:
        reserved = _SYSTEM_MOUNTS | {link for link, _ in self.host_layout.symlinks}
        reserved |= set(self.host_layout.directories)
        for field_name in ("workspace", "harness", "harness_mount", "log_dir", "config_dir"):
            _check_mount_path(field_name, str(getattr(self, field_name)), reserved)
        if self.network not in ("confined", "host", "none"):
            raise ValueError(f"network must be 'confined', 'host' or 'none', "
                             f"got {self.network!r}")
        if (self.network == "confined") != (self.egress_socket is not None):
            raise ValueError("network 'confined' needs an egress_socket, and only it takes one")
        if self.egress_socket is not None:
            _check_mount_path("egress_socket", str(self.egress_socket), reserved)
        if self.tmp_bytes is not None and self.tmp_bytes < 1:
            raise ValueError(f"tmp_bytes must be at least 1, got {self.tmp_bytes}")


def _check_mount_path(field_name: str, path: str, reserved: frozenset[str] | set[str]) -> None:
    pure = PurePosixPath(path)
    if not pure.is_absolute():
        raise ValueError(f"{field_name} must be an absolute path, got {path!r}")
    if ".." in pure.parts:
        raise ValueError(f"{field_name} must not contain '..', got {path!r}")
    if str(pure) in reserved:
        raise ValueError(f"{field_name} must not be the system mount point {str(pure)!r}")


def bwrap_argv(
    conf: Confinement, command: Sequence[str], *, bwrap: str = "bwrap", args_fd: int,
    seccomp_fd: int | None = None,
) -> list[str]:
    """Return the argv that runs ``command`` under bubblewrap with exactly the RC-02 mounts.

    Order matters and is fixed: namespace flags; ``/usr`` and ``/etc``
    read-only; /bin, /lib, /lib64, /sbin as the host has them (``--symlink
    TARGET LINK`` for a symlink, never a bind onto it; ``--ro-bind D D`` for a
    real directory); private ``/proc``, ``/dev``, ``/tmp`` (``--size`` before
    ``--tmpfs`` with ``tmp_bytes``; before any bind
    that may lie under /tmp, which would otherwise be hidden by the tmpfs);
    the workspace (read-only with ``workspace_read_only``), harness, log and
    config binds; with ``network="confined"`` or ``"none"``, ``--unshare-net``
    among the namespace flags, and for ``"confined"`` the egress socket bound
    read-only at `EGRESS_MOUNT` after the config bind; ``--clearenv``; then
    ``--args ARGS_FD``, which must come *after* ``--clearenv`` because bwrap
    applies both while parsing and ``--clearenv`` would wipe the variables
    (RC-03); ``--seccomp SECCOMP_FD`` when given (bwrap installs that filter,
    with no_new_privs, right before it runs the command); ``--chdir`` the
    workspace; ``--``; the command.

    No environment value, and so no secret, is on this argv: the caller writes
    `setenv_payload` to a pipe and passes its read end as ``args_fd``. Start
    bwrap with an empty environment: with ``--unshare-pid``, pid 1 inside the
    sandbox is bwrap, whose ``/proc/1/cmdline`` and ``/proc/1/environ`` the
    session can read (RC-03). bwrap reads the fd to EOF before it starts the
    command, so close the write end after writing.

    Args:
        conf: The confinement of one session.
        command: The command to run inside, ``command[0]`` an absolute path in
            the sandbox (e.g. ``conf.harness_mount``).
        bwrap: The bwrap executable (name or path), the first element.
        args_fd: File descriptor number, as the child will see it, from which
            bwrap reads the NUL-separated ``--setenv`` payload.
        seccomp_fd: File descriptor number from which bwrap reads the seccomp
            program (`sandbox._seccomp.session_filter`), or None for none.

    Returns:
        A new list; the caller may extend nothing after it (bwrap stops
        parsing its options at ``--``).

    Raises:
        ValueError: ``command`` is empty, ``command[0]`` is not absolute,
            ``bwrap`` is empty, or ``args_fd`` or ``seccomp_fd`` is negative.
    """
    if not command or not PurePosixPath(command[0]).is_absolute():
        raise ValueError(f"command[0] must be an absolute path, but got {list(command[:1])!r}")
    if not bwrap:
        raise ValueError("bwrap must name the bwrap executable, got an empty string")
    for name, fd in (("args_fd", args_fd), ("seccomp_fd", seccomp_fd)):
        if fd is not None and fd < 0:
            raise ValueError(f"{name} must be a file descriptor number >= 0, got {fd}")
    workspace, log_dir, config_dir = str(conf.workspace), str(conf.log_dir), str(conf.config_dir)
    argv = [bwrap, *NAMESPACE_FLAGS, *(["--unshare-net"] if conf.network != "host" else [])]
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    argv += _top_level_mounts(conf.host_layout)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += [*(["--size", str(conf.tmp_bytes)] if conf.tmp_bytes is not None else []),
             "--tmpfs", "/tmp"]
    argv += ["--ro-bind" if conf.workspace_read_only else "--bind", workspace, workspace]
    argv += ["--ro-bind", str(conf.harness), conf.harness_mount]
    argv += ["--bind", log_dir, log_dir]
    argv += ["--bind", config_dir, config_dir]
    if conf.egress_socket is not None:
        argv += ["--ro-bind", str(conf.egress_socket), EGRESS_MOUNT]
    argv += ["--clearenv", "--args", str(args_fd)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return [*argv, "--chdir", workspace, "--", *command]


def _top_level_mounts(layout: HostLayout) -> list[str]:
    """/bin, /lib, /lib64, /sbin as the host has them, in that order (RC-02, BC-16)."""
    targets = dict(layout.symlinks)
    mounts: list[str] = []
    for name in TOP_LEVEL_DIRS:
        if name in targets:
            mounts += ["--symlink", targets[name], name]
        elif name in layout.directories:
            mounts += ["--ro-bind", name, name]
    return mounts
