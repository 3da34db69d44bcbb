"""Tolerant reading of the harness's stream-json lines (Claude Code 2.1.197 and later).

Every harness release adds fields, so nothing here rejects an unknown key or an
unknown line type: the line is parsed as a JSON object and classified by its
``type`` (and, for ``system`` lines, ``subtype``). What a line must contain for a
*rule* is checked by the rule's own module (RC-07 in `recorder._initcheck`, the
rest in `recorder._transform`). Field facts: tests/fixtures/captures/STREAM_JSON_FACTS.md.

Numbers with a fraction or exponent are parsed as `decimal.Decimal`, so
``total_cost_usd`` is exactly the JSON text (RC-14); integers stay `int`.

`parse_line` is the reference: the standard library's decoder, the whole
line. `observe_line` is what the transform calls: the same answer on every key
it or the init check reads (`LINE_KEYS`), from a typed decoder (msgspec) that
decodes each line once, only those keys, and skips the rest unbuilt; an init
line, a few a session, is given whole (its every key is decided or listed, RC-07). A Read's
result is printed twice per line (the numbered text in ``message.content``, the
raw text again in ``tool_use_result``): the second copy, half of a large stream's bytes, is never
turned into a string. Whatever the typed decoder does not take (a lone
surrogate, ``NaN``, a byte-order mark, a line that is not an object, any
malformed line) goes to `parse_line`, so it decides every case it decided
before.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Final, Literal, TypeAlias

import msgspec

LineKind: TypeAlias = Literal["init", "system", "assistant", "user", "result", "other"]
"""The classes of harness line the transform treats differently."""

SYNTHETIC_MODEL: Final = "<synthetic>"
"""``message.model`` of the assistant line the CLI makes up for an API error."""

PRE_INIT_SUBTYPES: Final = frozenset({"hook_started", "hook_response"})
"""``system`` subtypes allowed before the first init line (SessionStart hooks; RC-07)."""


def parse_line(line: bytes) -> dict[str, Any] | None:
    """Parse one stdout line (without its newline) as a JSON object.

    Args:
        line: the raw bytes of one complete line, UTF-8 (json also accepts
            UTF-16/32 with a BOM, as `json.loads` does for bytes).

    Returns:
        The object with floats as `Decimal`, or None when the line is not a
        JSON object (not JSON, invalid UTF-8, or JSON of another type such as
        a list or a number): the caller counts it as an anomaly (RC-07).
    """
    try:
        value = json.loads(line, parse_float=Decimal)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return value if isinstance(value, dict) else None


OBSERVED_KEYS: Final = ("type", "subtype", "message", "parent_tool_use_id", "is_error",
                        "api_error_status", "total_cost_usd", "num_turns", "result",
                        "permission_denials")
"""The top-level keys the transform reads of any line."""
INIT_KEYS: Final = ("cwd", "claude_code_version", "permissionMode", "plugins", "mcp_servers",
                    "skills", "memory_paths", "additional_directories", "messaging_socket_path",
                    "sandbox_enabled", "capabilities", "original_cwd")
"""The further top-level keys an init line is read for: the fields the init check polices
(`recorder._initcheck.check_init`, RC-07; `recorder._initkeys.POLICED_INIT_KEYS`, a test
holds the two equal) and the two the transform keeps (``cwd``, ``claude_code_version``). An
init line is read whole (`observe_line`), so every key it prints is seen: unknown keys are
listed (`recorder._initkeys.unknown_init_keys`)."""
LINE_KEYS: Final = OBSERVED_KEYS + INIT_KEYS
"""Every key `observe_line` gives of a line other than an init line, when the line has it."""



def repeated_keys(line: bytes) -> list[str]:
    """The keys of `LINE_KEYS` that the object ``line`` prints more than once at its top level.

    Every decoder here keeps a repeated key's last copy; another reader of the stream may keep
    the first, so a line repeating a key the recorder reads says two things (RC-07 refuses such
    an init line: fail closed). Each key once, in the order of its second copy; [] when the line
    is not a JSON object (`parse_line` decides that).
    """
    try:
        pairs = json.loads(line, object_pairs_hook=list, parse_float=Decimal)
    except (ValueError, RecursionError):
        return []
    if not isinstance(pairs, list) or not all(isinstance(p, tuple) for p in pairs):
        return []
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for key, _ in pairs:
        if key in seen and key in LINE_KEYS:
            repeated.setdefault(key, None)
        seen.add(key)
    return list(repeated)

class _Observed(msgspec.Struct):
    """One line's `LINE_KEYS`, each any JSON value (the transform and the init check check
    the types). A line other than an init line has none of `INIT_KEYS` in practice, so they
    cost it nothing; an init line is then read whole (`observe_line`)."""

    type: Any = msgspec.UNSET
    subtype: Any = msgspec.UNSET
    message: Any = msgspec.UNSET
    parent_tool_use_id: Any = msgspec.UNSET
    is_error: Any = msgspec.UNSET
    api_error_status: Any = msgspec.UNSET
    total_cost_usd: Any = msgspec.UNSET
    num_turns: Any = msgspec.UNSET
    result: Any = msgspec.UNSET
    permission_denials: Any = msgspec.UNSET
    cwd: Any = msgspec.UNSET
    claude_code_version: Any = msgspec.UNSET
    permissionMode: Any = msgspec.UNSET
    plugins: Any = msgspec.UNSET
    mcp_servers: Any = msgspec.UNSET
    skills: Any = msgspec.UNSET
    memory_paths: Any = msgspec.UNSET
    additional_directories: Any = msgspec.UNSET
    messaging_socket_path: Any = msgspec.UNSET
    sandbox_enabled: Any = msgspec.UNSET
    capabilities: Any = msgspec.UNSET
    original_cwd: Any = msgspec.UNSET


_DECODER: Final = msgspec.json.Decoder(_Observed, float_hook=Decimal)
"""Floats as `Decimal` from their JSON text (``float_hook`` receives the literal)."""
_UTF8_PIECE_BYTES: Final = 64 * 1024
"""Bytes decoded at a time when a non-ASCII line is checked for UTF-8 (bounded memory)."""


def json_values(data: bytes) -> int:
    """An upper bound on the number of JSON values ``data`` decodes to, without decoding it.

    Every value but the first of an array or an object's members follows a ``,``, and every
    array and object starts with ``[`` or ``{``; so the count of those three bytes, plus one,
    bounds the values a decoder builds (keys aside, one per member, so at most as many
    again). Braces, brackets and commas inside strings count too: an over-count. Three
    passes at C speed (about 0.1 s for 60 MiB) and no allocation; never more than
    ``len(data)``. The bound it is checked against: `recorder._bounds.MAX_LINE_VALUES`
    (docs/recorder.md).
    """
    return data.count(b"{") + data.count(b"[") + data.count(b",")


def observe_line(line: bytes) -> dict[str, Any] | None:
    """`parse_line` for the transform: equal to it on every key of `LINE_KEYS`; an init line whole.

    Every line is decoded by the typed decoder, into the keys of `LINE_KEYS` it has (the
    others are skipped unbuilt); the dict returned holds exactly those keys, as
    `parse_line`'s dict would hold them. An init line (``system``/``init``: a few a session,
    a few kilobytes each) is then given whole, as `parse_line` gives it: its typed decode is
    let go first, so the two never hold its objects at once; the init check needs every key
    it prints (the unknown ones are listed, RC-07). None exactly when `parse_line` returns
    None (the line is an anomaly). The typed decoder does not check the skipped keys' bytes
    for UTF-8, which `parse_line` requires of the whole line, so a non-ASCII line is checked
    first (`_is_utf8`). Whatever the typed decoder refuses goes to `parse_line` instead
    (then that line is decoded by it alone, and cut to `LINE_KEYS` the same way unless it
    is an init line). Both decoders refuse nesting past Python's recursion limit, which
    depends on the caller's stack; the typed one takes a few levels more, so within those
    few levels of the limit a line may be read here that `parse_line` would refuse.
    """
    if not (line.isascii() or _is_utf8(line)):
        return _cut(parse_line(line))  # not UTF-8: the reference decides (it reads UTF-16/32)
    try:
        observed = _DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError):  # a ValidationError is a DecodeError
        return _cut(parse_line(line))
    if observed.type == "system" and observed.subtype == "init":
        del observed  # let go before the whole decode
        return parse_line(line)
    return {key: value for key in LINE_KEYS
            if (value := getattr(observed, key)) is not msgspec.UNSET}


def _cut(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """``obj`` with only its keys of `LINE_KEYS` (what `observe_line` gives), or None; an init
    line whole."""
    if obj is None or line_kind(obj) == "init":
        return obj
    return {key: obj[key] for key in LINE_KEYS if key in obj}


def _is_utf8(line: bytes) -> bool:
    """Whether ``line`` decodes as `parse_line` decodes it (UTF-8, lone surrogates passed).

    Decoded a piece at a time, each cut before a byte that starts a character
    (not 0b10xxxxxx), so no piece splits one and the answer is the whole line's.
    Past three continuation bytes in a row the cut may fall inside the run, and
    such a run is invalid in either piece, as in the whole.
    """
    view = memoryview(line)
    start, size = 0, len(line)
    while start < size:
        end = min(start + _UTF8_PIECE_BYTES, size)
        if end < size:
            floor = end - 3
            while end > floor and 0x80 <= line[end] < 0xC0:
                end -= 1
        try:
            str(view[start:end], "utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return False
        start = end
    return True


def line_kind(obj: dict[str, Any]) -> LineKind:
    """Classify a parsed line; unknown types (``stream_event``, ...) are "other"."""
    kind = obj.get("type")
    if kind == "system":
        return "init" if obj.get("subtype") == "init" else "system"
    if kind == "assistant":
        return "assistant"
    if kind == "user":
        return "user"
    if kind == "result":
        return "result"
    return "other"


def system_subtype(obj: dict[str, Any]) -> str | None:
    """The ``subtype`` of a ``system`` line, None for other lines or a non-string subtype."""
    subtype = obj.get("subtype")
    return subtype if obj.get("type") == "system" and isinstance(subtype, str) else None


def is_allowed_before_init(obj: dict[str, Any]) -> bool:
    """True for the JSON lines RC-07 admits before the first init line (hook events)."""
    return system_subtype(obj) in PRE_INIT_SUBTYPES


def message_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The ``message`` object of an assistant or user line, None when absent or not an object."""
    message = obj.get("message")
    return message if isinstance(message, dict) else None


def content_blocks(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The object blocks of ``message.content`` (a string content yields no blocks)."""
    message = message_of(obj)
    content = message.get("content") if message is not None else None
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict)]


def is_main_thread(obj: dict[str, Any]) -> bool:
    """True when ``parent_tool_use_id`` is null or absent (not inside a subagent)."""
    return obj.get("parent_tool_use_id") is None


def assistant_model(obj: dict[str, Any]) -> str | None:
    """``message.model`` of an assistant line (the served model), None when absent."""
    message = message_of(obj)
    model = message.get("model") if message is not None else None
    return model if isinstance(model, str) else None


def is_synthetic(obj: dict[str, Any]) -> bool:
    """True for the CLI's made-up error message (``message.model == "<synthetic>"``)."""
    return assistant_model(obj) == SYNTHETIC_MODEL


def tool_result_text(block: dict[str, Any]) -> str:
    r"""The text of a ``tool_result`` block, the input of its digest (RC-10).

    A string ``content`` is the text itself; a list is the ``text`` of its text
    blocks joined by ``"\n"`` (image and other blocks carry no text); anything
    else, or no content, is the empty string.
    """
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


MAX_COST_USD: Final = Decimal(1_000_000)
"""The largest ``total_cost_usd`` taken as a cost: one session does not spend a million
dollars; a larger, negative or non-finite figure is malformed and the cost is unknown."""


def decimal_or_none(value: object) -> Decimal | None:
    """A ``total_cost_usd`` JSON number as `Decimal`, USD; None when unknown or malformed.

    Bools and other types are None, and so is a negative, non-finite or absurd
    amount (over `MAX_COST_USD`): a session's own figure must never make the
    arm's cost, and so its transcript, unrenderable (the attempt's cost is then
    unknown, and the transcript says the figure is a lower bound).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        value = Decimal(value)
    if not isinstance(value, Decimal):
        return None
    if not value.is_finite() or value < 0 or value > MAX_COST_USD:
        return None
    return value
