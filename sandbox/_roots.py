"""Where a runner keeps its per-session directories when the shared root is another user's.

The roots under ``/var/tmp/headwater-campaign`` (config directories, egress
sockets, stores) are made by the first runner of the host, and made by root
when that runner is root: a runner that is not root can then make nothing in
them. Each root falls back to one of the runner's own,
``/var/tmp/headwater-campaign-<uid>/<name>``, so a runner that is not root still
runs on a host where root ran (its directories' names say nothing of a session
either way: RC-02 blind sessions).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

OWN_ROOT: Final = "/var/tmp/headwater-campaign-{uid}"
"""The parent of a runner's own roots (``{uid}``: its effective uid), made 0700."""
OWN_ROOT_MODE: Final = 0o700


def usable_root(root: Path, name: str) -> Path:
    """``root`` if this runner may make entries in it (or make it), else its own.

    Args:
        root: The shared root (e.g. ``/var/tmp/headwater-campaign/cfg``).
        name: The last part of the runner's own root in its place (``cfg``).

    Returns:
        ``root``, or ``/var/tmp/headwater-campaign-<uid>/<name>`` (its parent made
        0700 when missing). The root itself is never made here: it is the caller's to make
        and mode (the config root is 0711), so a sweep that finds it missing leaves no
        root of the umask's mode behind.
    """
    with contextlib.suppress(OSError):
        root.parent.mkdir(parents=True, exist_ok=True)
        if os.access(root if root.exists() else root.parent, os.W_OK | os.X_OK):
            return root
    own = Path(OWN_ROOT.format(uid=os.geteuid()))
    own.mkdir(mode=OWN_ROOT_MODE, exist_ok=True)
    return own / name
