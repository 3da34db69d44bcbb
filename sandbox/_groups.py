"""The caller's own exception out of a task group that runs a helper beside the caller's block.

trio's strict task groups (and anyio's on every backend) wrap an exception
raised in the block in an exception group. Where the helper beside the block
never raises (the egress proxy's handlers, the limits' watch), a group of one
is the caller's own exception: `single_unwrapped` hands it back as raised, so
``except OSError`` and cancellation still work at the call site.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def single_unwrapped() -> Iterator[None]:
    """Re-raise an exception group of exactly one exception as that exception.

    Raises:
        BaseException: the one exception of a group raised in the block, or the
            group itself when it holds several (a bug beside the block).
    """
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
