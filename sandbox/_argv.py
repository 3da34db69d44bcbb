"""The bubblewrap argv of one session: mounts (RC-02), namespaces, cleared environment (RC-03).

Pure: nothing here reads a file or the environment, so tests compare lists.
Flags checked against bubblewrap 0.8.0 (``bwrap --help``, bwrap(1)).
"""

from __future__ import annotations

import posixpath
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
CONFIG_MOUNT: Final = "/run/headwater/config"
"""Where a session's config directory (``HOME``, ``CLAUDE_CONFIG_DIR``) appears inside: one
path for every session, so nothing the session is told names it (RC-02, blind sessions)."""
LOG_MOUNT: Final = "/run/headwater/log"
"""Where a session's own log directory (``HEADWATER_LOG_DIR``) appears inside (RC-02)."""
NetworkMode = Literal["confined", "host"]
"""A session's network (``--network``): ``confined``, a private network namespace whose
only way out is the egress socket; ``host``, the host's network, shared (RC-05's one
admitted exception)."""
SandboxNetwork = Literal["confined", "host", "none"]
"""`NetworkMode`, plus ``none``: a private network namespace with no way out at all (a
loopback interface only), for what needs no network (the findings checker)."""

NAMESPACE_FLAGS: Final = (
    # SIGKILL the sandbox when the spawning *thread* dies (docs/confinement.md, BC-17)
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

READ_ONLY_ROOT: Final = ("--remount-ro", "/")
"""bwrap's root tmpfs (``/`` and the directories it makes for mount points: ``/opt``,
``/run``, ``/workspace``) read-only: it is unsized, so a session could fill the host's memory
there (docs/confinement.md "Disk"). Last of the mounts: a mount point made after it fails."""

WORKSPACE_PARENT: Final = "/workspace"
"""Where a batch's workspace path lies by default: ``/workspace/<the corpus root's name>``."""
_FALLBACK_NAME: Final = "corpus"
"""The default workspace path's last part when the corpus root's name is not a plain name."""
_SYSTEM_TREES: Final = ("/tmp", "/dev", "/proc", "/sys", "/usr", "/etc", "/bin", "/sbin",
                        "/lib", "/lib32", "/lib64", "/libx32", "/run", "/opt/harness", "/boot")
"""Trees a workspace path may not lie in: the sandbox's own mounts (``/tmp`` is also the
private scratch RC-08 exempts, ``/run/headwater`` holds the fixed mounts), and the host's
system directories."""

_SYSTEM_MOUNTS: Final = frozenset({"/", "/usr", "/etc", "/proc", "/dev", "/tmp", "/opt"})
"""Paths a session mount must never replace: binding a workspace here would hide the system."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Confinement:
    """What one session may see (RC-02). Host facts arrive measured; nothing is read here.

    Attributes:
        workspace: Host path of the sealed workspace; bound read-write at
            ``workspace_mount``, and the working directory of the command.
        harness: Host path of the harness executable, already resolved by the
            caller (``Path.resolve()``); bound read-only at ``harness_mount``.
        harness_mount: Absolute path of the harness inside the sandbox.
        log_dir: This session's own log directory, bound read-write at ``log_mount``.
        config_dir: This session's config directory (`session_config_dir`),
            bound read-write at ``config_mount``.
        workspace_mount, log_mount, config_mount: Where each appears inside;
            None binds it at its host path (the preflight's probes, the
            checker). A session's are fixed paths that name nothing of its
            arm, probe, session or batch (RC-02, blind sessions): the batch's
            workspace path, `CONFIG_MOUNT`, `LOG_MOUNT`.
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
            (`sandbox.network._egress.open_egress_proxy`); required with
            ``"confined"``, refused with ``"host"``.
        extra_ro_binds: Further read-only binds, ``(host path, inside path)`` each, made
            after the session's own mounts: nothing of the product asks for one (a session
            sees exactly RC-02's mounts); the census's replayed situations (docs/census.md)
            mount a fixture the recorded session had (an MCP server, a plugin directory).
            An inside path follows the workspace path's rule (`check_workspace_path`: not
            in a system tree) and shares no other mount's path.
        tmp_bytes: Size in bytes (bwrap ``--size``) of the private ``/tmp``, and
            again of the private ``/dev/shm`` (each is its own tmpfs of this size:
            docs/confinement.md "Disk"), or None for tmpfs's own default (half the
            host's memory).

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
    workspace_mount: str | None = None
    log_mount: str | None = None
    config_mount: str | None = None
    extra_ro_binds: tuple[tuple[Path, str], ...] = ()

    def __post_init__(self) -> None:
        reserved = _SYSTEM_MOUNTS | {link for link, _ in self.host_layout.symlinks}
        reserved |= set(self.host_layout.directories)
        for field_name in ("workspace", "harness", "harness_mount", "log_dir", "config_dir"):
            _check_mount_path(field_name, str(getattr(self, field_name)), reserved)
        for field_name in ("workspace_mount", "log_mount", "config_mount"):
            if (inside := getattr(self, field_name)) is not None:
                _check_mount_path(field_name, inside, reserved)
        for source, inside in self.extra_ro_binds:
            _check_mount_path("extra_ro_binds", str(source), reserved)
            check_workspace_path(inside)
        insides = [self.inside_workspace, self.inside_log_dir, self.inside_config_dir,
                   self.harness_mount, *(inside for _, inside in self.extra_ro_binds)]
        if len(set(insides)) != len(insides):
            raise ValueError(f"two mounts share one path inside the sandbox: {insides!r}")
        if self.network not in ("confined", "host", "none"):
            raise ValueError(f"network must be 'confined', 'host' or 'none', "
                             f"got {self.network!r}")
        if (self.network == "confined") != (self.egress_socket is not None):
            raise ValueError("network 'confined' needs an egress_socket, and only it takes one")
        if self.egress_socket is not None:
            _check_mount_path("egress_socket", str(self.egress_socket), reserved)
        if self.tmp_bytes is not None and self.tmp_bytes < 1:
            raise ValueError(f"tmp_bytes must be at least 1, got {self.tmp_bytes}")


    @property
    def inside_workspace(self) -> str:
        """The workspace's path inside the sandbox (the session's working directory)."""
        return self.workspace_mount or str(self.workspace)

    @property
    def inside_log_dir(self) -> str:
        """The log directory's path inside the sandbox."""
        return self.log_mount or str(self.log_dir)

    @property
    def inside_config_dir(self) -> str:
        """The config directory's path inside the sandbox."""
        return self.config_mount or str(self.config_dir)


