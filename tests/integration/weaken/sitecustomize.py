"""Weaken the confinement on purpose, to see the confinement suites go red.

Never imported by the product or by a normal test run. To use it, put this
directory first on ``PYTHONPATH`` and name the weakenings in ``HW_WEAKEN``
(comma-separated); every Python process of the run (pytest and the CLI it
starts) then patches the runner at start-up, before the runner's modules
import what they patch::

    HW_WEAKEN=bind-home PYTHONPATH=tests/integration/weaken \\
        .venv/bin/python -m pytest tests/integration/test_escapes.py

Weakenings, and the tests each one must turn red:

- ``bind-home``: binds the runner's ``$HOME`` read-only at its path
  (escapes: home, credentials, symlink).
- ``bind-batch``: binds the batch directory read-only at its path
  (escapes: batch, neighbour, ``..``).
- ``bind-checkout``: binds the runner's checkout read-only (escapes: runner's files).
- ``host-paths``: binds a session's workspace, log and config directories at their host
  paths too, and starts it in its workspace's host path, as before the fixed paths (blind
  sessions: the working directory names the arm, probe, session and batch; blind lookup:
  ``pwd`` is the store's host path).
- ``options-on-argv``: puts the mounts on bwrap's command line instead of its ``--args``
  fd, as before (blind sessions, blind lookup: ``/proc/1/cmdline`` names every bind's host
  source).
- ``leak-env``: starts bwrap with the runner's environment, ``--clearenv`` kept
  (escapes: /proc/1/environ, the canary in the batch); with ``no-clearenv`` too,
  the session's own ``env`` shows it.
- ``setenv-key``: passes the session's variables with ``--setenv`` on bwrap's
  command line (escapes: /proc/1/cmdline).
- ``no-drop``: a root runner's sessions are started as for a non-root runner
  (no setpriv, no hand-over): bwrap runs as root (no_root).
- ``no-uid-pool``: every lease hands out the pool's first user, ``headwater-session``,
  at once, to every sandbox that asks, whoever else runs as it: all sessions share one uid,
  as before the pool (shared uid attack: a session that takes all its user's inotify
  instances leaves none to the session running beside it).
- ``no-pid``: drops ``--unshare-pid`` (containment).
- ``no-die``: drops ``--die-with-parent`` (containment, runner SIGKILLed).
- ``keep-config``: never removes a session's config directory (credentials lifecycle).
- ``no-sweep``: start-up sweeps nothing (credentials lifecycle, runner SIGKILLed).
- ``no-lifeline``: the session's init shell watches no lifeline, and the sandbox's
  stdin is /dev/null (containment: the runner killed within milliseconds of the spawn).
- ``no-seccomp``: a session's bwrap gets no ``--seccomp`` filter (attack: ptrace of bwrap's
  pid 1); the preflight's probes keep it, or the preflight would refuse to start sessions.
- ``no-cgroup``: no session gets a cgroup: no join, no ``cgroup.kill`` at its end (the
  preflight's probes keep theirs)
  (attack, with ``no-seccomp``: pid 1 and the daemon outlive ``record``; after the
  session, with ``no-seccomp``: a survivor rewrites a produced file after its digest).
- ``no-landlock``: a session's harness runs outside any Landlock domain (attack: it opens
  bwrap's pid 1's ``/proc/1/mem`` and SIGKILLs its lifeline watcher); the preflight's probes
  keep theirs, or the preflight would refuse to start sessions.
- ``no-reclaim``: after a session its workspace and log stay as it left them (after the
  session: a setuid file of the session user, its writes, the log's modes).
- ``open-batch``: batch directories are made 0755, as they were (after the session: an
  unprivileged host user reaches the session's files).
- ``no-conn-cap``: the egress proxy takes any number of connections from a session (egress
  attack: a flood is not ended at its cap).
- ``no-host-check``: the egress proxy as it was: any Host (but the network preflight's own
  probe's), the client's bytes after its request and a tunnel's first bytes relayed unread
  (egress attack: they reach the provider).
- ``no-limits``: every sandbox runs without its limits: no pids or memory cgroup, no
  ``--size`` for /tmp, no ``RLIMIT_NOFILE``, no watch (limits attack: every attack runs
  to its end and is recorded).
- ``no-argument-bound``: the bounds on what one call's argument, and one session's, may add
  to the record are raised to 1 Gi characters, as if there were none (argument attack:
  every huge call is kept, and the runner dies against its memory cap).

One instrument, not a weakening: with ``HW_KILL_AFTER_SPAWN_S=S`` set, a runner
SIGKILLs itself S seconds after it spawned a session's sandbox (0: at once, on
the spawning thread), to hit the moments bwrap is still setting itself up.
``HW_KILL_AFTER_SPAWN_OF=checker`` picks the findings checker's sandbox instead.
Another: with ``HW_UNCONTAINED=1`` set, every session's cgroup (not a probe's or the
checker's) is ended as always (killed, waited for, removed) and then reported not contained,
as if a process had outlived the kill's bound: what the runner does then (after the kill:
the session ends ``uncontained`` and nothing it left is read) is seen without a process the
kernel cannot end. Another: with ``HW_USAGE_LOG=FILE`` set, every sandbox with limits
appends one JSON line to FILE when it ends: its cgroup's name and the most it used
(``pids``, ``memory_bytes``, ``tmp_bytes``, ``write_bytes``): how the default limits'
headroom was measured (docs/host.md, "Limits").

Every sandbox is started by `sandbox.open_confined`, which builds its argv with
`sandbox._argv.bwrap_argv` and `sandbox._init.session_init_command` and spawns it
with `sandbox._process.spawn` (``subprocess.Popen``). The patches replace those
module attributes as each module is imported (an import hook: importing the
runner's modules here, before pytest starts, would import anyio before pytest
can rewrite its plugin's assertions), and watch ``Popen`` for a bwrap argv.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

WEAKEN = {name for name in os.environ.get("HW_WEAKEN", "").split(",") if name}
CHECKOUT = Path(__file__).resolve().parents[3]
_PATCHES: dict[str, list[Callable[[ModuleType], None]]] = {}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for patch in _PATCHES.pop(self._name, []):
            patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ...: the real loader's
        return getattr(self._loader, name)


class _PatchingFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Sequence[str] | None, target: Any = None) -> Any:
        if name not in _PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, name)
                return spec
        return None


def _after_import(name: str, patch: Callable[[ModuleType], None]) -> None:
    """Run ``patch(module)`` right after module ``name`` is first executed."""
    if name in sys.modules:
        patch(sys.modules[name])
        return
    if not any(isinstance(f, _PatchingFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchingFinder())
    _PATCHES.setdefault(name, []).append(patch)


def _is_bwrap(args: Any) -> bool:
    """A sandbox's spawn: bwrap somewhere in the argv (after a privilege drop, say)."""
    return any(os.path.basename(str(arg)) == "bwrap" for arg in list(args))


