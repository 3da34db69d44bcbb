"""What bench/gateway.py sends and what the scripted provider answers: one script, the bodies.

The script (`SCRIPT`) is one turn of a thinking block, a text block and a tool call, each
streamed in pieces of `CHUNK` characters: 40 server-sent events as a stream (about what a
short turn of the real API sends), or the same turn as one JSON message. The bodies are
Messages API requests as the pinned CLI sends them, in shape: a system prompt in blocks,
tools with their schemas, one user message whose text selects the script (`MATCH`).
`typical_body` is about the size of the CLI's requests in ``headwater-campaign demo`` (80
to 85 KB, 1,300 to 1,400 JSON values: this one is 86 KB, 1,322); `sized_body` pads the
user message to an exact size with words and spaces only (no ``{``, ``[`` or ``,``, which
the provider counts as JSON values against its bound).
"""

from __future__ import annotations

import json
from typing import Any, Final

KEY: Final = "sk-headwater-bench-gateway-0123456789"
"""The host's API key in the bench: the gateway puts it in, the scripted provider takes only it."""
KEY_ENV: Final = "HEADWATER_BENCH_GATEWAY_KEY"
"""The variable `Credentials` names as the key's source (never read: the key is given)."""
MATCH: Final = "Measure what the provider gateway adds"
"""The phrase of the user message that selects `SCRIPT`."""
PATH: Final = "/v1/messages?beta=true"
"""The one target the pinned harness sends (docs/gateway.md)."""
CHUNK: Final = 20
"""Characters per delta of every block of the turn."""
_WORDS: Final = ("the", "gateway", "relays", "each", "chunk", "of", "the", "stream", "as", "it",
                 "arrives", "and", "reads", "the", "usage", "on", "the", "way", "while", "the",
                 "session", "waits", "for", "its", "turn")
"""The words of every text: no ``{``, ``[`` or ``,`` in them."""

SCRIPT: Final[dict[str, Any]] = {
    "match": MATCH, "model": "claude-bench-gateway", "name": "bench-gateway",
    "after_last": "repeat_last",
    "turns": [{
        "chunk": CHUNK,
        "usage": {"input_tokens": 2400, "output_tokens": 180, "cache_read_input_tokens": 19000},
        "blocks": [
            {"type": "thinking", "thinking": " ".join(_WORDS * 2)[:200]},
            {"type": "text", "text": " ".join(reversed(_WORDS * 2))[:200]},
            {"type": "tool_use", "id": "toolu_bench_1", "name": "Read",
             "input": {"file_path": "docs/records/HW-REC-0007.md", "offset": 1, "limit": 400,
                       "note": " ".join(_WORDS)[:90]}},
        ],
    }],
}
"""The scripted provider's one script (`demo.Script`'s JSON shape)."""


def headers(key: str, *, stream: bool) -> dict[str, str]:
    """The headers the pinned CLI sends (docs/gateway.md "What the pinned harness sends"),
    ``key`` as ``x-api-key``; ``accept-encoding: identity``, which the gateway asks for."""
    return {
        "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        "accept-encoding": "identity", "anthropic-dangerous-direct-browser-access": "true",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,"
                          "context-management-2025-06-27,effort-2025-11-24",
        "user-agent": "claude-cli/2.1.332 (external, sdk-cli)", "x-app": "cli",
        "x-claude-code-session-id": "bench-gateway-session", "x-stainless-retry-count": "0",
        "x-stainless-lang": "js", "x-stainless-timeout": "600",
    }


def _tool(n: int) -> dict[str, Any]:
    words = " ".join(_WORDS[(n + i) % len(_WORDS)] for i in range(100))
    return {"name": f"Tool{n}", "description": words,
            "input_schema": {"type": "object", "additionalProperties": False,
                             "required": ["path"],
                             "properties": {f"p{i}": {"type": "string", "description": words[:90]}
                                            for i in range(6)}}}


def _body(stream: bool, text: str, tools: int, system_words: int) -> dict[str, Any]:
    system = " ".join(_WORDS[i % len(_WORDS)] for i in range(system_words))
    return {"model": "claude-bench-gateway", "max_tokens": 32000, "stream": stream,
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"},
                       {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "tools": [_tool(n) for n in range(tools)],
            "metadata": {"user_id": "bench"},
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>As you answer, mind CLAUDE.md."
                                         "</system-reminder>"},
                {"type": "text", "text": text}]}]}


def typical_body(*, stream: bool) -> bytes:
    """A request of the size the pinned CLI sends (about 80 KB), asking for a stream or not."""
    return json.dumps(_body(stream, f"{MATCH}: read the record in force.", 48, 3000)).encode()


def sized_body(size_bytes: int) -> bytes:
    """A streamed request of exactly ``size_bytes`` bytes (at least a typical one's), its user
    message padded with words and spaces."""
    bare = json.dumps(_body(True, MATCH + " ", 48, 3000)).encode()
    pad = size_bytes - len(bare)
    if pad < 0:
        raise ValueError(f"a body of {size_bytes} bytes is smaller than a typical one")
    filler = (" ".join(_WORDS) + " ") * (pad // 100 + 1)
    body = json.dumps(_body(True, MATCH + " " + filler[:pad], 48, 3000)).encode()
    assert len(body) == size_bytes, (len(body), size_bytes)
    return body
