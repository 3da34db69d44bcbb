"""No session of the product gets a further read-only bind (docs/confinement.md).

`sandbox.ConfinedSpec.extra_ro_binds` exists for the census's replays (a maintainer tool the
product never imports: the import contracts). A session's or a checker's spec is built by the
product alone, from nothing a session controls; this holds that nothing of the product but
the sandbox's own plumbing names the field, so no corpus file, setting or environment can
reach it through a product code path.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIELD = "extra_ro_binds"
SANDBOX_PLUMBING = frozenset({"sandbox/_argv.py", "sandbox/confined/_spec.py",
                              "sandbox/confined/_command.py",
                              "sandbox/confined/_dirs.py"})
"""The sandbox's modules that define the field and turn it into bwrap options."""


def _naming(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        named = ((isinstance(node, ast.keyword) and node.arg == FIELD)
                 or (isinstance(node, ast.Attribute) and node.attr == FIELD)
                 or (isinstance(node, ast.Name) and node.id == FIELD)
                 or (isinstance(node, ast.Constant) and node.value == FIELD))
        if named:
            lines.append(getattr(node, "lineno", 0))
    return lines


def test_only_the_sandbox_plumbing_names_the_further_binds() -> None:
    found = {}
    for package in ("campaign", "recorder", "sandbox", "demo"):
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel not in SANDBOX_PLUMBING and (lines := _naming(path)):
                found[rel] = lines
    assert found == {}, f"{FIELD} named outside the census and the sandbox's plumbing"


def test_the_plumbing_still_names_it() -> None:
    """The scan sees the field where it is (a scan finding nothing anywhere would hold nothing)."""
    assert all(_naming(REPO / rel) for rel in SANDBOX_PLUMBING)
