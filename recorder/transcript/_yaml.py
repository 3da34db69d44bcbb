"""The YAML dialect of the two blocks: ruamel only, YAML 1.2, pure-Python loader and dumper.

Every string value is written double-quoted, so ``yes``, ``0052`` and
``null`` stay strings for any YAML reader (RC-13: a declared answer is
written "as a quoted YAML string"); no value is folded across lines, so no
line inside a block can look like a fence (RC-16). The loader guesses no
types beyond YAML 1.2's. This is the only module that imports ruamel; the C
loader is YAML 1.1 and is not used.
"""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.representer import SafeRepresenter

from ._errors import TranscriptRefused


class _Quoted(str):
    """A string value: always written double-quoted, so ``yes``/``0052``/``null`` stay strings."""


class _Representer(SafeRepresenter):
    """Safe representer of our own: insertion order, quoted values (the global one is untouched)."""


_Representer.add_representer(
    _Quoted, lambda r, s: r.represent_scalar("tag:yaml.org,2002:str", str(s), style='"')
)
_Representer.add_representer(
    dict, lambda r, d: r.represent_mapping("tag:yaml.org,2002:map", list(d.items()))
)


def _dumper() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 2**31 - 1  # never fold: one value, one line; no line can look like a fence
    return yaml


def _quote_values(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _quote_values(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_quote_values(v) for v in data]
    if isinstance(data, str):
        return _Quoted(data)
    return data


def yaml_text(data: Any) -> str:
    """Block-style YAML of ``data`` (dicts, lists, str, int, None), every string double-quoted."""
    buf = io.StringIO()
    _dumper().dump(_quote_values(data), buf)
    return buf.getvalue()


def yaml_load(text: str, where: str) -> Any:
    """Load one block's ``text``; ``where`` names the section in a refusal.

    Raises:
        TranscriptRefused: the text is not YAML (RC-16), naming ``where``.
    """
    try:
        return YAML(typ="safe", pure=True).load(text)
    except (YAMLError, ValueError, TypeError, RecursionError) as exc:
        raise TranscriptRefused(
            "RC-16", f"the yaml block under {where} does not load: {exc}"
        ) from exc
