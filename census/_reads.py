"""What the recorder does with each key a census lists: the printout's "recorder reads" column.

Two sources, both the recorder's own (`recorder`'s public names, never a copy here):

* the keys its transform reads of any line (`recorder.OBSERVED_KEYS`) and of an init line
  (`recorder.INIT_KEYS`): ``read``;
* its decision tables, when `recorder` exports them: every init key decided (RC-07,
  ``INIT_KEY_DECISIONS``: ``policed``, ``prose`` or ``ignored``) and every result key
  (RC-14, ``RESULT_KEYS``: ``read``, ``prose`` or ``ignored``); each an iterable of objects
  with ``key`` and ``decision``. A table the recorder does not export yet is no decision.

An init key neither read nor decided is ``not decided``: a census that lists one does not
pass (docs/census.md). A key of another kind the recorder does not read is ``not read``,
which is no failure: the recorder is tolerant of what it does not need.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Final

import recorder

from ._census import INIT_KIND

__all__ = ["NOT_DECIDED", "NOT_READ", "READ", "RecorderKeys", "recorder_keys"]

READ: Final = "read"
NOT_READ: Final = "not read"
NOT_DECIDED: Final = "not decided"
INIT_TABLE: Final = "INIT_KEY_DECISIONS"
"""The name under which `recorder` exports its init-key decisions (RC-07)."""
RESULT_TABLE: Final = "RESULT_KEYS"
"""The name under which `recorder` exports its result-key decisions (RC-14)."""


@dataclass(frozen=True, slots=True)
class RecorderKeys:
    """The recorder's key lists and decisions, as the printout reads them."""

    observed: frozenset[str]
    """Read of any line (`recorder.OBSERVED_KEYS`)."""
    init: frozenset[str]
    """Read of an init line besides (`recorder.INIT_KEYS`)."""
    init_decisions: Mapping[str, str] = field(default_factory=dict)
    result_decisions: Mapping[str, str] = field(default_factory=dict)
    tables: tuple[str, ...] = ()
    """The decision tables found in `recorder` (for the printout's header)."""

    def reading(self, kind: str, key: str) -> str:
        """What the recorder does with ``key`` of a ``kind`` line, in one or two words."""
        if kind == INIT_KIND:
            if key in self.init_decisions:
                return self.init_decisions[key]
            return READ if key in self.observed or key in self.init else NOT_DECIDED
        if kind == "result" and key in self.result_decisions:
            return self.result_decisions[key]
        return READ if key in self.observed else NOT_READ

    def undecided_init_keys(self, census: Mapping[str, Any]) -> list[str]:
        """The init keys of ``census`` the recorder neither reads nor decides, sorted."""
        keys = census.get("kinds", {}).get(INIT_KIND, {}).get("keys", {})
        return [key for key in sorted(keys) if self.reading(INIT_KIND, key) == NOT_DECIDED]


def unseen_capabilities(census: Mapping[str, Any]) -> list[str]:
    """The ``capabilities`` members of ``census``'s init line that are not
    `recorder.KNOWN_CAPABILITIES`, sorted: the recorder refuses every session whose init line
    lists one (RC-07, fail closed), so a release that prints one does not pass."""
    members = census.get("kinds", {}).get(INIT_KIND, {}).get("members", {})
    return sorted(set(members.get("capabilities", {})) - set(recorder.KNOWN_CAPABILITIES))


def _table(module: ModuleType, name: str) -> dict[str, str] | None:
    rows = getattr(module, name, None)
    if rows is None:
        return None
    if isinstance(rows, Mapping):
        rows = rows.values()
    if not isinstance(rows, Iterable):
        return None
    return {row.key: str(row.decision) for row in rows
            if isinstance(getattr(row, "key", None), str) and hasattr(row, "decision")}


def recorder_keys(module: ModuleType = recorder) -> RecorderKeys:
    """The key lists and decision tables ``module`` (the recorder) exports."""
    init = _table(module, INIT_TABLE)
    result = _table(module, RESULT_TABLE)
    return RecorderKeys(observed=frozenset(module.OBSERVED_KEYS),
                        init=frozenset(module.INIT_KEYS), init_decisions=init or {},
                        result_decisions=result or {},
                        tables=tuple(name for name, table in ((INIT_TABLE, init),
                                                              (RESULT_TABLE, result))
                                     if table is not None))
