"""One situation replayed: the scripted provider, the harness under the product's own sandbox.

`replay` runs one situation as a session runs (`sandbox.open_confined`: the RC-02 mounts at
their fixed paths, the RC-03 environment on ``--args``, the session user, the cgroup and its
limits, the init shell, Landlock and seccomp), with the network the product settles
(`settle_host`: ``confined`` when the network preflight verifies it, else ``host``), in
scratch directories made for it (the workspace copied from the situation's, at
``/workspace``; the config directory from its ``config/``; its mounts read-only). Nothing runs
on the host outside bwrap. What it keeps: stdout (bounded), the tail of stderr, the exit
status, the signal it sent and when, and the harness command (inside paths only).
"""

from __future__ import annotations

import os
import shutil
import signal as signals
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio

from demo import ScriptedProvider, load_scripts
from sandbox import (
    BRIDGE_URL,
    CONFIG_MOUNT,
    DEFAULT_LIMITS,
    HARNESS_MOUNT,
    LOG_MOUNT,
    ConfinedSpec,
    HostLayout,
    NetworkMode,
    Sandbox,
    SandboxError,
    SessionPool,
    lease_user,
    measure_host_layout,
    network_preflight,
    open_confined,
    open_session_egress,
    remove_tree,
    session_environment,
    session_pool,
)

from ._situation import LoadedSituation

__all__ = ["MAX_STDOUT_BYTES", "WORKSPACE_PATH", "HostRecipe", "Replay", "harness_argv",
           "replay", "settle_host"]

WORKSPACE_PATH: Final = "/workspace"
"""Where every situation's workspace appears inside (the captures' path; paths in its scripts
are relative or under it)."""
MAX_STDOUT_BYTES: Final = 16 * 1024 * 1024
"""The most stdout kept of one replay; more is drained and dropped (``stdout_cut``)."""
STDERR_TAIL_BYTES: Final = 4000
"""How much of the end of stderr a replay keeps."""
PLACEHOLDER_KEY: Final = "sk-census-placeholder"
"""The API key a replayed session is given: the scripted provider takes any."""
READ_BYTES: Final = 64 * 1024
MAX_ARG_CHARS: Final = 200
"""A longer argument of the sandbox's argv (its init scripts) is kept as its length only."""


@dataclass(frozen=True, slots=True)
class HostRecipe:
    """How this host runs the census's sandboxes, settled once for a census run."""

    bwrap: str
    layout: HostLayout
    network: NetworkMode
    """``confined`` when the network preflight verified it, else ``host`` (as the product)."""
    network_note: str
    pool: SessionPool | None
    """A root runner's session users; None for a runner that is not root."""


def settle_host(*, bwrap: str = "bwrap", network: NetworkMode | None = None) -> HostRecipe:
    """Measure the host and settle the network the way a batch does (`campaign.batch`).

    ``network`` None: ``confined`` when `sandbox.network_preflight` answers ok, else
    ``host`` with the preflight's words in ``network_note``.
    """
    layout = measure_host_layout()
    if network is not None:
        note = f"asked: {network}"
    else:
        check = network_preflight(bwrap=bwrap, layout=layout)
        network = "confined" if check.verdict == "ok" else "host"
        note = ("verified by the network preflight" if network == "confined"
                else f"fell back to host: {check.verdict}: {check.detail}")
    return HostRecipe(bwrap=bwrap, layout=layout, network=network, network_note=note,
                      pool=session_pool())


@dataclass(frozen=True, slots=True)
class Replay:
    """What one replay printed and how it ended."""

    name: str
    argv: tuple[str, ...]
    """The harness command as run inside the sandbox (inside paths only)."""
    sandbox_argv: tuple[str, ...]
    """The sandbox's argv with host paths replaced by ``<cgroup>`` and ``<harness>``."""
    network: NetworkMode
    stdout: bytes
    stdout_cut: bool
    """Stdout passed `MAX_STDOUT_BYTES`; the rest was dropped."""
    stderr_tail: str
    returncode: int | None
    """bwrap's exit status (the harness's), None when it never started or was killed by us."""
    signal_sent: str | None
    """The situation's stop signal, once sent to the harness."""
    timed_out: bool
    duration_s: float
    unmatched: int
    """Requests no script covered (the scripted provider's count)."""
    error: str | None = None
    """Why the sandbox could not be started, in words; None when it ran."""

    @property
    def ran(self) -> bool:
        """The sandbox started and the harness ended within the situation's timeout."""
        return self.error is None and not self.timed_out


