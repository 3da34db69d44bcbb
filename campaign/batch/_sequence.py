"""The order in which a runner writes one session's records, checked as the ledger is read.

The runner writes, for each attempt of a session, one ``started`` record and
then at most one ``final`` record, and numbers a session's attempts upwards
over every invocation (docs/batch.md, "Ledger"). A ledger that breaks this
order holds a line the runner did not write: a ``final`` record copied twice
would count its attempt's cost twice, one for an attempt never started would
count a cost nobody spent. `AttemptOrder` names the first line that breaks
it; the ledger reader turns that into `LedgerCorrupt` (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._records import FinalRecord, StartedRecord

if TYPE_CHECKING:
    from ._records import LedgerRecord


class AttemptOrder:
    """Checks each session's records against the order the runner writes them in.

    Memory: one small entry per session seen (about 200 bytes; 2 MB at 10,000).
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, str, str], tuple[int, bool]] = {}
        """Per session: its last started attempt, and whether that attempt has its final."""

    def check(self, record: LedgerRecord) -> str | None:
        """Take the next record in ledger order; what is wrong with it, or None.

        Returns:
            None for a record in order (and for kinds other than started and
            final); else the problem in words, e.g. ``"a second final record
            for attempt 1 of present HW-PRB-0001 s1"``.
        """
        if not isinstance(record, StartedRecord | FinalRecord):
            return None
        key = (record.arm, record.probe, record.session)
        name = f"attempt {record.attempt} of {' '.join(key)}"
        last = self._last.get(key)
        if isinstance(record, StartedRecord):
            if last is not None and record.attempt <= last[0]:
                return (f"{name} starts after attempt {last[0]} started (a session's attempts "
                        "are numbered upwards)")
            self._last[key] = (record.attempt, False)
            return None
        if last is None or last[0] != record.attempt:
            return f"a final record for {name}, which is not the session's last started attempt"
        if last[1]:
            return f"a second final record for {name}"
        self._last[key] = (record.attempt, True)
        return None
