"""Strings for JSON a strict reader takes: a name that is not UTF-8, written as readable text.

A file name is bytes; Python hands one that is not UTF-8 over as a ``str`` with a
lone surrogate per bad byte (``surrogateescape``: ``b"\\xff"`` is ``"\\udcff"``), and a
session's JSON may itself escape a lone surrogate (``"\\udfff"``). ``json.dumps``
writes such a string as ``"\\udcff"``, which strict readers refuse or mangle (Rust's
serde_json refuses it, ``jq`` replaces it, JavaScript cannot encode it as UTF-8). So
every string the runner puts in JSON (the ledger, ``status --json``, ``report --json``)
goes through `json_text` first (docs/batch.md, "Names that are not UTF-8").

The rule, one place: each lone surrogate U+DC80..U+DCFF (a byte 0x80..0xFF that
``surrogateescape`` kept) is written as the four characters ``\\xHH``, the byte in
lowercase hex, and any other lone surrogate as the six characters ``\\uHHHH``; nothing
else changes. So ``b"\\xff\\xfe.txt"`` reads ``\\xff\\xfe.txt`` (in JSON text
``"\\\\xff\\\\xfe.txt"``). The escape is for reading and is not reversed: a name that
holds the text ``\\xff`` reads the same; the kept stream and the digests (taken of the
original) tell them apart.
"""

from __future__ import annotations

import re
from typing import Any, Final

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def json_text(value: str) -> str:
    """``value`` with each lone surrogate written as its escape (module docstring).

    Args:
        value: Any string (a path, a reason, a session's value).

    Returns:
        A string UTF-8 encodes strictly; ``value`` itself when it holds no lone surrogate.
        E.g. ``"\\udcff\\udcfe.txt"`` gives ``\\xff\\xfe.txt``, ``"a\\udfff"`` gives ``a\\udfff``.
    """
    if value.isascii():
        return value
    return _LONE_SURROGATE.sub(_escape, value)


def json_safe(data: Any) -> Any:
    """``data`` (dicts, lists, tuples, strings, other scalars) with `json_text` applied to
    every string in it, keys included; other values as they are (a new container, never
    the one given)."""
    if isinstance(data, str):
        return json_text(data)
    if isinstance(data, dict):
        return {json_safe(k): json_safe(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [json_safe(v) for v in data]
    return data
