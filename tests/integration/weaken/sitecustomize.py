"""Weaken the confinement on purpose, to see the confinement suites go red (issue 5 item 6).

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
- ``leak-env``: starts bwrap with the runner's environment, ``--clearenv`` kept
  (escapes: /proc/1/environ, the canary in the batch); with ``no-clearenv`` too,
  the session's own ``env`` shows it.
- ``setenv-key``: passes the session's variables with ``--setenv`` on bwrap's
  command line (escapes: /proc/1/cmdline).
- ``no-drop``: a root runner's sessions are started as for a non-root runner
  (no setpriv, no hand-over): bwrap runs as root (no_root).
- ``no-pid``: drops ``--unshare-pid`` (containment).
- ``no-die``: drops ``--die-with-parent`` (containment, runner SIGKILLed).
- ``keep-config``: never removes a session's config directory (credentials lifecycle).
- ``no-sweep``: start-up sweeps nothing (credentials lifecycle, runner SIGKILLed).
- ``no-lifeline``: the session's init shell watches no lifeline, and the sandbox's
  stdin is /dev/null (containment: the runner killed within milliseconds of the spawn).

One instrument, not a weakening: with ``HW_KILL_AFTER_SPAWN_S=S`` set, a runner
SIGKILLs itself S seconds after it spawned a session's sandbox (0: at once, on
the spawning thread), to hit the moments bwrap is still setting itself up.
``HW_KILL_AFTER_SPAWN_OF=checker`` picks the findings checker's sandbox instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

WEAKEN = {name for name in os.environ.get("HW_WEAKEN", "").split(",") if name}
CHECKOUT = Path(__file__).resolve().parents[3]


def _insert_before(argv: list[str], marker: str, extra: list[str]) -> list[str]:
    at = argv.index(marker)
    return [*argv[:at], *extra, *argv[at:]]


def _weaken_argv() -> None:
    import sandbox._argv as argv_module
    import sandbox._env as env_module

    original = argv_module.bwrap_argv
    last_env: dict[str, str] = {}
    original_env = env_module.session_environment

    def session_environment(**kwargs: Any) -> dict[str, str]:
        env = original_env(**kwargs)
        last_env.clear()
        last_env.update(env)
        return env

    def bwrap_argv(conf: Any, command: Any, **kwargs: Any) -> list[str]:
        argv = original(conf, command, **kwargs)
        if "bind-home" in WEAKEN:
            home = os.environ["HOME"]
            argv = _insert_before(argv, "--clearenv", ["--ro-bind", home, home])
        if "bind-checkout" in WEAKEN:
            argv = _insert_before(argv, "--clearenv", ["--ro-bind", str(CHECKOUT), str(CHECKOUT)])
        parents = Path(conf.workspace).parents
        if "bind-batch" in WEAKEN and len(parents) > 4 and parents[3].name == "sessions":
            batch = str(parents[4])  # <batch>/sessions/<arm>/<probe>/<session>/workspace
            argv = _insert_before(argv, "--bind", ["--ro-bind", batch, batch])
        if "no-clearenv" in WEAKEN:
            argv.remove("--clearenv")
        if "setenv-key" in WEAKEN:
            pairs = [part for name, value in last_env.items() for part in ("--setenv", name, value)]
            argv = _insert_before(argv, "--chdir", pairs)
        return argv

    setattr(env_module, "session_environment", session_environment)  # noqa: B010
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
        if kwargs.get("env") == {} and any("bwrap" in str(arg) for arg in list(args)[:8]):
            kwargs["env"] = dict(os.environ)
        original(self, args, *rest, **kwargs)

    setattr(subprocess.Popen, "__init__", init)  # noqa: B010


def _weaken_lifeline() -> None:
    """No lifeline: the init shell is built without it and bwrap's stdin is /dev/null."""
    import subprocess

    import sandbox._init as init_module

    original_command = init_module.session_init_command

    def session_init_command(command: Any, **kwargs: Any) -> list[str]:
        return original_command(command, **{**kwargs, "lifeline": False})

    setattr(init_module, "session_init_command", session_init_command)  # noqa: B010
    original = subprocess.Popen.__init__

    def init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        if isinstance(kwargs.get("stdin"), int) and kwargs["stdin"] >= 0 and _is_session(args):
            kwargs["stdin"] = subprocess.DEVNULL
        original(self, args, *rest, **kwargs)

    setattr(subprocess.Popen, "__init__", init)  # noqa: B010


def _is_session(args: Any) -> bool:
    """A session's sandbox (not a preflight probe): bwrap running the stream-json harness."""
    words = [str(arg) for arg in list(args)]
    return any("bwrap" in word for word in words[:8]) and "stream-json" in words


def _is_checker(args: Any) -> bool:
    """The findings checker's sandbox: bwrap running the checker's mount."""
    words = [str(arg) for arg in list(args)]
    return any("bwrap" in word for word in words[:8]) and "/opt/headwater/checker" in words


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


def _weaken_privileges_and_config() -> None:
    import sandbox._config as config
    import sandbox._privileges as privileges

    if "no-drop" in WEAKEN:  # the runner takes itself for a non-root one: no drop, no hand-over
        setattr(privileges, "session_user", lambda euid=None: None)  # noqa: B010
    if "keep-config" in WEAKEN:
        setattr(config, "remove_tree", lambda path: None)  # noqa: B010
    if "no-sweep" in WEAKEN:
        setattr(config, "sweep_config_root", lambda root=config.CONFIG_ROOT: [])  # noqa: B010


if "HW_KILL_AFTER_SPAWN_S" in os.environ:
    _kill_after_spawn(float(os.environ["HW_KILL_AFTER_SPAWN_S"]))
if WEAKEN:
    _weaken_argv()
    if "no-lifeline" in WEAKEN:
        _weaken_lifeline()
    if "leak-env" in WEAKEN:
        _weaken_spawn()
    _weaken_privileges_and_config()