def _insert_before(argv: list[str], marker: str, extra: list[str]) -> list[str]:
    at = argv.index(marker)
    return [*argv[:at], *extra, *argv[at:]]


_LAST_ENV: dict[str, str] = {}


def _weaken_env(env_module: ModuleType) -> None:
    original_env = env_module.session_environment

    def session_environment(**kwargs: Any) -> dict[str, str]:
        env = original_env(**kwargs)
        _LAST_ENV.clear()
        _LAST_ENV.update(env)
        return dict(env)

    setattr(env_module, "session_environment", session_environment)  # noqa: B010


def _weaken_argv(argv_module: ModuleType) -> None:
    original = argv_module.bwrap_argv
    original_options = argv_module.bwrap_options
    last_env = _LAST_ENV

    def weakened_options(conf: Any) -> list[str]:
        options: list[str] = list(original_options(conf))
        extra: list[str] = []
        if "bind-home" in WEAKEN:
            home = os.environ["HOME"]
            extra += ["--ro-bind", home, home]
        if "bind-checkout" in WEAKEN:
            extra += ["--ro-bind", str(CHECKOUT), str(CHECKOUT)]
        parents = Path(conf.workspace).parents
        if "bind-batch" in WEAKEN and len(parents) > 4 and parents[3].name == "sessions":
            batch = str(parents[4])  # <batch>/sessions/<arm>/<probe>/<session>/workspace
            extra += ["--ro-bind", batch, batch]
        if "host-paths" in WEAKEN and conf.workspace_mount is not None:
            # The old mount put back: each directory at its host path too, the session in it.
            for host in (conf.workspace, conf.log_dir, conf.config_dir):
                extra += ["--bind", str(host), str(host)]
            options[-1] = str(conf.workspace)  # --chdir <host path>
        return [*options[:-2], *extra, *options[-2:]]

    def bwrap_options(conf: Any) -> list[str]:
        # options-on-argv: the mounts go on the command line instead of the --args fd (bwrap
        # refuses them twice: a second --symlink at /bin exists already).
        return [] if "options-on-argv" in WEAKEN else weakened_options(conf)

    def bwrap_argv(conf: Any, command: Any, **kwargs: Any) -> list[str]:
        argv: list[str] = list(original(conf, command, **kwargs))
        if "no-clearenv" in WEAKEN:
            argv.remove("--clearenv")
        if "no-seccomp" in WEAKEN and "--seccomp" in argv and _runs_harness(command):
            at = argv.index("--seccomp")
            del argv[at : at + 2]
        if "setenv-key" in WEAKEN:
            pairs = [part for name, value in last_env.items() for part in ("--setenv", name, value)]
            argv = _insert_before(argv, "--", pairs)
        if "options-on-argv" in WEAKEN:  # the mounts on the command line, as they were
            argv = _insert_before(argv, "--clearenv", weakened_options(conf))
        return argv

    setattr(argv_module, "bwrap_options", bwrap_options)  # noqa: B010
    setattr(argv_module, "bwrap_argv", bwrap_argv)  # noqa: B010
    flags = tuple(argv_module.NAMESPACE_FLAGS)
    if "no-pid" in WEAKEN:
        flags = tuple(f for f in flags if f != "--unshare-pid")
    if "no-die" in WEAKEN:
        flags = tuple(f for f in flags if f != "--die-with-parent")
    setattr(argv_module, "NAMESPACE_FLAGS", flags)  # noqa: B010


