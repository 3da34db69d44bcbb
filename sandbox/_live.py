"""The children not reaped yet, in a registry its owner holds: what a second signal kills.

A runner told twice to stop does not wait out each reap's grace: it SIGKILLs
every child still running at once (docs/batch.md, "Signals"). Which children
those are is the state of one run, not of the process: the batch's supervisor
owns a `LiveChildren` for its run, a synchronous entry point (`run_sync`) one
for its own loop, and two of them in one process never see each other's
children.

The owner makes the registry current for a block (`LiveChildren.tracking`);
`spawn` registers each child in the registry current where it runs, and the
child's reap removes it from that same registry. "Current" is a context
variable, as trio keeps run-scoped state: every task started inside the block
and every worker thread it starts (``anyio.to_thread`` copies the context) see
it, and nothing outside the block does. A child spawned where no registry is
current is registered nowhere (a test, a tool): nobody but its owner kills it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["LiveChildren", "current_children"]


class _Killable(Protocol):
    def kill_now(self) -> None: ...


class LiveChildren:
    """The children spawned while this registry was current that are not reaped yet.

    Thread-safe: children are added on the thread that spawns them (the loop's, or
    a worker's) and removed on the thread that reaps them, under one lock.
    """

    def __init__(self) -> None:
        self._children: set[_Killable] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._children)

    def __repr__(self) -> str:
        return f"<LiveChildren {len(self)} not reaped>"

    def add(self, child: _Killable) -> None:
        """Hold ``child`` until `discard` (`spawn` calls it)."""
        with self._lock:
            self._children.add(child)

    def discard(self, child: _Killable) -> None:
        """Forget ``child`` (its reap calls it); nothing if it is not held."""
        with self._lock:
            self._children.discard(child)

    def kill_now(self) -> int:
        """SIGKILL every child held and its process group, without any grace.

        For a runner told twice to stop. Each owner still reaps its own child
        (which removes it). Returns how many were signalled.
        """
        with self._lock:
            held = list(self._children)
        for child in held:
            child.kill_now()
        return len(held)

    @contextmanager
    def tracking(self) -> Iterator[LiveChildren]:
        """Make this registry current for the block (its tasks and worker threads too)."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


_CURRENT: Final[ContextVar[LiveChildren | None]] = ContextVar("sandbox_live_children",
                                                              default=None)  # fmt: skip
"""The registry current in this context; holds no children itself (module docstring)."""


def current_children() -> LiveChildren | None:
    """The registry a child spawned here joins, or None (module docstring)."""
    return _CURRENT.get()
