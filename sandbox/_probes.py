"""Bounded subprocesses of the preflight: plain, confined like a session, or read up to a line.

Every subprocess here starts with an empty environment, in its own process
group, bounded by the caller's timeout, after which the whole group is
killed and reaped. A confined probe runs under a session's exact argv
(`bwrap_argv`, the ``--args FD`` environment, the privilege drop of
`sandbox._privileges`) in throwaway directories handed to the session user.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._argv import Confinement, bwrap_argv
from ._capture import Run, run_bounded_sync
from ._config import Credentials
from ._env import session_environment, setenv_payload
from ._init import session_init_command
from ._privileges import SessionUser, drop_argv, hand_over
from ._process import REAP_TIMEOUT_S

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from ._layout import HostLayout

STDERR_TAIL_CHARS: Final = 2000
"""How much of bwrap's own message a check quotes."""
MAX_PROBE_LINE_BYTES: Final = 4 * 1024 * 1024
"""`confined_lines` gives up on a line longer than this (an init line is a few KiB)."""
_READ_CHUNK_BYTES: Final = 65536
_PIPE_CAPACITY_BYTES: Final = 65536
"""Linux default pipe buffer (pipe(7)): a payload this small is written before the spawn."""


@contextlib.contextmanager
def _scratch_session(user: SessionUser | None, harness: Path) -> Iterator[dict[str, Path]]:
    """Throwaway workspace, log and config dirs, handed to ``user`` as a session's are."""
    with tempfile.TemporaryDirectory(prefix="headwater-preflight-") as scratch:
        root = Path(scratch).resolve()
        dirs = {name: root / name for name in ("workspace", "log", "config")}
        for path in dirs.values():
            path.mkdir(mode=0o700)
        hand_over(user, own=[root], reach=[harness])
        yield dirs


def run_confined(
    executable: str,
    layout: HostLayout,
    harness: Path,
    command: Sequence[str],
    user: SessionUser | None,
    timeout_s: float,
) -> Run:
    """Run ``command`` under a session's exact argv as ``user``, in throwaway directories.

    Raises:
        SessionUserUnusable: ``harness`` cannot be made reachable for ``user``.
    """
    with _scratch_session(user, harness) as dirs:
        env = _probe_env(dirs, provider_url=None, api_key=None)
        with _args_fd(env) as read_fd:
            argv = _confined_argv(executable, layout, harness, command, user, dirs, read_fd)
            return run_bounded_sync(argv, timeout_s=timeout_s, pass_fds=(read_fd,))


def _probe_env(dirs: dict[str, Path], *, provider_url: str | None, api_key: str | None) -> dict[
    str, str
]:
    return session_environment(
        config_dir=dirs["config"],
        log_dir=dirs["log"],
        provider_url=provider_url,
        credentials=Credentials(None, None, api_key),
    )


def _confined_argv(
    executable: str,
    layout: HostLayout,
    harness: Path,
    command: Sequence[str],
    user: SessionUser | None,
    dirs: dict[str, Path],
    args_fd: int,
) -> list[str]:
    conf = Confinement(
        workspace=dirs["workspace"],
        harness=harness,
        log_dir=dirs["log"],
        config_dir=dirs["config"],
        host_layout=layout,
    )
    return [*drop_argv(user), *bwrap_argv(conf, command, bwrap=executable, args_fd=args_fd)]


@contextlib.contextmanager
def _args_fd(env: dict[str, str]) -> Iterator[int]:
    """A pipe's read end holding the ``--args`` payload, write end closed (RC-03)."""
    payload = setenv_payload(env)
    if len(payload) >= _PIPE_CAPACITY_BYTES:
        raise ValueError(f"preflight payload of {len(payload)} bytes would block on the pipe")
    read_fd, write_fd = os.pipe()
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view) :]
        os.close(write_fd)
        write_fd = -1
        yield read_fd
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


