"""The record's own bounds on one session: what its stream may add to the ledger and transcript.

A session's stream is the session's to write, so what the record keeps of it is bounded
(docs/recorder.md): the JSON values one line may decode to (`MAX_LINE_VALUES`), one name's
characters (`MAX_NAME_CHARS`), one assistant message's text (`MAX_MESSAGE_CHARS`), the
calls and orphan results (`MAX_SESSION_CALLS`), one call's argument
(`MAX_CALL_ARGUMENT_CHARS`) and all of them (`MAX_SESSION_ARGUMENT_CHARS`).
`RecordBounds` answers each check and keeps the first bound passed as the reason of the
session's ``limit-exceeded`` (`recorder._transform.StreamObserver`). The figures are the
product's; a test gives smaller ones to reach a bound with a short stream.
"""

from __future__ import annotations

from recorder._bounds import (
    MAX_CALL_ARGUMENT_CHARS,
    MAX_LINE_VALUES,
    MAX_MESSAGE_CHARS,
    MAX_NAME_CHARS,
    MAX_SESSION_ARGUMENT_CHARS,
    MAX_SESSION_CALLS,
)
from recorder._harness import json_values

__all__ = ["RecordBounds"]


class RecordBounds:
    """The bounds of one session's record, checked as its stream is read (module doc).

    Each check takes the stdout line number it is asked for (for its reason), returns
    whether the bound is passed, and says so once: `reason` is the first bound passed.
    """

    __slots__ = ("_argument_chars", "call_argument_chars", "line_values", "message_chars",
                 "reason", "session_argument_chars", "session_calls")

    def __init__(self, *, line_values: int = MAX_LINE_VALUES,
                 message_chars: int = MAX_MESSAGE_CHARS, session_calls: int = MAX_SESSION_CALLS,
                 call_argument_chars: int = MAX_CALL_ARGUMENT_CHARS,
                 session_argument_chars: int = MAX_SESSION_ARGUMENT_CHARS) -> None:
        self.line_values = line_values
        """JSON values one line may decode to (`MAX_LINE_VALUES`)."""
        self.message_chars = message_chars
        """Characters of text one assistant message may hold (`MAX_MESSAGE_CHARS`)."""
        self.session_calls = session_calls
        """Calls and orphan results one session may add (`MAX_SESSION_CALLS`)."""
        self.call_argument_chars = call_argument_chars
        """Characters one call's argument may add (`MAX_CALL_ARGUMENT_CHARS`)."""
        self.session_argument_chars = session_argument_chars
        """Characters the session's arguments and ids may add (`MAX_SESSION_ARGUMENT_CHARS`)."""
        self.reason: str | None = None
        """The first bound passed, as the session's ``limit-exceeded`` reason; None: none."""
        self._argument_chars = 0  # what the kept calls' arguments add to the record

    def limit(self, reason: str) -> None:
        """Note a bound passed (another's, such as RC-08's lookups); the first one stays."""
        if self.reason is None:
            self.reason = reason

    def too_many_values(self, line: bytes, number: int) -> bool:
        """Whether ``line`` may decode to more than `line_values` JSON values (its bytes
        counted, `json_values`). A line no longer than the bound cannot pass it."""
        bound = self.line_values
        if len(line) <= bound or (values := json_values(line)) <= bound:
            return False
        self.limit(f"limit-exceeded: stdout line {number} ({len(line)} bytes) may hold "
                   f"{values} JSON values (its braces, brackets and commas), over the "
                   f"{bound} one line may decode to: it was not decoded")
        return True

    def name(self, what: str, value: str | None, number: int) -> str | None:
        """``value``, unless it is longer than `MAX_NAME_CHARS` (then None, and the limit)."""
        if value is None or len(value) <= MAX_NAME_CHARS:
            return value
        self.limit(f"limit-exceeded: the {what} on stdout line {number} has "
                   f"{len(value)} characters, over the {MAX_NAME_CHARS} one name may have")
        return None

    def over_the_message(self, chars: int, number: int) -> bool:
        """Whether an assistant message of ``chars`` characters of text, by stdout line
        ``number``, holds more than `message_chars`."""
        if chars <= self.message_chars:
            return False
        self.limit(f"limit-exceeded: by stdout line {number} an assistant "
                   f"message holds {chars} characters of text, "
                   f"over the {self.message_chars} one message may hold")
        return True

    def past_the_calls(self, what: str, kept: int, number: int) -> bool:
        """Whether ``kept`` calls and orphan results are `session_calls` already."""
        if kept < self.session_calls:
            return False
        self.limit(f"limit-exceeded: the {what} on stdout line {number} is past the "
                   f"{self.session_calls} calls and results one session may add to the record")
        return True

    def over_the_bound(self, tool: str, argument: str, number: int, id_chars: int = 0) -> bool:
        """Whether this call's argument passes what one call, or one session, may add to the
        record (`call_argument_chars`, `session_argument_chars`, which its id counts against
        too). Within both, the argument and its id count against the session's."""
        size = len(argument)
        if size > self.call_argument_chars:
            self.limit(f"limit-exceeded: the {tool} call on stdout line {number} has an "
                       f"argument of {size} characters, over the {self.call_argument_chars} "
                       "one call may add to the ledger and the transcript")
            return True
        self._argument_chars += size + id_chars
        if self._argument_chars > self.session_argument_chars:
            self.limit(f"limit-exceeded: by stdout line {number} the calls' arguments "
                       f"hold {self._argument_chars} characters, over the "
                       f"{self.session_argument_chars} one session may add to the record")
            return True
        return False
