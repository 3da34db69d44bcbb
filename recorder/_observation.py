"""What one attempt's stdout showed: the frozen facts `StreamObserver.finish` returns.

Data only (no logic): the transform (`recorder._transform`) fills these, the
event builder (`recorder._event`) and the session (`campaign.supervisor._session`) read
them. Nothing here holds tool output: per call a name, an argument, an id and a
digest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from decimal import Decimal

    from recorder._vocab import SessionState


MAX_DENIALS_KEPT: Final = 1000
"""Denied calls a result line's ``permission_denials`` contributes, at most."""
MAX_TOOL_NAME_CHARS: Final = 256
"""Characters of a denied tool's name kept."""


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A stdout line that is not a JSON object (RC-07): kept aside, never merged."""

    line_number: int
    """1-based line number in the stream."""
    size_bytes: int
    """Length of the whole line."""
    excerpt: str
    """Its first `recorder._transform.ANOMALY_EXCERPT_BYTES` bytes, decoded with replacement."""


@dataclass(frozen=True, slots=True)
class ObservedCall:
    """One tool_use as seen on the stream, paired with its tool_result by id (RC-10)."""

    tool: str
    """The tool's name exactly as the stream gives it."""
    argument: str
    """RC-10's argument (see `call_argument`)."""
    tool_use_id: str | None
    """The tool_use ``id`` (None when the line had none: it can never be paired)."""
    result_digest: str | None
    """``sha256:`` of the tool_result text; None when no result arrived."""
    result_is_error: bool
    """The tool_result had ``is_error: true`` (a failed Read keeps its text digest)."""
    read_path: str | None
    """For a Read, its ``file_path`` as given (for the manifest lookup); else None."""
    outside_paths: frozenset[str]
    """RC-08 paths this call named outside the workspace."""
    in_subagent: bool
    """``parent_tool_use_id`` was set: the call ran inside a subagent."""

    @property
    def is_read(self) -> bool:
        """True for a Read call with a path."""
        return self.read_path is not None


@dataclass(frozen=True, slots=True)
class OrphanResult:
    """A tool_result that answers no tool_use seen before it (RC-10: recorded, never dropped).

    Either its ``tool_use_id`` names no earlier tool_use, or that tool_use was
    already answered (a second result). It cannot become a `Call` (it has no
    tool and no argument), so the ledger keeps it with the session.
    """

    line_number: int
    """1-based stdout line that carried it."""
    tool_use_id: str | None
    """The id it answers (None when absent or not a string)."""
    result_digest: str
    """``sha256:`` of its text, as for any result (RC-10)."""
    repeated: bool
    """True when the tool_use it names had already been answered."""


@dataclass(frozen=True, slots=True)
class Observation:
    """What one attempt of a session showed on its stdout, and the state it ends in."""

    state: SessionState
    reason: str
    """Human reason naming the rule, the field and the value, e.g.
    ``"permissionMode = 'plan': the driver asked for 'dontAsk' ... (RC-07)"``."""
    calls: tuple[ObservedCall, ...]
    """Tool calls in tool_use order, subagent calls included."""
    produced_paths: tuple[str, ...]
    """Paths named by Edit/Write/MultiEdit/NotebookEdit, as given, first-seen order, unique."""
    final_text: str | None
    """RC-13's final message (text blocks joined with ""), None when it had no text block."""
    served_model: str | None
    """``message.model`` of the last main-thread non-synthetic assistant line."""
    cost_usd: Decimal | None
    """``total_cost_usd`` of the last result line, exact; None = unknown (no result line)."""
    claude_code_version: str | None
    """``claude_code_version`` of the first init line."""
    anomalies: tuple[Anomaly, ...]
    """The first `recorder._transform.ANOMALIES_KEPT` non-JSON lines."""
    anomaly_count: int
    """Every non-JSON line, kept or not."""
    outside_paths: frozenset[str]
    """RC-08: distinct outside paths over all calls."""
    retryable: bool
    api_error_status: int | None
    """The last result line's ``api_error_status`` (None when null, absent or no result)."""
    refusals: tuple[str, ...] = ()
    """Every RC-07 reason seen (the state may still be decided earlier, e.g. timed-out)."""
    failed_mcp_servers: tuple[str, ...] = ()
    """Declared MCP servers an init line reported ``failed``."""
    result_subtype: str | None = None
    num_turns: int | None = None
    orphan_results: tuple[OrphanResult, ...] = ()
    """tool_results that matched no earlier tool_use by id, or one already answered."""
    lines: int = 0
    """Complete lines fed."""
    denied_tools: tuple[str, ...] = ()
    """The tool of each call the harness's permission rules denied, in order, as the last
    result line's ``permission_denials`` lists them (at most `MAX_DENIALS_KEPT`): the
    session asked for a tool its arm's allowed-tools list does not give."""
    unknown_init_keys: tuple[str, ...] = ()
    """The init lines' keys no decision names (`recorder._initkeys`, RC-07), first seen
    first, each at most `recorder._initkeys.MAX_INIT_KEY_CHARS` characters (a longer one cut
    and marked), at most `recorder._initkeys.MAX_UNKNOWN_INIT_KEYS` of them: listed in the
    final record, the prose and ``show``, never a refusal by themselves."""
    served_message_id: str | None = None
    """``message.id`` of the last main-thread non-synthetic assistant line (at most
    `sandbox.gateway.MAX_TEXT` characters, as a gateway row keeps it); None when that line
    had none, or none that is a string. The provider gateway's row with this
    ``message_id`` names the model that served the final message (``served_version``)."""
