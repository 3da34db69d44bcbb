"""How the sandbox's modules reach the host's file system: the two facts they share.

* `DIR_FLAGS`: every directory the sandbox walks (a removal, a reclaim, a copy, a
  listing, the cgroup watch) is opened with these flags, never through a link;
* `PROC`: the host's proc file system, where leases and cgroups read processes.

A leaf: it imports nothing of the sandbox.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["DIR_FLAGS", "PROC"]

DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""Flags for opening a directory to walk: read-only, a directory or fail, no link followed."""
PROC: Final = Path("/proc")
"""The host's proc file system (a parameter where a test gives its own)."""
