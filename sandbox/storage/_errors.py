"""Errors raised by `sandbox.storage` (a branch of `sandbox._errors`' tree).

* SandboxError
  x ConfinementUnavailable
    x StoreUnavailable   - no file system of its own for a session; nothing of it ran
  x StoreNotRemoved      - a store could not be unmounted or removed after its session
"""

from __future__ import annotations

from .._errors import ConfinementUnavailable, SandboxError


class StoreUnavailable(ConfinementUnavailable):
    """Raised by `open_session_store` when the session's own file system cannot be made.

    Raised before the block runs, so no session ran on it: the caller maps it
    to ``refused-confinement`` (RC-02 blind sessions, disk bound). What was made
    so far (image, loop device, mount) is removed before it is raised.

    Attributes:
        detail: What failed, e.g. the tool, its exit status and its stderr.
        fix: What to do about it.
    """

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail, fix, what="cannot make the session's file system")


class StoreNotRemoved(SandboxError):
    """Raised by `open_session_store`'s exit when its store stays mounted or on disk.

    Raised only when the block itself ended normally; when the block raised
    (``KeyboardInterrupt`` included), that exception travels on and the store
    is left to `sweep_stores` of the next runner. Not a confinement error: the
    session has run.

    Attributes:
        path: The store's directory (``root/<runner tag>-<random>``).
        detail: What could not be undone.
    """

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"the session store {path} was not removed: {detail} "
                         "(the next runner's sweep_stores removes it)")  # fmt: skip
        self.path = path
        self.detail = detail