def default_workspace_path(corpus_root_name: str) -> str:
    """The batch's workspace path when none is given: ``/workspace/<corpus_root_name>`` (RC-02).

    A name that is not plain (empty, ``.``/``..``, a ``/``, a control
    character or white space other than a space, or not printable) gives
    ``/workspace/corpus`` instead, so the path every session is told stays
    one ordinary line.
    """
    plain = (corpus_root_name not in ("", ".", "..") and "/" not in corpus_root_name
             and corpus_root_name.isprintable())
    return posixpath.join(WORKSPACE_PARENT, corpus_root_name if plain else _FALLBACK_NAME)


def check_workspace_path(path: str) -> str:
    """Return ``path`` normalised if it may be a batch's workspace path, else raise (RC-02).

    The workspace path is where every session of a batch sees its workspace
    (its working directory): absolute, printable, not ``/`` and not in one
    of the sandbox's or the host's system trees (``/tmp``, ``/dev``,
    ``/proc``, ``/sys``, ``/usr``, ``/etc``, ``/bin``, ``/lib``...,
    ``/run``, ``/opt/harness``, ``/boot``).

    Raises:
        ValueError: the path breaks one of these rules; the message says which.
    """
    if not path.startswith("/"):
        raise ValueError(f"the workspace path must be absolute, got {path!r}")
    if not path.isprintable():
        raise ValueError(f"the workspace path must be printable text, got {path!r}")
    if ".." in path.split("/"):
        raise ValueError(f"the workspace path must not contain '..', got {path!r}")
    normal = posixpath.normpath(path)
    if normal in ("/", "//"):
        raise ValueError("the workspace path must not be / itself")
    for tree in _SYSTEM_TREES:
        if normal == tree or normal.startswith(tree + "/"):
            raise ValueError(f"the workspace path {normal!r} lies in the system directory "
                             f"{tree}, which the sandbox mounts for itself or the host owns")
    return normal


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
    """Return bwrap's command line for ``command``: namespaces, ``--args FD``, the command.

    What the command line holds is what a session reads in ``/proc/1/cmdline``
    (with ``--unshare-pid``, pid 1 inside is bwrap), so it names nothing of
    the session: the namespace flags (``--unshare-net`` too unless
    ``network="host"``), ``--clearenv``, ``--args ARGS_FD``, ``--seccomp
    SECCOMP_FD`` when given, ``--``, the command. Every mount, whose source is
    a host path, and the working directory travel on the ``--args`` fd
    (`bwrap_options`), followed by the environment (RC-03); ``--args`` comes
    *after* ``--clearenv`` because bwrap applies both while parsing and
    ``--clearenv`` would wipe the variables. bwrap installs the seccomp
    program, with no_new_privs, right before it runs the command.

    Start bwrap with an empty environment (its ``/proc/1/environ`` is the
    session's to read too), write `args_payload` to a pipe and pass its read
    end as ``args_fd``. bwrap reads the fd to EOF before it starts the
    command, so close the write end after writing.

    Args:
        conf: The confinement of one session.
        command: The command to run inside, ``command[0]`` an absolute path in
            the sandbox (e.g. ``conf.harness_mount``).
        bwrap: The bwrap executable (name or path), the first element.
        args_fd: File descriptor number, as the child will see it, from which
            bwrap reads the NUL-separated options and ``--setenv`` payload.
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
    argv = [bwrap, *NAMESPACE_FLAGS, *(["--unshare-net"] if conf.network != "host" else [])]
    argv += ["--clearenv", "--args", str(args_fd)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return [*argv, "--", *command]


def bwrap_options(conf: Confinement) -> list[str]:
    """The mounts of ``conf``, exactly RC-02's, and its working directory, for the ``--args`` fd.

    Order matters and is fixed: ``/usr`` and ``/etc`` read-only; /bin, /lib,
    /lib64, /sbin as the host has them (``--symlink TARGET LINK`` for a
    symlink, never a bind onto it; ``--ro-bind D D`` for a real directory);
    private ``/proc``; ``/dev``, its ``/dev/shm`` a tmpfs of its own
    (``--size`` ``tmp_bytes``), then ``/dev`` remounted read-only; ``/tmp``
    (``--size`` before ``--tmpfs`` with ``tmp_bytes``; before any bind that
    may lie under /tmp, which would otherwise be hidden by the tmpfs); the
    workspace at its inside path (read-only with ``workspace_read_only``), the
    harness, the log and config directories at theirs; for
    ``network="confined"`` the egress socket read-only at `EGRESS_MOUNT`;
    each of ``extra_ro_binds`` read-only (none for a session); `READ_ONLY_ROOT`,
    after every mount that makes a mount point in the root;
    ``--chdir`` the workspace's inside path.

    What stays writable inside is then exactly the workspace, log and config
    directories, ``/tmp`` and ``/dev/shm`` (each sized), and ``/dev/pts``
    (devpts: terminals, no files): bwrap's own root tmpfs (``/``, and ``/opt``,
    ``/run``, ``/workspace`` in it) and the tmpfs of ``/dev`` are unsized, so
    they are read-only (EROFS; docs/confinement.md "Disk").

    Never on the command line (`bwrap_argv`): a bind's source is a host path,
    which for a session's directories would name its batch. Pure.

    Returns:
        A new list of bwrap options; `args_payload` encodes it.
    """
    workspace = conf.inside_workspace
    options = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    options += _top_level_mounts(conf.host_layout)
    size = ["--size", str(conf.tmp_bytes)] if conf.tmp_bytes is not None else []
    options += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm",
                "--remount-ro", "/dev"]
    options += [*size, "--tmpfs", "/tmp"]
    options += ["--ro-bind" if conf.workspace_read_only else "--bind", str(conf.workspace),
                workspace]
    options += ["--ro-bind", str(conf.harness), conf.harness_mount]
    options += ["--bind", str(conf.log_dir), conf.inside_log_dir]
    options += ["--bind", str(conf.config_dir), conf.inside_config_dir]
    if conf.egress_socket is not None:
        options += ["--ro-bind", str(conf.egress_socket), EGRESS_MOUNT]
    for source, inside in conf.extra_ro_binds:
        options += ["--ro-bind", str(source), inside]
    return [*options, *READ_ONLY_ROOT, "--chdir", workspace]


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
