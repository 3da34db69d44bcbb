"""Every product module imports first, on its own: a package's ``__init__`` being the one way in
must not make an import cycle that only some import orders close (a module imported before its
package's ``__init__`` has bound what it needs fails with "partially initialized module")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("campaign", "recorder", "sandbox", "demo")

_EACH_FIRST = """
import importlib, sys
names = sys.argv[1:]
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m.split(".")[0] in {packages!r}]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as exc:
        failed.append(f"{{name}}: {{exc}}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def _firsts() -> list[str]:
    """What can be imported first: each package (its ``__init__`` runs before any module of
    it), and each module of a package whose ``__init__`` imports none of its modules."""
    names = []
    for package in PACKAGES:
        for init in sorted((REPO / package).rglob("__init__.py")):
            parts = init.parent.relative_to(REPO).parts
            names.append(".".join(parts))
            if "from ." in init.read_text():
                continue  # its modules are imported by it, in its order
            names += [".".join((*parts, m.stem)) for m in sorted(init.parent.glob("_*.py"))
                      if m.stem not in ("__init__", "__main__")]  # __main__ runs the CLI
    return names


def test_every_product_module_imports_first_on_its_own() -> None:
    names = _firsts()
    assert "campaign.plan" in names and "sandbox.storage" in names  # the walk saw the packages
    script = _EACH_FIRST.format(packages=PACKAGES)
    run = subprocess.run([sys.executable, "-c", script, *names], cwd=REPO, capture_output=True,
                         text=True, timeout=300, check=False)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