def _weaken_spawn() -> None:
    """Start bwrap with the runner's environment instead of an empty one (patching Popen,
    not the driver: importing the driver here would import anyio before pytest can
    rewrite its assertions)."""
    import subprocess

    original = subprocess.Popen.__init__

    def init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        if kwargs.get("env") == {} and _is_bwrap(args):
            kwargs["env"] = dict(os.environ)
        original(self, args, *rest, **kwargs)

    setattr(subprocess.Popen, "__init__", init)  # noqa: B010


def _weaken_init(init_module: ModuleType) -> None:
    """No lifeline watcher: the init shell is built without it."""
    original_command = init_module.session_init_command

    def session_init_command(command: Any, **kwargs: Any) -> list[str]:
        return list(original_command(command, **{**kwargs, "lifeline": False}))

    setattr(init_module, "session_init_command", session_init_command)  # noqa: B010


def _weaken_lifeline() -> None:
    """No lifeline: the init shell is built without it and bwrap's stdin is /dev/null."""
    import subprocess

    _after_import("sandbox._init", _weaken_init)
    original = subprocess.Popen.__init__

    def init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        if isinstance(kwargs.get("stdin"), int) and kwargs["stdin"] >= 0 and _is_session(args):
            kwargs["stdin"] = subprocess.DEVNULL
        original(self, args, *rest, **kwargs)

    setattr(subprocess.Popen, "__init__", init)  # noqa: B010


def _is_session(args: Any) -> bool:
    """A session's sandbox (not a preflight probe): bwrap running the stream-json harness."""
    return _is_bwrap(args) and "stream-json" in [str(arg) for arg in list(args)]


def _is_checker(args: Any) -> bool:
    """The findings checker's sandbox: bwrap running the checker's mount."""
    return _is_bwrap(args) and "/opt/headwater/checker" in [str(arg) for arg in list(args)]


def _kill_after_spawn(delay_s: float) -> None:
    import signal
    import subprocess
    import threading

    original = subprocess.Popen.__init__

    of = os.environ.get("HW_KILL_AFTER_SPAWN_OF", "session")

    def init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        original(self, args, *rest, **kwargs)
        if _is_session(args) if of == "session" else _is_checker(args):
            if delay_s <= 0:
                os.kill(os.getpid(), signal.SIGKILL)
            threading.Timer(delay_s, os.kill, (os.getpid(), signal.SIGKILL)).start()

    setattr(subprocess.Popen, "__init__", init)  # noqa: B010


