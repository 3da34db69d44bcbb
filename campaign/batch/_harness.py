"""The harness's version as config.yaml records it: the first line of ``--version``, bounded.

The version is measured inside the sandbox by the preflight (the runner never
runs a harness outside it); this bounds what is kept of it.
"""

from __future__ import annotations

from typing import Final

HARNESS_VERSION_CHARS: Final = 200
"""The most of ``--version``'s first line config.yaml keeps (2.1.197 prints 21 characters)."""


def bounded_version(printed: str) -> str:
    """The first line of what ``--version`` printed, at most `HARNESS_VERSION_CHARS`, marked.

    A harness that prints more (a stand-in that ignores its arguments printed
    a 70 MB line here) must not bloat config.yaml, whose pure-Python YAML
    emitter then took 90 s for it: the rest is cut and ``[cut]`` says so.
    """
    lines = printed.strip().splitlines()
    if not lines:
        return "unknown (nothing printed)"
    first = lines[0].strip()
    cut = len(first) > HARNESS_VERSION_CHARS or len(lines) > 1
    return first[:HARNESS_VERSION_CHARS] + (" [cut]" if cut else "")
