"""The batch layer never imports the scripted provider's package: the command line wires it.

docs/internals.md: ``demo`` is the loopback test double the ``demo`` command and the tests
use; `campaign.batch._open.open_batch` is handed a provider start
(`campaign.cli._provider.start_provider`), so nothing under ``campaign/batch``,
``campaign/supervisor``, ``campaign/report``, ``recorder`` or ``sandbox`` depends on it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NO_DEMO = ("campaign/batch", "campaign/supervisor", "campaign/report", "recorder", "sandbox")


def imports_of(source: str) -> set[str]:
    """Every module ``source`` imports, at any depth (inside functions and under
    ``TYPE_CHECKING`` too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_the_scan_sees_an_import_inside_a_function() -> None:
    assert "demo" in imports_of("def f():\n    from demo import ScriptedProvider\n")


@pytest.mark.parametrize("path", sorted(p for d in NO_DEMO for p in (REPO / d).rglob("*.py")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_no_layer_below_the_command_line_imports_the_test_double(path: Path) -> None:
    found = {m for m in imports_of(path.read_text()) if m == "demo" or m.startswith("demo.")}
    assert found == set(), f"{path.relative_to(REPO)} imports {sorted(found)}"