def harness_argv(loaded: LoadedSituation) -> list[str]:
    """The harness command of ``loaded``: ``-p PROMPT --output-format stream-json --verbose``
    (``--verbose`` left out with ``omit_verbose``), then the situation's own arguments."""
    situation = loaded.situation
    verbose = [] if situation.omit_verbose else ["--verbose"]
    return [HARNESS_MOUNT, "-p", situation.prompt, "--output-format", "stream-json", *verbose,
            *situation.args]


async def replay(loaded: LoadedSituation, *, harness: Path, host: HostRecipe,
                 max_stdout_bytes: int = MAX_STDOUT_BYTES) -> Replay:
    """Replay ``loaded`` through the harness at ``harness`` (a host path) under the sandbox.

    Runs on the event loop's thread (`sandbox.open_confined`). The scratch directories are
    removed afterwards, whatever happened.

    Raises:
        demo.ScriptError: the situation's scripts cannot be read.
    """
    scripts = load_scripts(loaded.scripts, home=CONFIG_MOUNT)
    scratch = Path(tempfile.mkdtemp(prefix=f"headwater-census-{loaded.name[:20]}-"))
    try:
        binds = await anyio.to_thread.run_sync(_prepare, loaded, scratch)
        async with ScriptedProvider(scripts) as provider:
            result = await _run(loaded, harness=harness, host=host, scratch=scratch,
                                binds=binds, provider=provider, max_stdout=max_stdout_bytes)
            return result
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(remove_tree, scratch)


def _prepare(loaded: LoadedSituation, scratch: Path) -> list[tuple[Path, str]]:
    """The scratch workspace, log and config directories and the mounts' copies (blocking)."""
    shutil.copytree(loaded.workspace, scratch / "workspace", symlinks=True) \
        if loaded.workspace.is_dir() else (scratch / "workspace").mkdir()
    config = loaded.config
    shutil.copytree(config, scratch / "config", symlinks=True) if config is not None \
        else (scratch / "config").mkdir()
    (scratch / "log").mkdir()
    binds: list[tuple[Path, str]] = []
    for index, mount in enumerate(loaded.situation.mounts):
        source = loaded.directory / mount.fixture
        copy = scratch / "mounts" / str(index) / source.name
        copy.parent.mkdir(parents=True)
        if source.is_dir():
            shutil.copytree(source, copy)
        else:
            shutil.copy2(source, copy)
        _readable(copy)
        binds.append((copy, mount.at))
    return binds


def _readable(path: Path) -> None:
    """A mount's copy readable by the session user (a file also executable: the reach rule)."""
    os.chmod(path, 0o755)
    if path.is_dir():
        for base, dirs, files in os.walk(path):
            for name in dirs:
                os.chmod(os.path.join(base, name), 0o755)
            for name in files:
                os.chmod(os.path.join(base, name), 0o644)


async def _run(loaded: LoadedSituation, *, harness: Path, host: HostRecipe, scratch: Path,
               binds: list[tuple[Path, str]], provider: ScriptedProvider,
               max_stdout: int) -> Replay:
    situation = loaded.situation
    command = harness_argv(loaded)
    started = time.monotonic()
    try:
        async with lease_user(host.pool) as user:
            owner = (user.uid, user.gid) if user else None
            async with open_session_egress(host.network, provider.url, owner=owner,
                                           max_connections=DEFAULT_LIMITS.connections,
                                           directory=scratch / "egress") as egress:
                env = {**session_environment(
                    config_dir=Path(CONFIG_MOUNT), log_dir=Path(LOG_MOUNT),
                    provider_url=provider.url,
                    provider_key=("ANTHROPIC_API_KEY", PLACEHOLDER_KEY),
                    egress_proxy=BRIDGE_URL if egress else None), **situation.env}
                spec = ConfinedSpec(
                    command=command, executable=harness, mount=HARNESS_MOUNT,
                    network=host.network, egress_socket=egress.socket_path if egress else None,
                    env=env, bwrap=host.bwrap, layout=host.layout, user=user,
                    workspace=scratch / "workspace", log_dir=scratch / "log",
                    config_dir=scratch / "config", workspace_mount=WORKSPACE_PATH,
                    log_mount=LOG_MOUNT, config_mount=CONFIG_MOUNT, extra_ro_binds=binds,
                    limits=DEFAULT_LIMITS, limit_checks=(egress.limit_hit,) if egress else (),
                    reclaim_log=False, name="census")
                async with open_confined(spec) as sandbox:
                    drive = await _drive(sandbox, loaded, max_stdout=max_stdout)
                returncode = sandbox.child.returncode  # reaped when the block is left
                argv = _placeholders(sandbox.argv, harness)
    except (SandboxError, OSError, ValueError) as exc:
        return Replay(name=loaded.name, argv=tuple(command), sandbox_argv=(),
                      network=host.network, stdout=b"", stdout_cut=False, stderr_tail="",
                      returncode=None, signal_sent=None, timed_out=False,
                      duration_s=round(time.monotonic() - started, 2),
                      unmatched=provider.unmatched, error=f"{type(exc).__name__}: {exc}")
    return Replay(name=loaded.name, argv=tuple(command), sandbox_argv=argv,
                  network=host.network, stdout=bytes(drive.stdout), stdout_cut=drive.cut,
                  stderr_tail=bytes(drive.stderr[-STDERR_TAIL_BYTES:]).decode(
                      "utf-8", "replace"),
                  returncode=None if drive.timed_out else returncode,
                  signal_sent=drive.signal_sent, timed_out=drive.timed_out,
                  duration_s=round(time.monotonic() - started, 2),
                  unmatched=provider.unmatched)


