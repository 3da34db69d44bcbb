"""The Messages API wire shapes the scripted provider sends: SSE events and whole messages."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from ._scripts import TextBlock, ThinkingBlock, ToolUseBlock, Turn, Usage

DELTA_PIECES: Final = 3
"""Text and tool input JSON are streamed in this many deltas, as a real stream splits them
(unless the turn's ``chunk`` gives the pieces' size)."""
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def first_user_text(body: Mapping[str, Any]) -> str:
    """The first ``user`` message's text blocks joined by ``\\n``, system reminders removed."""
    for message in body.get("messages") or ():
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                texts = [content]
            else:
                texts = [
                    str(block.get("text", ""))
                    for block in content or ()
                    if isinstance(block, dict) and block.get("type") == "text"
                ]
            return _REMINDER.sub("", "\n".join(texts))
    return ""


def _texts(content: Any) -> list[str]:
    """The text of a message's or a system prompt's content: a string, or its text blocks."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [str(block.get("text", "")) for block in content
            if isinstance(block, dict) and block.get("type") == "text"]


def request_text(body: Mapping[str, Any]) -> str:
    """What a branch searches (docs/provider.md, "Branches"): the system prompt's text and
    the text blocks of every message that is not the model's (``user`` and ``system``
    roles), joined by ``\n``, system reminders kept (they carry CLAUDE.md and skills).

    Not searched: the model's own messages (the script's turns) and tool results (what a
    tool returned comes only after the first turn, so a branch decided on it at turn 0
    would be decided the other way later).
    """
    parts = _texts(body.get("system"))
    for message in body.get("messages") or ():
        if isinstance(message, dict) and message.get("role") != "assistant":
            parts.extend(_texts(message.get("content")))
    return "\n".join(parts)


def turn_index(body: Mapping[str, Any]) -> int:
    """The number of ``assistant`` messages in the request: the stateless turn key."""
    messages = body.get("messages") or ()
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def _usage(usage: Usage, *, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def _stop_reason(turn: Turn) -> str:
    return "tool_use" if any(isinstance(b, ToolUseBlock) for b in turn.blocks) else "end_turn"


def _pieces(text: str, chunk: int | None) -> list[str]:
    size = chunk or max(1, math.ceil(len(text) / DELTA_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block_events(
    index: int, block: TextBlock | ThinkingBlock | ToolUseBlock, chunk: int | None
) -> list[dict[str, Any]]:
    start: dict[str, Any]
    deltas: list[dict[str, Any]]
    if isinstance(block, TextBlock):
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block.text, chunk)]
    elif isinstance(block, ThinkingBlock):
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block.thinking, chunk)]
        deltas.append({"type": "signature_delta", "signature": block.signature})
    else:
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        partial = json.dumps(block.input, ensure_ascii=False)
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(partial, chunk)]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def stream_events(turn: Turn, *, model: str, message_id: str) -> list[dict[str, Any]]:
    """The SSE payloads of one streamed turn, in order (each has its ``type``)."""
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(turn.usage, output_tokens=1),
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(turn.blocks):
        events.extend(_block_events(index, block, turn.chunk))
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(turn), "stop_sequence": None},
            "usage": _usage(turn.usage, output_tokens=turn.usage.output_tokens),
        }
    )
    events.append({"type": "message_stop"})
    return events


def whole_message(turn: Turn, *, model: str, message_id: str) -> dict[str, Any]:
    """The non-streaming answer: the same turn as one Messages API message."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block.model_dump() for block in turn.blocks],
        "stop_reason": _stop_reason(turn),
        "stop_sequence": None,
        "usage": _usage(turn.usage, output_tokens=turn.usage.output_tokens),
    }


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The Messages API's error object: ``{"type": "error", "error": {type, message}}``;
    also the payload of a stream's ``error`` event."""
    return {"type": "error", "error": {"type": kind, "message": message}}


BEGINS_CHARS: Final = 60
"""How much of an unmatched task a miss quotes."""


def task_begins(text: str) -> str:
    """The start of ``text`` on one line (whitespace runs as one space), at most
    `BEGINS_CHARS` characters and ``...`` when cut: how a miss quotes a task."""
    one = " ".join(text.split())
    return one if len(one) <= BEGINS_CHARS else one[:BEGINS_CHARS] + "..."
