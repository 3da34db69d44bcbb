"""A budget shared by the provider's handler threads: what the bodies in flight may hold at once.

The scripted provider bounds the request bodies it holds (bytes read, values decoded) over
every request being handled, so many large requests at once cannot grow its memory past the
bound (docs/provider.md). Each bound is one `InFlight`.
"""

from __future__ import annotations

import threading


class InFlight:
    """A thread-safe amount (bytes or decoded values) taken per request and given back after.

    Args:
        bound: The most that may be taken at once (a count of bytes or of values).
    """

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._taken = 0
        self._lock = threading.Lock()

    def take(self, amount: int) -> bool:
        """Take ``amount``; False, and nothing taken, when it does not fit beside what is held."""
        with self._lock:
            if self._taken + amount > self._bound:
                return False
            self._taken += amount
            return True

    def give(self, amount: int) -> None:
        """Give back what `take` took."""
        with self._lock:
            self._taken -= amount
