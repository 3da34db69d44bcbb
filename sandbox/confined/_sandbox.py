"""A running confined command, as `open_confined` yields it."""

from __future__ import annotations

from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._process import Child
    from ..cgroup import LimitHit, LimitWatch, SessionCgroup
    from ..users import SessionUser
    from ._spec import ConfinedDirs

__all__ = ["Sandbox"]


@final
class Sandbox:
    """A running confined command, as `open_confined` yields it.

    Attributes:
        child: bwrap (after the join and the privilege drop), with both output
            pipes; read it with `recorder.drive_child` or `sandbox._capture.capture`.
        dirs: The directories bound into it.
        argv: The argv it was started with (for tests and messages).
        cgroup: Its cgroup: every process of the sandbox is in it.
        watch: What holds it to its limits (`sandbox.cgroup._watch.LimitWatch`), or None
            when it has none to watch.
        user: Who it runs as (leased, or given); None for the runner itself.
        contained: After the exit, whether the cgroup was found empty and removed.
            When False (a process outlived the kill's bound), nothing the sandbox
            wrote was read or reclaimed (no last walk of its directories, no
            `sandbox.storage._reclaim`), and the caller must read none of it either: its
            workspace, log and config directories may still be written (a session
            ends ``uncontained``, docs/batch.md "Session states").
    """

    def __init__(
        self, child: Child, dirs: ConfinedDirs, argv: Sequence[str], cgroup: SessionCgroup,
        watch: LimitWatch | None = None, user: SessionUser | None = None,
    ) -> None:
        self.child = child
        self.dirs = dirs
        self.argv = tuple(argv)
        self.cgroup = cgroup
        self.watch = watch
        self.user = user
        self.contained = False

    def __repr__(self) -> str:
        return f"<Sandbox {self.child!r} workspace={self.dirs.workspace}>"

    @property
    def limit_hit(self) -> LimitHit | None:
        """The first limit the sandbox passed (then it was ended at once), or None.

        Final once the `open_confined` block is left: the counters and the
        writable directories are read once more after the sandbox is empty.
        """
        return None if self.watch is None else self.watch.hit
