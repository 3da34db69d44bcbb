"""Who a root runner's sessions run as: its session users, one leased per sandbox (RC-05).

Owns:

* the dedicated unprivileged users and the privilege drop before bwrap starts
  (`SESSION_USER`, `SessionUser`, `drop_argv`), and the hand-over of a session's own
  directories to its user, with search-only ACL grants on the way to them (`hand_over`,
  `hand_over_file`; ``_privileges``);
* the pool of those users, one per session that runs at once (`SessionPool`,
  `session_pool`, `ensure_session_pool`; ``_pool``);
* the host-wide lease that gives each sandbox one of them for its whole life
  (`lease_user`, `hold_lease`, `LEASE_ROOT`; ``_lease``);
* taking the search grants back from a batch's directories when its last invocation ends
  (`grants_revoked`; ``_grants``).

Two modules that touch ownership are not here, by what they own: ``sandbox._owner`` names
the *runner* that made a cgroup, a scratch or config directory, a socket or a store (its
tag and whether it still lives), and the cgroups, the stores, the egress proxy and the
config directories all read it, so it is a leaf at sandbox's top; the reclaim of what a
finished session wrote is the host's business with the session's files
(`sandbox.storage`), the same whatever user the session ran as.

Re-exports what the recipe (`sandbox.confined`), the config directories, the preflight,
the network's check and `sandbox/__init__` need. Imports only sandbox's leaves (`_errors`,
`_capture`) and `sandbox.cgroup` (a lease waits for a user's leftover processes as long as
a cgroup kill may take to empty a cgroup, `EMPTY_TIMEOUT_S`).
"""

from __future__ import annotations

from ._grants import grants_revoked as grants_revoked
from ._lease import LEASE_ROOT as LEASE_ROOT
from ._lease import hold_lease as hold_lease
from ._lease import lease_user as lease_user
from ._pool import MAX_POOL_USERS as MAX_POOL_USERS
from ._pool import SessionPool as SessionPool
from ._pool import ensure_session_pool as ensure_session_pool
from ._pool import session_pool as session_pool
from ._pool import session_user as session_user
from ._privileges import SESSION_USER as SESSION_USER
from ._privileges import SessionUser as SessionUser
from ._privileges import drop_argv as drop_argv
from ._privileges import hand_over as hand_over
from ._privileges import hand_over_file as hand_over_file
