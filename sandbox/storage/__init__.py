"""A file system of each session's own, and what becomes of what it wrote (RC-02, disk bound).

See docs/storage.md. `open_session_store` makes the store (a loop-mounted
ext4 for a root runner, a plain directory otherwise), `store_size` sizes it,
`sweep_stores` removes what a killed runner left, `copy_out` copies a
finished session's tree into the batch without following its symlinks,
`list_tree` lists one that passed its writes limit, and `file_size_limit` is
the per-file bound a runner that is not root sets (``RLIMIT_FSIZE``).

After the session, what it wrote outside its store is made the runner's too
(``_reclaim``): `reclaim_tree` gives a workspace the runner's owner and modes,
`replace_with_copy` replaces its log directory by the runner's copy of its regular
files (`copy_regular`). That is this package's concern, not the session users': it
is what the host does with a finished session's files, trusting nothing in them and
following no symlink, and `copy_out` gives its copy the same modes (``_copy`` reads
them from ``_reclaim``). The recipe (`sandbox.confined`) calls both after the
session's cgroup is empty; the limits' watch (`sandbox.cgroup`) counts the session's
unlinked files with `unlinked_bytes`. Imports only sandbox's leaves (`_errors`,
`_report`, `_owner`, `_remove`).
"""

from __future__ import annotations

from ._check import check_storage as check_storage
from ._copy import CopyReport as CopyReport
from ._copy import Skipped as Skipped
from ._copy import copy_out as copy_out
from ._errors import StoreNotRemoved as StoreNotRemoved
from ._errors import StoreUnavailable as StoreUnavailable
from ._listing import Listing as Listing
from ._listing import list_tree as list_tree
from ._reclaim import Reclaimed as Reclaimed
from ._reclaim import copy_regular as copy_regular
from ._reclaim import reclaim_tree as reclaim_tree
from ._reclaim import replace_with_copy as replace_with_copy
from ._sizing import file_size_limit as file_size_limit
from ._sizing import store_size as store_size
from ._store import FALLBACK_ROOT as FALLBACK_ROOT
from ._store import STORE_ROOT as STORE_ROOT
from ._store import SessionStore as SessionStore
from ._store import open_session_store as open_session_store
from ._store import stores_kernel_bounded as stores_kernel_bounded
from ._sweep import sweep_stores as sweep_stores
from ._unlinked import unlinked_bytes as unlinked_bytes
