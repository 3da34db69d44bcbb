"""Open a confined command: the one recipe for every sandbox the runner starts.

The modules: `_spec` (what to run and how: `ConfinedSpec`, `ConfinedDirs`),
`_sandbox` (the running `Sandbox`), `_open` (`open_confined`: the steps below in
order, and the teardown), `_host` (the host's cgroup hierarchies, found and
swept once per process), `_dirs` (the directories: made, handed over, taken
back) and `_command` (the command line, its payloads, and the spawn).

`open_confined(spec)` is how a session, the findings checker and every
preflight probe are run, so each rule of the confinement applies at every
spawn and no caller edits an argv. In order, it:

1. finds the host's cgroup hierarchies and, once per process, ends and
   removes what killed runners left there (`sandbox.cgroup._cgroup.sweep_once`),
   then, given a pool of session users, leases one for the sandbox's whole
   life (`sandbox.users._lease`: no other sandbox of the host runs as it until the
   last step below is done; given a user, the caller holds its lease);
   the sweep comes first, so a leftover it ends does not keep its user from
   the lease;
2. makes the scratch directories the spec leaves to it (a workspace, a log
   and a config directory, `sandbox._scratch`), hands the session's own
   directories over to the session user and lets it reach every bind source
   (`sandbox.users._privileges.hand_over`; nothing for a runner that is not root);
3. makes the sandbox's own cgroup (`sandbox.cgroup._cgroup`), with its ``pids`` and
   ``memory`` limits where the host has those controllers (`sandbox.cgroup._cgroup_limits`);
4. wraps the command in the session's init shell (`sandbox._init`: the pid-2
   guard, the lifeline watcher, the egress bridge with a confined network),
   whose last exec enters the session's Landlock domain (`sandbox._landlock`:
   nothing of the session reaches pid 1, the watcher or the bridge);
5. builds the argv: the join into the cgroups (and ``RLIMIT_NOFILE``), the privilege drop
   (`drop_argv`), then `bwrap_argv` with the network option and the seccomp
   filter that refuses ptrace and process_vm_readv/writev inside
   (`sandbox._seccomp`);
6. passes the RC-02 mounts (`bwrap_options`: each at its inside path, a
   read-only workspace if asked) and then the environment as the ``--args
   FD`` payload (nothing of either on the command line, which the session
   reads as ``/proc/1/cmdline``: a mount's source names the batch, the
   environment holds the secret, RC-03; bwrap itself starts with an empty
   environment) and the filter as the ``--seccomp FD`` one;
7. spawns on the calling thread, which must be the event loop's own
   (`sandbox._process.spawn`; ``--die-with-parent`` follows the thread), with
   the lifeline as stdin and both output pipes, and watches its limits while
   the caller's block runs (`sandbox.cgroup._watch`: a limit passed ends it at once);
8. on exit, however the block ends: reaps bwrap (SIGTERM, grace, SIGKILL,
   bounded), closes the lifeline, kills whatever is left in the cgroup and
   waits until it is empty (``cgroup.kill``, ``populated 0``), and removes
   the cgroup (reading, once it is empty, whether a limit was passed: the
   counters, and the writable directories once more); then takes back what
   the session made (`sandbox.storage._reclaim`: a
   given workspace becomes the runner's with the runner's modes, a given log
   directory is replaced by a copy of its regular files), removes the
   scratch directories and releases the lease. A cgroup that does not empty
   within its bound skips the last walk and the reclaim (``Sandbox.contained``
   False: something of it may still write there).
"""

from __future__ import annotations

from ._open import open_confined as open_confined
from ._sandbox import Sandbox as Sandbox
from ._spec import ConfinedDirs as ConfinedDirs
from ._spec import ConfinedSpec as ConfinedSpec
