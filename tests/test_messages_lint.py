"""User-facing messages say a rule in words; a rule code follows only as a pointer.

Every string the product can show a user (errors, notes, warnings, ``--help``,
``seal --explain``'s reasons, the states' reasons in the ledger) is a string
constant of its source. A bare code ("(RC-06)") tells a user nothing the
repository defines on the spot; the rule must be said in words, and a code may
follow only as ``docs/glossary.md: RC-NN``, which names where it is defined.
Docstrings are not shown to users and are left out; a constant that is a code
alone (``"RC-16"``) is an identifier handed to an error that renders it as a
pointer (`recorder.transcript._errors.TranscriptRefused`,
`campaign.batch._dir.BatchDirRefused`, tested there).
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("campaign", "recorder", "sandbox", "demo")
CODE = re.compile(r"RC-\d\d")
POINTER = "docs/glossary.md: "
IDENTIFIER = re.compile(r"\ARC-\d\d\Z")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants: a module's, class's or function's first statement, and
    the string statement after an assignment (an attribute's docstring)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        statements = [s for s in body if isinstance(s, ast.stmt)]
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and statements and _is_string_statement(statements[0]):
            found.add(id(statements[0].value))  # type: ignore[attr-defined]
        for before, after in itertools.pairwise(statements):
            if isinstance(before, (ast.Assign, ast.AnnAssign)) and _is_string_statement(after):
                found.add(id(after.value))  # type: ignore[attr-defined]
    return found


def _is_string_statement(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def bare_codes(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string constant of ``source`` with a code not given as a
    pointer (module docstring)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if id(node) in docs or IDENTIFIER.match(node.value):
            continue
        for hit in CODE.finditer(node.value):
            if node.value[:hit.start()].endswith(POINTER):
                continue
            found.append((node.lineno, node.value))
            break
    return found


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def test_the_scan_finds_a_bare_code_and_passes_a_pointer() -> None:
    # The rule's own examples, both ways, so the scan itself can go red.
    assert bare_codes('raise E("inside $HOME (RC-06)")') == [(1, "inside $HOME (RC-06)")]
    assert bare_codes('raise E(f"{x}: seal (RC-09)")') != []
    assert bare_codes('raise E("inside $HOME (docs/glossary.md: RC-06)")') == []
    assert bare_codes('def f():\n    """RC-06: a docstring."""\n') == []
    assert bare_codes('raise TranscriptRefused("RC-16", "detail")') == []


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_user_facing_string_ends_in_a_bare_rule_code(path: Path) -> None:
    found = bare_codes(path.read_text(encoding="utf-8"))
    assert found == [], "say the rule in words; a code may follow only as " \
                        f"'({POINTER}RC-NN)': " + "; ".join(f"line {n}: {t!r}" for n, t in found)


def test_the_errors_that_render_a_rule_code_render_it_as_a_pointer(tmp_path: Path) -> None:
    from campaign.batch._dir import BatchDirRefused
    from recorder.transcript._errors import TranscriptRefused

    assert str(TranscriptRefused("RC-16", "a key outside the closed set")).endswith(
        "(docs/glossary.md: RC-16)")
    assert str(BatchDirRefused(tmp_path, "RC-06", "inside $HOME")).endswith(
        "(docs/glossary.md: RC-06)")
