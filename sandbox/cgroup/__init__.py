"""What holds one session to its limits and ends it whole: its cgroups and the watch over them.

Owns, per sandbox:

* the limits themselves (`Limits`, `DEFAULT_LIMITS`, `LimitHit`: what one sandbox may use
  and how passing one is named; ``_limits``), a leaf the egress proxy and the recipe read too;
* where this host's cgroup hierarchies are (`find_cgroups`, `CgroupHost`, `Hierarchy`;
  ``_hierarchy``, facts only), below both of the two modules that make cgroups from them;
* the session's own v2 cgroup, which it joins before bwrap starts and which ends every
  process of it (`open_session_cgroup`, `SessionCgroup`, `sweep_cgroups`; ``_cgroup``),
  and its ``pids``/``memory`` limit cgroups, v2 where delegated, else v1 (``_cgroup_limits``);
* the watch that sees a limit passed while the session runs and once after it
  (`watching`, `LimitWatch`; ``_watch``): it reads the cgroups' counters, so it lives
  beside them.

Re-exports what the recipe (`sandbox.confined`), the session users' leases (the sweep's
bound, `EMPTY_TIMEOUT_S`), the preflight's checks, the egress proxy (`LimitHit`) and
`sandbox/__init__` need. Imports only the leaves at sandbox's top (`_errors`, `_owner`,
`_process`, `_groups`) and `sandbox.storage` (the watch counts a session's unlinked files).
"""

from __future__ import annotations

from ._cgroup import EMPTY_TIMEOUT_S as EMPTY_TIMEOUT_S
from ._cgroup import JOIN_FAILED_STATUS as JOIN_FAILED_STATUS
from ._cgroup import SessionCgroup as SessionCgroup
from ._cgroup import open_session_cgroup as open_session_cgroup
from ._cgroup import sweep_cgroups as sweep_cgroups
from ._cgroup import sweep_once as sweep_once
from ._hierarchy import BASE_NAME as BASE_NAME
from ._hierarchy import LIMIT_CONTROLLERS as LIMIT_CONTROLLERS
from ._hierarchy import CgroupHost as CgroupHost
from ._hierarchy import Hierarchy as Hierarchy
from ._hierarchy import find_cgroups as find_cgroups
from ._limits import DEFAULT_CONNECTIONS as DEFAULT_CONNECTIONS
from ._limits import DEFAULT_LIMITS as DEFAULT_LIMITS
from ._limits import DEFAULT_MEMORY_BYTES as DEFAULT_MEMORY_BYTES
from ._limits import DEFAULT_OPEN_FILES as DEFAULT_OPEN_FILES
from ._limits import DEFAULT_PIDS as DEFAULT_PIDS
from ._limits import DEFAULT_STDOUT_BYTES as DEFAULT_STDOUT_BYTES
from ._limits import DEFAULT_TMP_BYTES as DEFAULT_TMP_BYTES
from ._limits import DEFAULT_WRITE_BYTES as DEFAULT_WRITE_BYTES
from ._limits import MIN_STDOUT_BYTES as MIN_STDOUT_BYTES
from ._limits import LimitHit as LimitHit
from ._limits import LimitName as LimitName
from ._limits import Limits as Limits
from ._limits import MiB as MiB
from ._limits import format_bytes as format_bytes
from ._watch import LimitWatch as LimitWatch
from ._watch import allocated_bytes as allocated_bytes
from ._watch import watching as watching