@dataclass(slots=True)
class _Drive:
    stdout: bytearray
    stderr: bytearray
    cut: bool = False
    signal_sent: str | None = None
    timed_out: bool = False


async def _drive(sandbox: Sandbox, loaded: LoadedSituation, *, max_stdout: int) -> _Drive:
    """Read both pipes to their end, send the stop signal when due, within the timeout."""
    situation = loaded.situation
    drive = _Drive(bytearray(), bytearray())
    child = sandbox.child

    async def stdout() -> None:
        while chunk := await child.read("stdout", READ_BYTES):
            room = max_stdout - len(drive.stdout)
            if len(chunk) > room:
                drive.cut = True
            drive.stdout += chunk[:max(room, 0)]

    async def stderr() -> None:
        while chunk := await child.read("stderr", READ_BYTES):
            drive.stderr += chunk
            del drive.stderr[:-STDERR_TAIL_BYTES]

    async def stopper() -> None:
        stop = situation.stop
        assert stop is not None
        await anyio.sleep(stop.after_s)
        if _signal_harness(sandbox, getattr(signals, stop.signal)):
            drive.signal_sent = f"{stop.signal} after {stop.after_s:g} s"

    with anyio.move_on_after(situation.timeout_s) as deadline:
        async with anyio.create_task_group() as outer:
            if situation.stop is not None:
                outer.start_soon(stopper)
            async with anyio.create_task_group() as pipes:
                pipes.start_soon(stdout)
                pipes.start_soon(stderr)
            await child.wait_exit()
            outer.cancel_scope.cancel()
    drive.timed_out = deadline.cancelled_caught
    return drive


def _signal_harness(sandbox: Sandbox, sig: signals.Signals) -> bool:
    """Send ``sig`` to the harness process itself (the topmost one in the sandbox's cgroup
    whose argv[0] is the harness mount); False when none is running any more."""
    harness = []
    for pid in sandbox.cgroup.procs():
        argv0, ppid = _argv0_and_parent(pid)
        if argv0 == HARNESS_MOUNT and _argv0_and_parent(ppid)[0] != HARNESS_MOUNT:
            harness.append(pid)
    for pid in harness:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue
        return True
    return False


def _argv0_and_parent(pid: int) -> tuple[str, int]:
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, UnicodeDecodeError):
        return "", 0
    return argv0, int(stat.rsplit(")", 1)[1].split()[1])


def _placeholders(argv: tuple[str, ...], harness: Path) -> tuple[str, ...]:
    """``argv`` with the host's cgroup paths and the harness's host path as placeholders, and
    each of the sandbox's own shell and Python scripts (``-c``) as its length."""
    out = []
    for arg in argv:
        if arg.startswith("/sys/fs/cgroup/"):
            arg = "<cgroup>/" + arg.rsplit("/", 1)[-1]
        arg = arg.replace(str(harness.resolve()), "<harness>")
        out.append(arg if len(arg) <= MAX_ARG_CHARS else f"<script of {len(arg)} characters>")
    return tuple(out)
