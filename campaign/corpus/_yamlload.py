"""YAML 1.2 safe loading of a corpus's own YAML (front matter, probe.yml): the meaning, fast.

**The meaning** of a text is what ruamel.yaml's pure-Python safe loader
makes of it, YAML 1.2 (`pure_load`): ``title: yes`` is the string ``"yes"``,
``n: 0o17`` is 15, ``0052`` is 52 (1.2's core integers, no 1.1 octal),
``%YAML 1.1`` switches a document to 1.1. This is the reference.

**The fast path** (`load_yaml`) is ruamel.yaml's own C parser (the
``ruamel.yaml.clib`` extension, libyaml inside) feeding ruamel's own
`SafeConstructor` and 1.2 `Resolver`: only scanning and parsing move to C,
so the code that decides what a scalar means is the reference's own. libyaml
is a YAML 1.1 parser, so it is trusted only where it cannot differ:

* a text `fast_path_admits` - none of: a tab; a tag or block-scalar header
  (``!``, ``|``, ``>`` where a token starts); a line starting with ``%``
  (directives: libyaml would ignore ``%YAML 1.1``), ``---`` or ``...``
  (document markers); a character outside the printable set, or one of
  YAML 1.1's extra line breaks (NEL, LS, PS) or a BOM. Each class was either
  seen to differ in the differential test (tabs, ``!``, ``|#``) or is one
  where the two YAML versions' grammars differ;
* and the C path raised nothing: any error hands the text to the reference,
  so an error (and its line and column) is always the reference's.

Anything else goes to the reference, as does every text when the C extension
is not installed. tests/campaign/test_yamlload.py runs both loaders over many
generated texts (hypothesis) and asserts that every text the fast path
accepts means the same to both, type for type.

Why this library: ruamel.yaml.clib is the C extension of the YAML library
the project already uses, by the same author, shipped as wheels; with it the
resolver and the constructor stay ruamel's. PyYAML's CSafeLoader would have
needed YAML 1.2 resolvers *and* constructors of our own (its int, float and
bool constructors are 1.1's), a second definition of the meaning to keep.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Final

import ruamel.yaml.main
from ruamel.yaml import YAML
from ruamel.yaml.compat import _DEFAULT_YAML_VERSION
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.resolver import Resolver

_NOT_ADMITTED: Final = re.compile(
    r"(?:^|[\s\[{,])[|>!]"  # a tag or a block scalar header where a token may start
    r"|^(?:%|---|\.\.\.)"  # a directive (%YAML 1.1) or a document marker
    r"|[\u2028\u2029]"  # YAML 1.1's line and paragraph separators
    # Anything but LF, CR, printable ASCII and printable non-ASCII: tabs (libyaml takes some
    # the pure scanner refuses), other controls, DEL, C1 (NEL among them), surrogates, the BOM.
    r"|[^\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]",
    re.MULTILINE,
)
"""What sends a text to the reference loader (see the module docstring)."""
CParser: Final[Any] = getattr(ruamel.yaml.main, "CParser", None)
"""ruamel.yaml's C parser class, the one its own ``YAML(typ="safe")`` uses; None (ruamel's own
value) when ruamel.yaml.clib is not installed."""
SNIPPET_CHARS: Final = 120
"""The most of the offending line a YAML error message quotes."""


def pure_load(text: str) -> Any:
    """The reference: ruamel.yaml's pure-Python safe loader (YAML 1.2) over ``text``.

    Raises:
        YAMLError: the text is not YAML, or not one document, or holds a tag
            the safe constructor does not know.
    """
    return YAML(typ="safe", pure=True).load(text)


if CParser is not None:

    class _CLoader(CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """ruamel's C parser and composer under its SafeConstructor and 1.2 Resolver."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            self._parser = self._composer = self
            SafeConstructor.__init__(self, loader=self)
            self.allow_duplicate_keys = False  # what YAML(typ="safe") sets
            Resolver.__init__(self, loadumper=self)

        @property
        def processing_version(self) -> Any:
            # The constructors ask (sexagesimals, 1.1 float warnings). The reference answers 1.2
            # for every text the fast path admits (no %YAML directive), so this one does too.
            return _DEFAULT_YAML_VERSION


def fast_path_available() -> bool:
    """True when ruamel.yaml.clib's C parser is importable (else every text takes `pure_load`)."""
    return CParser is not None


def fast_path_admits(text: str) -> bool:
    """True when ``text`` holds nothing the C parser might read otherwise (module docstring)."""
    return _NOT_ADMITTED.search(text) is None


def c_load(text: str) -> Any:
    """``text`` through the C parser alone, no fallback (for the differential test).

    Raises:
        RuntimeError: the C extension is not installed.
        YAMLError: (or another error) the C path refused the text.
    """
    if CParser is None:
        raise RuntimeError("ruamel.yaml.clib is not installed")
    loader = _CLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml(text: str) -> Any:
    """Safe-load ``text`` as YAML 1.2; the value (or error) is always `pure_load`'s.

    Takes the C path when `fast_path_admits` the text and the extension is
    installed; the reference decides every other text, and every text the C
    path refuses.

    Raises:
        YAMLError: as `pure_load` (the reference's error, with its marks).
    """
    if CParser is not None and fast_path_admits(text):
        # A refusal on the C path proves nothing: the reference decides, errors and all.
        with contextlib.suppress(Exception):
            return c_load(text)
    return pure_load(text)


def describe_yaml_error(exc: YAMLError, text: str, *, first_line: int = 1) -> str:
    """A YAML error in words, on a few lines: where (line, column), what, and the line itself.

    Args:
        exc: the error `pure_load` raised over ``text``.
        text: the YAML text, to quote the offending line.
        first_line: the file's line number of the first line of ``text`` (2 for front
            matter, which starts after the opening ``---``).

    Returns:
        e.g. ``"line 3, column 8: found unexpected end of stream\\n  while scanning a
        quoted scalar (from line 2, column 8)\\n    title: \\"unclosed\\n           ^"``.
    """
    if isinstance(exc, MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        lines = [f"line {mark.line + first_line}, column {mark.column + 1}: "
                 f"{exc.problem or 'invalid YAML'}"]
        if exc.context:
            where = exc.context_mark
            lines.append(f"  {exc.context}" + (
                f" (from line {where.line + first_line}, column {where.column + 1})"
                if where is not None else ""))
        shown = _snippet(text, mark.line, mark.column)
        if not shown and exc.context_mark is not None:  # the end of the text: show the opening
            shown = _snippet(text, exc.context_mark.line, exc.context_mark.column)
        return "\n".join(lines + shown)
    if isinstance(exc, ReaderError) and isinstance(exc.position, int):
        line = text.count("\n", 0, exc.position)
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1)
        return "\n".join([f"line {line + first_line}, column {column + 1}: character "
                          f"U+{exc.character:04X} is not allowed in YAML ({exc.reason})",
                          *_snippet(text, line, column)])
    return " ".join(str(exc).split())


def _snippet(text: str, line: int, column: int) -> list[str]:
    """The offending line (cut to `SNIPPET_CHARS`) and a caret under the column."""
    rows = text.split("\n")
    row = rows[line].rstrip("\r") if 0 <= line < len(rows) else ""
    if not row.strip():
        return []
    start = max(0, column - SNIPPET_CHARS // 2) if len(row) > SNIPPET_CHARS else 0
    shown = row[start : start + SNIPPET_CHARS].replace("\t", " ")
    return [f"    {shown}", "    " + " " * (column - start) + "^"]
