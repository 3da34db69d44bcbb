"""Every init-line key decided (docs/glossary.md RC-07): policed, recorded in the prose, or ignored.

The census of a release (docs/census.md) lists the keys its ``system``/``init`` lines print.
Each key of the releases below is decided here, once, with its reason in words and the first
of those releases that prints it (`INIT_KEY_DECISIONS`). The decisions were made from one
init line of each release (tests/fixtures/init_lines/<release>.json, taken from a demo batch
under the real sandbox) and from the init line's builder in each release's binary.

- ``policed``: `recorder._initcheck.check_init` holds the key to a rule and fails closed: a
  missing key refuses on a release that prints it (`required`), an unknown shape always.
- ``prose``: the transcript's prose writes the key's value (as a quoted literal).
- ``ignored``: read by nothing, for the reason given.

A key no decision names is *unknown*: never a refusal by itself, it is listed in the session's
final record, in the transcript's prose and by ``show`` (`unknown_init_keys`), so a new
release's novelty shows in the first batch that meets it. docs/recorder.md ("Every init key
decided") holds the same table: `decisions_markdown` writes it, a test holds the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from recorder._releases import parse_release

if TYPE_CHECKING:
    from collections.abc import Iterable

Decision: TypeAlias = Literal["policed", "prose", "ignored"]
"""What the recorder does with an init key (RC-07)."""

DECIDED_FROM: Final = ("2.1.197", "2.1.250", "2.1.300", "2.1.332")
"""The releases whose init keys the table decides, oldest first (their censuses' releases)."""


@dataclass(frozen=True, slots=True)
class InitKeyDecision:
    """One init key's decision (RC-07)."""

    key: str
    """The key as the init line prints it."""
    decision: Decision
    since: str
    """The first release of `DECIDED_FROM` whose init line prints it."""
    reason: str
    """Why, in words (one sentence, no trailing period)."""
    absent_allowed: bool = False
    """For a policed key: its absence is a value the rule accepts (no socket), so it is never
    required (`required`)."""


def _d(key: str, decision: Decision, since: str, reason: str, *,
       absent_allowed: bool = False) -> InitKeyDecision:
    return InitKeyDecision(key, decision, since, reason, absent_allowed)


_SLASH = ("names of commands typed at a prompt; a headless session (`-p`) has no prompt after "
          "its task, the skills among them are the policed `skills`, and a plugin's come only "
          "with a plugin, which `plugins` polices")
_TELEMETRY = ("a switch of the harness's own telemetry; what a session reaches is its sandbox's "
              "(a confined session reaches the provider only: docs/glossary.md: RC-05)")
_DISPLAY = "a setting of how the harness shows or reasons, not of what it reaches"

INIT_KEY_DECISIONS: Final[tuple[InitKeyDecision, ...]] = (
    _d("type", "ignored", "2.1.197", "the line's kind (`system`), read to classify the line"),
    _d("subtype", "ignored", "2.1.197", "the line's kind (`init`), read to classify the line"),
    _d("cwd", "policed", "2.1.197",
       "the session's working directory: exactly the batch's workspace path, which names "
       "nothing of its arm, probe, session or batch (docs/glossary.md: RC-02)"),
    _d("session_id", "ignored", "2.1.197",
       "a random id the harness makes for each run; it names nothing and reaches nothing"),
    _d("tools", "ignored", "2.1.197",
       "the harness's built-in tool names, not the ones a session may use: `--allowedTools`, "
       "`--disallowedTools` and dontAsk decide that (docs/glossary.md: RC-04), every call "
       "is recorded and a denied one listed (`permission_denials`); MCP tools come only with "
       "`mcp_servers`"),
    _d("mcp_servers", "policed", "2.1.197",
       "an MCP server runs code and reaches what it likes: each must be declared by the "
       "workspace's `.mcp.json`"),
    _d("model", "ignored", "2.1.197",
       "the model the harness will ask for (the plan's); what answered is `message.model`, "
       "which the identity's `served_version` records (docs/glossary.md: RC-14)"),
    _d("permissionMode", "policed", "2.1.197",
       "exactly the mode the driver asked for, dontAsk: another mode changes what runs "
       "without asking (docs/glossary.md: RC-04)"),
    _d("slash_commands", "ignored", "2.1.197", _SLASH),
    _d("apiKeySource", "ignored", "2.1.197",
       "where the harness took its key from; the runner gives one placeholder key in one "
       "variable (docs/gateway.md), and its own gateway is all a confined session reaches, "
       "whichever source it used (docs/glossary.md: RC-03)"),
    _d("claude_code_version", "prose", "2.1.197",
       "the harness release, written in the prose (a quoted literal, at most 256 characters) "
       "and in each final record; it decides which policed keys an init line must print"),
    _d("output_style", "ignored", "2.1.197",
       "the style of the harness's answers, set by the workspace's settings like the rest of "
       "the corpus's condition; it reaches nothing"),
    _d("agents", "ignored", "2.1.197",
       "the subagent types the Task tool may start; a subagent's calls are recorded with the "
       "session's (`in_subagent`), under the same allowed tools and sandbox"),
    _d("skills", "policed", "2.1.197",
       "a skill brings instructions and files from where it lives: none may carry a plugin "
       "namespace or be named like a host skill directory"),
    _d("plugins", "policed", "2.1.197",
       "a plugin brings commands, hooks, skills and servers: only the harness's builtin ones"),
    _d("analytics_disabled", "ignored", "2.1.197", _TELEMETRY),
    _d("product_feedback_disabled", "ignored", "2.1.197", _TELEMETRY),
    _d("uuid", "ignored", "2.1.197", "the line's random id; it names nothing and reaches nothing"),
    _d("memory_paths", "policed", "2.1.197",
       "memory the harness reads into the session: every path inside the session's own config "
       "directory"),
    _d("fast_mode_state", "ignored", "2.1.197",
       "a faster serving mode of the model; what answered is `message.model` and what it cost "
       "`total_cost_usd`, both recorded"),
    _d("terminal_slash_commands", "ignored", "2.1.250", _SLASH),
    _d("capabilities", "policed", "2.1.250",
       "protocol features the harness offers whoever drives it; each must be one the census has "
       "seen, so a new one is read before a batch relies on it not mattering"),
    _d("messaging_socket_path", "policed", "2.1.250",
       "a socket through which other sessions may message this one: absent, null, or under "
       "`/tmp/`, the sandbox's private tmpfs (`--tmpfs /tmp` for every session, the workspace "
       "path never under it), which nothing outside the sandbox reaches",
       absent_allowed=True),
    _d("fast_mode_disabled_reason", "ignored", "2.1.250",
       "why fast mode is off (`fast_mode_state`)"),
    _d("per_turn_effort_active", "ignored", "2.1.300", _DISPLAY),
    _d("view_mode", "ignored", "2.1.300", _DISPLAY),
    _d("served_by_anthropic", "ignored", "2.1.332",
       "the harness's own guess whether its API is Anthropic's; the prose names the provider "
       "the runner set up, a fact rather than the session's claim"),
    _d("sandbox_enabled", "policed", "2.1.332",
       "the harness's own sandbox toggle: it must be false (the driver never asks for it, and a "
       "workspace setting turning it on changes what Bash may reach)"),
    _d("original_cwd", "policed", "2.1.332",
       "the directory the harness started in: exactly the batch's workspace path, like `cwd`"),
    _d("additional_directories", "policed", "2.1.332",
       "directories the session may reach beyond its working directory: none (the driver "
       "grants no directory beyond the workspace)"),
    _d("ultrathink_available", "ignored", "2.1.332", _DISPLAY),
    _d("ultrathink_typed_raises", "ignored", "2.1.332", _DISPLAY),
)
"""Every init key of the releases of `DECIDED_FROM`, grouped by the first release that prints
it, each group in the order its release prints them."""

DECISIONS: Final[dict[str, InitKeyDecision]] = {d.key: d for d in INIT_KEY_DECISIONS}
"""`INIT_KEY_DECISIONS` by key."""
DECIDED_INIT_KEYS: Final = frozenset(DECISIONS)
"""Every key the table decides (the census prints "decided" for these, "not decided" else)."""
POLICED_INIT_KEYS: Final = tuple(d.key for d in INIT_KEY_DECISIONS if d.decision == "policed")
"""The keys `recorder._initcheck.check_init` holds to a rule."""

KNOWN_CAPABILITIES: Final = frozenset({
    # 2.1.250 prints the first three, 2.1.300 the first ten (with the two below), 2.1.332 all.
    "interrupt_receipt_v1", "interrupt_cancel_queued_v1", "interrupt_send_now_v1",
    "interrupt_requeue_taken_v1", "msg_lifecycle_v1", "request_marker_lists_v1",
    "ask_user_question_unanswered_v1", "lifecycle_wakeup_source_v1",
    "sdk_mcp_tools_list_changed", "sdk_mcp_manifests", "mcp_read_resource_v1",
    "mcp_tool_ui_meta_v1", "ui_surface_v1", "mcp_call_result_not_for_model_v1",
    "mcp_call_soft_error_result_v1", "mcp_call_check_permissions_v1", "voice_call_talk_line_v1",
    "withdrawn_files_note_v2", "withdrawn_tools_v1", "ui_pane_widget_v1",
    "reload_plugins_refuse_if_busy_v1", "get_usage_detached_v1", "silent_resend_files_v1",
})
"""The ``capabilities`` an init line may list: the union the releases of `DECIDED_FROM` print."""

MAX_UNKNOWN_INIT_KEYS: Final = 32
"""Unknown keys kept per session, first seen first (a release adds a handful)."""
MAX_INIT_KEY_CHARS: Final = 64
"""Characters of an unknown key kept (the longest decided key has 27); a longer one is kept
cut, marked with its length, so a session cannot make its record or prose long."""


def required(key: str, version: object) -> bool:
    """Whether an init line of ``version`` (its ``claude_code_version``) must print ``key``.

    A policed key is required of a release at or after the first one that prints it
    (`InitKeyDecision.since`); one the oldest release of `DECIDED_FROM` prints is required of
    every release (older ones printed it too, in other shapes: bug input BC-08); one whose
    absence the rule accepts (`InitKeyDecision.absent_allowed`) is never required. A version
    that is missing or not ``MAJOR.MINOR.PATCH`` requires every policed key (fail closed).
    """
    decision = DECISIONS.get(key)
    if decision is None or decision.decision != "policed" or decision.absent_allowed:
        return False
    if decision.since == DECIDED_FROM[0]:
        return True
    release = parse_release(version) if isinstance(version, str) else None
    since = parse_release(decision.since)
    return release is None or since is None or release >= since


def unknown_init_keys(keys: Iterable[str]) -> list[str]:
    """The keys of an init line no decision names, in line order, each as it is kept.

    A key over `MAX_INIT_KEY_CHARS` characters is kept as its first `MAX_INIT_KEY_CHARS`
    and ``"... (<n> characters)"``. Not bounded in number here (the caller keeps at most
    `MAX_UNKNOWN_INIT_KEYS` per session).
    """
    return [key if len(key) <= MAX_INIT_KEY_CHARS
            else f"{key[:MAX_INIT_KEY_CHARS]}... ({len(key)} characters)"
            for key in keys if key not in DECISIONS]


def decisions_markdown() -> str:
    """The decision table as docs/recorder.md shows it: one row per key, table order."""
    rows = ["| key | decision | first printed by | why |", "|---|---|---|---|"]
    for d in INIT_KEY_DECISIONS:
        decision = f"{d.decision} (may be absent)" if d.absent_allowed else d.decision
        rows.append(f"| `{d.key}` | {decision} | {d.since} | {d.reason} |")
    return "\n".join(rows)
