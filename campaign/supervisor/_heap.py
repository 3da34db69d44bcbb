"""Free heap pages go back to the host while a batch runs (glibc's ``malloc_trim``).

A session's attempt allocates and frees far more than it leaves behind (records,
models, stream lines, the render's rows), and glibc's ``free`` returns memory to
the host only from the top of a heap. What the batch keeps per session lands
among what its sessions freed, so the free pages in between stay resident: on
bench/batch.py the heap's free part grew from about 7 to 15 MiB over 3,000
sessions (mallinfo2) while the live objects grew by about 1 kB a session.
``malloc_trim(0)`` hands every whole free page of every arena back to the host
(``MADV_DONTNEED``, malloc_trim(3)); nothing is freed by it, and it takes a fraction
of a millisecond on the runner's heap (bench/batch.py, 6 to 7 trims per 1,000 sessions).
"""

from __future__ import annotations

import ctypes
import functools
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

TRIM_EVERY_S: Final = 5.0
"""Seconds between two trims while a batch runs (as often as the transcripts render at
most). Each page handed back is faulted in again when the heap reuses it: at 5 s about
450 more minor faults per 1,000 sessions, no runner CPU that bench/batch.py can tell
from its noise."""


@functools.cache
def _trim() -> Callable[[int], object] | None:  # the C library's malloc_trim, looked up once
    try:
        trim: Callable[[int], object] = ctypes.CDLL(None).malloc_trim
        return trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim): nothing to do
        return None


def give_back_heap() -> bool:
    """Return the whole free pages of the C heap to the host (no memory is freed by this).

    Safe from any thread (ctypes releases the GIL; malloc_trim takes the arenas' locks).

    Returns:
        False where the C library has no ``malloc_trim`` (the call does nothing there).
    """
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
