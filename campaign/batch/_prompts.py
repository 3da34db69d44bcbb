"""The system prompts an arm's recorded sessions met, counted from the ledger's ``request`` rows.

The provider gateway digests each request's system prompt (its date line taken out:
``system_digest``), so a reader can show that within an arm every session met the same
system prompt, in every real batch (blind sessions proven, not only in tests). A session's
digests count once it ends recorded; those of its other attempts do not. Memory is bounded
for a 10,000-session batch: one count per distinct digest, and a set of digests only per
attempt still in flight (the rows of one attempt come before its final record).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._fold import SessionKey


@dataclass(slots=True)
class PromptTally:
    """System-prompt digest -> recorded sessions that met it, fed record by record.

    Attributes:
        digests: Each digest -> recorded sessions whose last attempt sent it.
        sessions: Recorded sessions with at least one digested request.
    """

    digests: Counter[str] = field(default_factory=Counter)
    sessions: int = 0
    _open: dict[SessionKey, set[str]] = field(default_factory=dict)
    """Per session with an attempt in flight, the digests its requests sent so far."""

    def started(self, key: SessionKey) -> None:
        """A new attempt of ``key`` began: what an earlier one sent does not count."""
        self._open.pop(key, None)

    def request(self, key: SessionKey, digest: str | None) -> None:
        """One ``request`` row of ``key``'s attempt in flight, with its digest (None: none)."""
        if digest is not None:
            self._open.setdefault(key, set()).add(sys.intern(digest))

    def final(self, key: SessionKey, *, recorded: bool) -> None:
        """``key``'s attempt ended: its digests count when it ended recorded."""
        sent = self._open.pop(key, None)
        if recorded and sent:
            self.sessions += 1
            self.digests.update(sent)

    @property
    def in_flight(self) -> int:
        """Attempts whose digests are held until their final record (the bounded part)."""
        return len(self._open)

    def merge(self, other: PromptTally) -> None:
        """Add ``other``'s counted sessions (another probe's, another batch's)."""
        self.digests.update(other.digests)
        self.sessions += other.sessions

    def copy(self) -> PromptTally:
        """The counts, without the attempts in flight (a frozen arm's)."""
        return PromptTally(Counter(self.digests), self.sessions)