class _NoCgroup:
    """Stands in for a sandbox's cgroup: joins nothing, kills nothing, limits nothing."""

    path = Path("/nonexistent-cgroup")
    groups: tuple[Any, ...] = ()
    final_events: dict[str, int] = {}  # noqa: RUF012

    def join_argv(self, **kwargs: Any) -> list[str]:
        return []

    def populated(self) -> bool:
        return False

    def procs(self) -> list[int]:
        return []

    def kill(self) -> None:
        pass

    async def end(self, *, bound_s: float = 0.0) -> bool:
        return True


_PREFLIGHT_LABELS = frozenset({"preflight", "netcheck", "checker"})
"""Sandboxes that are not sessions: the preflight's probes (which must still find what
they check, or no session would start) and the findings checker."""


def _runs_harness(command: Any) -> bool:
    """A session's command (the harness in stream-json), not a preflight probe's."""
    return "stream-json" in [str(part) for part in command]


def _weaken_cgroup(confined: ModuleType) -> None:
    """Sessions get no cgroup; the preflight's own probes keep theirs (it exercises them)."""
    original = confined.open_session_cgroup

    def open_session_cgroup(host: Any, label: str, *args: Any, **kwargs: Any) -> Any:
        if label in _PREFLIGHT_LABELS:
            return original(host, label, *args, **kwargs)
        return _NoCgroup()

    setattr(confined, "open_session_cgroup", open_session_cgroup)  # noqa: B010


def _weaken_landlock(confined: ModuleType) -> None:
    """Sessions' harnesses are executed as they are; the preflight's probes keep the domain."""
    original = confined.scoped_command

    def scoped_command(command: Any, **kwargs: Any) -> list[str]:
        return list(command) if _runs_harness(command) else original(command, **kwargs)

    setattr(confined, "scoped_command", scoped_command)  # noqa: B010


def _weaken_reclaim(confined: ModuleType) -> None:
    setattr(confined, "reclaim", lambda spec: None)  # noqa: B010


def _weaken_limits(confined: ModuleType) -> None:
    import dataclasses

    from sandbox.cgroup import Limits

    original = confined.open_confined
    unlimited = Limits()

    def open_confined(spec: Any, **kwargs: Any) -> Any:
        return original(dataclasses.replace(spec, limits=unlimited), **kwargs)

    setattr(confined, "open_confined", open_confined)  # noqa: B010


def _weaken_egress(egress: ModuleType) -> None:
    if "no-conn-cap" in WEAKEN:
        original_init = egress.EgressProxy.__init__

        def init(self: Any, allowed: Any, socket_path: Any, max_connections: Any = None) -> None:
            original_init(self, allowed, socket_path, None)

        setattr(egress.EgressProxy, "__init__", init)  # noqa: B010
    if "no-host-check" in WEAKEN:
        def refusal(request: Any, allowed: Any) -> str | None:
            if "headwater-spoofed.invalid" in request.hosts:  # spare the network preflight's
                return f"{request.target} with Host headwater-spoofed.invalid"  # own probe
            return None if request.target == allowed else str(request.target)

        async def client_hello(self: Any, reader: Any, target: Any) -> bytes:
            with contextlib.suppress(Exception):
                return bytes(await reader.receive(65536))
            return b""

        async def forward_once(reader: Any, client: Any, upstream: Any, length: int,
                               on_more: Any) -> None:
            await egress.splice(reader, client, upstream)

        setattr(egress, "refusal", refusal)  # noqa: B010
        setattr(egress.EgressProxy, "_client_hello", client_hello)  # noqa: B010
        setattr(egress, "forward_once", forward_once)  # noqa: B010


def _weaken_arguments(transform: ModuleType) -> None:
    setattr(transform, "MAX_CALL_ARGUMENT_CHARS", 1 << 30)  # noqa: B010
    setattr(transform, "MAX_SESSION_ARGUMENT_CHARS", 1 << 30)  # noqa: B010