@dataclass(frozen=True, slots=True)
class ConfinedLines:
    """What `confined_lines` saw: stdout lines up to the one wanted, and how it ended.

    Attributes:
        matched: The first stdout line (bytes, no newline) ``until`` accepted, or None.
        lines: Every complete stdout line read, in order (the matched one last).
        stderr: The child's stderr so far, decoded (the tail, `STDERR_TAIL_CHARS`).
        timed_out: True when the deadline passed before a match or EOF.
        returncode: The exit status when the child ended by itself, else None
            (it was killed after the match or the deadline).
    """

    matched: bytes | None
    lines: tuple[bytes, ...] = field(default=())
    stderr: str = ""
    timed_out: bool = False
    returncode: int | None = None


def confined_lines(
    *,
    bwrap: str,
    layout: HostLayout,
    harness: Path,
    command: Sequence[str],
    user: SessionUser | None,
    until: Callable[[bytes], bool],
    provider_url: str,
    api_key: str,
    timeout_s: float,
) -> ConfinedLines:
    """Run ``command`` confined like a session and read stdout until ``until`` accepts a line.

    The session environment names ``provider_url`` and ``api_key`` (the
    caller passes a dead loopback port and a placeholder: nothing is spent).
    As soon as a line matches, or at EOF, or after ``timeout_s``, the
    child's process group is killed and reaped. Knows nothing of the lines'
    format: the caller's ``until`` does.

    Raises:
        SessionUserUnusable: ``harness`` cannot be made reachable for ``user``.
    """
    with _scratch_session(user, harness) as dirs:
        env = _probe_env(dirs, provider_url=provider_url, api_key=api_key)
        # It runs the real harness: the lifeline ends it with the runner (sandbox._init).
        inner = session_init_command(command, lifeline=True, bridge=False)
        life_r, life_w = os.pipe()
        try:
            with _args_fd(env) as read_fd:
                argv = _confined_argv(bwrap, layout, harness, inner, user, dirs, read_fd)
                try:
                    process = subprocess.Popen(
                        argv, stdin=life_r, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        env={}, start_new_session=True, pass_fds=(read_fd,),
                    )  # fmt: skip
                except OSError as exc:
                    return ConfinedLines(None, stderr=f"cannot execute {argv[0]}: {exc}")
                finally:
                    os.close(life_r)
            # The scratch directories stay until the child is reaped: they are its mounts.
            try:
                return _read_until(process, until, deadline=time.monotonic() + timeout_s)
            finally:
                _kill_group(process)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=REAP_TIMEOUT_S)
                for stream in (process.stdout, process.stderr):
                    if stream is not None:
                        stream.close()
        finally:
            os.close(life_w)


def _read_until(
    process: subprocess.Popen[bytes], until: Callable[[bytes], bool], *, deadline: float
) -> ConfinedLines:
    assert process.stdout is not None and process.stderr is not None
    buffers = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
    lines: list[bytes] = []
    out_fd = process.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and (remaining := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _READ_CHUNK_BYTES)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buffers[key.fd] += chunk
                while key.fd == out_fd and b"\n" in buffers[out_fd]:
                    line, _, rest = bytes(buffers[out_fd]).partition(b"\n")
                    buffers[out_fd] = bytearray(rest)
                    lines.append(line)
                    if until(line):
                        return ConfinedLines(line, tuple(lines), _tail(buffers, process))
                if len(buffers[out_fd]) > MAX_PROBE_LINE_BYTES:
                    return ConfinedLines(None, tuple(lines), _tail(buffers, process))
        timed_out = bool(selector.get_map())
    returncode = None if timed_out else process.wait(timeout=REAP_TIMEOUT_S)
    return ConfinedLines(None, tuple(lines), _tail(buffers, process), timed_out, returncode)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _tail(buffers: dict[int, bytearray], process: subprocess.Popen[bytes]) -> str:
    assert process.stderr is not None
    return _text(bytes(buffers[process.stderr.fileno()]))[-STDERR_TAIL_CHARS:]
