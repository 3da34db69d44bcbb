"""A file system of each session's own, and the copy of what it wrote (RC-02, disk bound).

See docs/storage.md. `open_session_store` makes the store (a loop-mounted
ext4 for a root runner, a plain directory otherwise), `store_size` sizes it,
`sweep_stores` removes what a killed runner left, `copy_out` copies a
finished session's tree into the batch without following its symlinks,
`list_tree` lists one that passed its writes limit, and `file_size_limit` is
the per-file bound a runner that is not root sets (``RLIMIT_FSIZE``).
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
from ._sizing import file_size_limit as file_size_limit
from ._sizing import store_size as store_size
from ._store import FALLBACK_ROOT as FALLBACK_ROOT
from ._store import STORE_ROOT as STORE_ROOT
from ._store import SessionStore as SessionStore
from ._store import open_session_store as open_session_store
from ._store import stores_kernel_bounded as stores_kernel_bounded
from ._sweep import sweep_stores as sweep_stores
from ._unlinked import unlinked_bytes as unlinked_bytes