def _weaken_batch_dir(batch_dir: ModuleType) -> None:
    setattr(batch_dir, "BATCH_DIR_MODE", 0o755)  # noqa: B010


def _weaken_privileges(pool: ModuleType) -> None:
    # The runner takes itself for a non-root one: no pool, no drop, no hand-over.
    setattr(pool, "session_pool", lambda euid=None: None)  # noqa: B010
    setattr(pool, "session_user", lambda euid=None: None)  # noqa: B010


def _weaken_lease(lease: ModuleType) -> None:
    """Every lease is the pool's first user, at once: no lock, no look for its processes."""

    def try_lease(pool: Any, **kwargs: Any) -> tuple[Any, dict[str, list[int]]]:
        return lease.Lease(pool.users[0], os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)), {}

    setattr(lease, "try_lease", try_lease)  # noqa: B010


def _weaken_config(config: ModuleType) -> None:
    if "keep-config" in WEAKEN:
        setattr(config, "remove_tree", lambda path: None)  # noqa: B010
    if "no-sweep" in WEAKEN:
        setattr(config, "sweep_config_root", lambda root=config.CONFIG_ROOT: [])  # noqa: B010


def _log_usage(watch_module: ModuleType) -> None:
    import json

    original = watch_module.LimitWatch.check_after

    def check_after(self: Any) -> Any:
        hit = original(self)
        line = {"sandbox": self._cgroup.path.name, **self.peaks,
                "hit": None if hit is None else hit.limit}  # fmt: skip
        with open(os.environ["HW_USAGE_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\n")
        return hit

    setattr(watch_module.LimitWatch, "check_after", check_after)  # noqa: B010


def _report_uncontained(confined: ModuleType) -> None:
    """A session's cgroup end does its work, then says a process outlived the bound."""
    original = confined.open_session_cgroup

    def open_session_cgroup(host: Any, label: str, *args: Any, **kwargs: Any) -> Any:
        cgroup = original(host, label, *args, **kwargs)
        if label in _PREFLIGHT_LABELS:
            return cgroup
        end = cgroup.end

        async def uncontained_end(**end_kwargs: Any) -> bool:
            await end(**end_kwargs)
            return False

        cgroup.end = uncontained_end
        return cgroup

    setattr(confined, "open_session_cgroup", open_session_cgroup)  # noqa: B010


if os.environ.get("HW_UNCONTAINED"):
    _after_import("sandbox.confined._open", _report_uncontained)
if "HW_USAGE_LOG" in os.environ:
    _after_import("sandbox.cgroup._watch", _log_usage)
if "HW_KILL_AFTER_SPAWN_S" in os.environ:
    _kill_after_spawn(float(os.environ["HW_KILL_AFTER_SPAWN_S"]))
if WEAKEN:
    _after_import("sandbox._env", _weaken_env)
    _after_import("sandbox._argv", _weaken_argv)
    if "no-lifeline" in WEAKEN:
        _weaken_lifeline()
    if "leak-env" in WEAKEN:
        _weaken_spawn()
    if "no-drop" in WEAKEN:
        _after_import("sandbox.users._pool", _weaken_privileges)
    if "no-uid-pool" in WEAKEN:
        _after_import("sandbox.users._lease", _weaken_lease)
    if "no-cgroup" in WEAKEN:
        _after_import("sandbox.confined._open", _weaken_cgroup)
    if "no-landlock" in WEAKEN:
        _after_import("sandbox.confined._command", _weaken_landlock)
    if "no-reclaim" in WEAKEN:
        _after_import("sandbox.confined._open", _weaken_reclaim)
    if WEAKEN & {"no-conn-cap", "no-host-check"}:
        _after_import("sandbox.network._egress", _weaken_egress)
    if "no-limits" in WEAKEN:
        _after_import("sandbox.confined._open", _weaken_limits)
    if "open-batch" in WEAKEN:
        _after_import("campaign.batch._dir", _weaken_batch_dir)
    if "no-argument-bound" in WEAKEN:
        _after_import("recorder._transform", _weaken_arguments)
    if WEAKEN & {"keep-config", "no-sweep"}:
        _after_import("sandbox._config", _weaken_config)
