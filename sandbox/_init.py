"""The session's first process inside the sandbox: a shell that ties the session to the runner.

bwrap's ``--die-with-parent`` arms PR_SET_PDEATHSIG in bwrap's outer process
and again in its pid 1, each some time after the fork that created it
(measured with bubblewrap 0.8.0: a runner SIGKILLed within about 5 ms of the
spawn leaves the whole sandbox alive, reparented to the host's init). No
flag of bwrap closes that window, so a session's sandbox carries its own tie.

The tie is the *lifeline*: `sandbox.open_confined` (through `sandbox._process.spawn`
with ``stdin="lifeline"``) gives the sandbox, as its stdin, the read end of a pipe
whose write end only the runner holds, and closes that end once the harness
has been reaped. However the runner ends (a return, an exception, SIGKILL),
the kernel closes the write end with it, and a read of the pipe returns
end-of-file. No timing matters: a read that starts after the close sees it
at once.

The sandbox's command becomes ``/bin/sh -c SCRIPT headwater-init HARNESS ARGS...``.
The shell (pid 2 of the session's pid namespace; pid 1 is bwrap's init):

1. refuses to start (`INIT_FAILED_STATUS`, a message on stderr) unless it is
   pid 2, because the next step is only safe inside a private pid namespace;
2. starts a watcher in the background that reads the lifeline and, at its
   end, runs ``kill -9 -1``: every process of the namespace but pid 1 and
   the watcher, hence every process of the session (kill(2); the sandbox
   user may signal them all). bwrap's pid 1 then has no child left and exits.
   The watcher is forked by a subshell that exits at once, so it is bwrap's
   pid 1's child, not the shell's: pid 2 becomes the harness, and a parent
   may move a child that never executed anything (the watcher runs only
   builtins) into another process group (``setpgid``, which no Landlock rule
   covers), orphan that group with a stopped member, and so have the kernel
   send it SIGHUP. It ignores SIGHUP too;
3. with a confined network, starts the egress bridge (`sandbox.network._network`),
   its stdout ``/dev/null`` (the harness's stdout is the session's stream;
   socat's stderr stays, for its error messages);
4. ``exec``s the harness with stdin ``/dev/null`` and the lifeline closed, so
   the harness keeps pid 2, bwrap's exit status is the harness's, and the
   session never holds the pipe.

Rule: every process of a session is gone once its runner is gone, however
the runner ended (process containment; RC-05).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Final

from ._argv import EGRESS_MOUNT

if TYPE_CHECKING:
    from collections.abc import Sequence

BRIDGE_PORT: Final = 3128
"""The loopback port inside the sandbox where socat listens (the namespace is private)."""
SOCAT: Final = "/usr/bin/socat"
"""Debian's socat (package ``socat``); under /usr, so the sandbox sees the same file."""
BRIDGE_START_TIMEOUT_S: Final = 5.0
"""How long the shell waits for socat's port to listen before giving up."""
BRIDGE_FAILED_STATUS: Final = 125
"""Exit status of a sandbox whose bridge did not start (the harness never ran)."""
INIT_FAILED_STATUS: Final = 124
"""Exit status of a sandbox whose shell is not pid 2 of a private pid namespace (nothing ran);
distinct from `BRIDGE_FAILED_STATUS`, so the network preflight does not blame the network."""
LIFELINE_FD: Final = 0
"""The lifeline is the sandbox's stdin; the harness gets ``/dev/null`` instead."""
_POLL_S: Final = 0.01

_LIFELINE_SCRIPT: Final = """\
if [ "$$" -ne 2 ]; then
  echo "headwater: the session's shell is pid $$, not 2: no private pid namespace" >&2
  exit {failed}
fi
exec 3<&0
(trap '' HUP; (read -r _ <&3; kill -9 -1) </dev/null >/dev/null 2>&1 &)
exec 3<&- </dev/null
"""
_BRIDGE_SCRIPT: Final = """\
{socat} -lp headwater-bridge TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork \
UNIX-CONNECT:{socket} </dev/null >/dev/null &
bridge=$!
tries=0
until grep -q ' 0100007F:{hex_port} 00000000:0000 0A ' /proc/net/tcp; do
  if ! kill -0 "$bridge" 2>/dev/null || [ "$tries" -ge {max_tries} ]; then
    echo "headwater: the egress bridge ({socat}) did not start" >&2
    exit {failed}
  fi
  tries=$((tries + 1))
  sleep {poll}
done
"""
_EXEC: Final = 'exec "$@"\n'


def session_init_command(
    command: Sequence[str],
    *,
    lifeline: bool,
    bridge: bool,
    socat: str = SOCAT,
    port: int = BRIDGE_PORT,
) -> list[str]:
    """Wrap ``command`` in the session's init shell: lifeline watcher, bridge, then ``exec``.

    Pure. The result is ``["/bin/sh", "-c", SCRIPT, "headwater-init", *command]``;
    ``command`` reaches ``exec "$@"`` with its arguments untouched (no word
    is re-split). See the module docstring for the script's steps.

    Args:
        command: The command to run inside, ``command[0]`` an absolute path.
        lifeline: Watch stdin as the runner's lifeline (the driver must give
            the sandbox that pipe as stdin: ``spawn(stdin="lifeline")``, as
            `sandbox.open_confined` does);
            the command then runs with stdin ``/dev/null``. False: stdin is
            passed through and nothing is watched (short probes).
        bridge: Start socat on ``127.0.0.1:port`` bridged to `EGRESS_MOUNT`
            first, and run ``command`` only once the port listens (at most
            `BRIDGE_START_TIMEOUT_S`; else exit `BRIDGE_FAILED_STATUS`).
        socat: The bridge's socat inside the sandbox.
        port: The bridge's loopback port, 1..65535.

    Returns:
        A new argv for `sandbox.bwrap_argv`.

    Raises:
        ValueError: ``command`` is empty or ``port`` is out of range.
    """
    if not command:
        raise ValueError("command is empty")
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1..65535, got {port}")
    script = ""
    if lifeline:
        script += _LIFELINE_SCRIPT.format(failed=INIT_FAILED_STATUS)
    if bridge:
        script += _BRIDGE_SCRIPT.format(
            socat=shlex.quote(socat), port=port, hex_port=f"{port:04X}", socket=EGRESS_MOUNT,
            max_tries=int(BRIDGE_START_TIMEOUT_S / _POLL_S), poll=_POLL_S,
            failed=BRIDGE_FAILED_STATUS,
        )
    return ["/bin/sh", "-c", script + _EXEC, "headwater-init", *command]
