"""The digest of a request's system prompt, so that a report can show one prompt per arm.

What the pinned CLI (2.1.332) sends as ``system``, read from a scripted provider's request
log of the bundled demo (56 requests, two arms, four probes): a list of three text blocks,

1. ``x-anthropic-billing-header: cc_version=2.1.332.<3 hex>; cc_entrypoint=sdk-cli;`` whose
   three hex digits change with the task (one value per probe, the same in both arms): a
   billing tag, not an instruction, and it would split an arm's digests by probe;
2. ``You are a Claude agent, built on Anthropic's Claude Agent SDK.``;
3. the instructions (about 6,700 characters), the same in every request of the batch.

The instructions name the session's config directory (its memory directory under it) and
its working directory, which a session's sandbox keeps at fixed paths (blind sessions), so
they are the same in every session; the pinned CLI run outside a sandbox, with a config
directory of its own each time, gives a digest per directory. The system prompt also differs
between an API key and a login (``ANTHROPIC_AUTH_TOKEN``), one per batch.

The date line is not in ``system`` on this pin: ``Today's date is 2026-12-03.`` ends the first
user message's reminder instead. Earlier releases put it in the system prompt's environment
section, so a line of that form is taken out of the system text too.

What is hashed: the ``text`` of every block whose ``type`` is ``text``, in order, except a
block that begins with `BILLING_PREFIX`; in each, every line that matches `DATE_LINE` is
removed; the texts, as a JSON list (compact, UTF-8, ``ensure_ascii`` off), are hashed with
SHA-256. A ``system`` that is a plain string is one such text. ``cache_control`` and other
keys of a block are not hashed (they move with caching, not with what the model reads).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Final

BILLING_PREFIX: Final = "x-anthropic-billing-header:"
"""The first block's start on the pin: a per-task billing tag, left out of the digest."""
DATE_LINE: Final = re.compile(r"^[ \t-]*Today's date(?: is|:) ?\d{4}-\d{2}-\d{2}\.?[ \t]*$\n?",
                              re.MULTILINE)
"""A line that gives the session's date (``Today's date is 2026-12-03.``, or an older
release's `` - Today's date: 2026-12-03``): removed before hashing."""


def system_digest(body: object) -> str | None:
    """``sha256:<hex>`` of ``body["system"]`` as the module docstring says, or None.

    Args:
        body: The request body as parsed JSON (anything: a body that is not an object, or
            has no ``system``, or one with no text block, has no digest).

    Returns:
        ``"sha256:"`` and 64 hex digits, or None.
    """
    if not isinstance(body, Mapping):
        return None
    system = body.get("system")
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
    if not isinstance(blocks, list):
        return None
    texts = [DATE_LINE.sub("", block["text"]) for block in blocks
             if isinstance(block, Mapping) and block.get("type") == "text"
             and isinstance(block.get("text"), str)
             and not block["text"].startswith(BILLING_PREFIX)]
    if not texts:
        return None
    encoded = json.dumps(texts, ensure_ascii=False, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(encoded).hexdigest()
