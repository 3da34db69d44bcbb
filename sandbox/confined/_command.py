"""A sandbox's command line and its spawn: the join, the drop, bwrap, the init shell.

Steps 4 to 7 of `sandbox.confined`: the command wrapped in the session's init
shell and its Landlock domain, the argv (the join into the cgroups, the
privilege drop, bwrap with the network option and the seccomp filter), the
RC-02 mounts and the environment on the ``--args FD`` payload and the filter
on the ``--seccomp FD`` one (nothing of either on the command line, RC-03),
and the spawn on the calling thread, the event loop's own.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from .._argv import Confinement, bwrap_argv, bwrap_options
from .._env import args_payload
from .._init import session_init_command
from .._landlock import scoped_command
from .._layout import HostLayout
from .._payload import payload_pipe
from .._process import Child, spawn
from ..users import SessionUser, drop_argv

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..cgroup import SessionCgroup
    from ._spec import ConfinedDirs, ConfinedSpec

__all__ = ["confinement", "spawn_confined"]


def spawn_confined(spec: ConfinedSpec, *, user: SessionUser | None, cgroup: SessionCgroup,
                   conf: Confinement, env: Mapping[str, str], executable: str,
                   seccomp: bytes) -> tuple[Child, list[str]]:
    """Spawn ``spec``'s command in its sandbox, on the calling thread (the loop's own).

    The payload pipes are closed once the child has them. Returns the child
    (bwrap after the join and the drop, the lifeline as its stdin, both output
    pipes) and its argv.

    Raises:
        SpawnFailed: the command cannot be executed, or a payload does not fit its pipe.
        ValueError: the environment is too large for one pipe buffer.
    """
    with ExitStack() as fds:
        args_fd = fds.enter_context(payload_pipe(args_payload(bwrap_options(conf), env)))
        seccomp_fd = fds.enter_context(payload_pipe(seccomp))
        argv = [*cgroup.join_argv(open_files=spec.limits.open_files, file_bytes=spec.file_bytes),
                *drop_argv(user),
                *_bwrap_argv(spec, executable, conf, args_fd=args_fd, seccomp_fd=seccomp_fd)]
        return spawn(argv, stdin="lifeline", pass_fds=(args_fd, seccomp_fd)), argv


def confinement(spec: ConfinedSpec, dirs: ConfinedDirs, layout: HostLayout,
                 bound: Path) -> Confinement:
    """What ``spec``'s sandbox mounts, and where (RC-02)."""
    return Confinement(
        workspace=dirs.workspace, harness=bound, harness_mount=spec.mount, log_dir=dirs.log_dir,
        config_dir=dirs.config_dir, host_layout=layout, network=spec.network,
        egress_socket=spec.egress_socket, workspace_read_only=spec.workspace_read_only,
        tmp_bytes=spec.limits.tmp_bytes, workspace_mount=spec.workspace_mount,
        log_mount=spec.log_mount, config_mount=spec.config_mount,
        extra_ro_binds=tuple((source.resolve(), inside)
                             for source, inside in spec.extra_ro_binds),
    )  # fmt: skip


def _bwrap_argv(spec: ConfinedSpec, executable: str, conf: Confinement, *, args_fd: int,
                seccomp_fd: int) -> list[str]:
    """bwrap's command line for ``spec``: the init shell around the command in its Landlock
    domain (`sandbox._landlock`); the mounts go on the ``--args`` fd (`bwrap_options`)."""
    command = session_init_command(scoped_command(spec.command), lifeline=True,
                                   bridge=spec.network == "confined", socat=spec.socat,
                                   port=spec.bridge_port)  # fmt: skip
    return bwrap_argv(conf, command, bwrap=executable, args_fd=args_fd, seccomp_fd=seccomp_fd)
